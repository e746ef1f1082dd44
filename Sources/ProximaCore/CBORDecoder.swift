/// A CBOR decoder (RFC 8949 §3) that is total on hostile input.
///
/// Every length and count is checked against the bytes that remain before anything is allocated (a byte string
/// claims at most what follows it; an array of n items needs at least n more bytes), nesting and the total number
/// of items are bounded, and every failure is a ``CBORError`` naming the offset. Indefinite-length strings,
/// arrays and maps are accepted and decoded into their definite equivalents; duplicate map keys, invalid UTF-8,
/// reserved additional information and stray break codes are rejected (RFC 8949 §5.3.1 "valid" items only).
public struct CBORDecoder {
    /// Bounds the decoder keeps to.
    public struct Limits: Sendable, Hashable {
        /// The deepest nesting of arrays, maps and tags.
        public var maximumDepth: Int
        /// The largest number of data items in one decode (every nested item counts).
        public var maximumItemCount: Int
        /// The largest input accepted.
        public var maximumInputSize: Int

        public init(maximumDepth: Int = 64, maximumItemCount: Int = 1 << 20, maximumInputSize: Int = 16 << 20) {
            self.maximumDepth = maximumDepth
            self.maximumItemCount = maximumItemCount
            self.maximumInputSize = maximumInputSize
        }

        /// 64 levels, 2²⁰ items, 16 MiB: far above any mdoc (a portrait is tens of kilobytes).
        public static let `default` = Limits()
    }

    /// The input; a slice of a larger buffer is read in place (an item found inside a message is decoded without
    /// copying it out). Offsets count from its first byte.
    private let bytes: ArraySlice<UInt8>
    /// `bytes.startIndex`: offset `o` is `bytes[startIndex + o]`.
    private let startIndex: Int
    /// `bytes.count`.
    private let size: Int
    private let limits: Limits
    /// The offset of the next byte to read.
    public private(set) var offset: Int
    private var itemCount = 0

    /// A decoder over `bytes`, starting at offset 0.
    public init(_ bytes: [UInt8], limits: Limits = .default) {
        self.init(bytes[...], limits: limits)
    }

    /// A decoder over `bytes` (read in place), starting at offset 0, its first byte.
    public init(_ bytes: ArraySlice<UInt8>, limits: Limits = .default) {
        self.bytes = bytes
        self.startIndex = bytes.startIndex
        self.size = bytes.count
        self.limits = limits
        self.offset = 0
    }

    /// Decodes exactly one data item filling `bytes`.
    ///
    /// - Throws: ``CBORError`` naming the offset: `.trailingBytes` when bytes follow the item, `.tooLong` when the
    ///   input exceeds `limits.maximumInputSize`, or any error of ``decodeNext()``.
    public static func decode(_ bytes: [UInt8], limits: Limits = .default) throws -> CBORValue {
        try decode(bytes[...], limits: limits)
    }

    /// Decodes exactly one data item filling `bytes`, read in place; offsets count from its first byte.
    ///
    /// - Throws: As ``decode(_:limits:)``.
    public static func decode(_ bytes: ArraySlice<UInt8>, limits: Limits = .default) throws -> CBORValue {
        var decoder = CBORDecoder(bytes, limits: limits)
        let value = try decoder.decodeNext()
        try decoder.checkAtEnd()
        return value
    }

    /// Decodes the item embedded in the single item `bytes` holds, which must be `#6.24(bstr)` (RFC 8949
    /// §3.4.5.1): the same outcome as ``decode(_:limits:)`` followed by ``CBORValue/decodeEmbedded(limits:)``,
    /// errors included, but a definite byte string's content is decoded where it lies instead of being copied
    /// into a value first.
    ///
    /// - Throws: ``CBORError``: any error of decoding `bytes`; `.unexpectedType` at 0 when it is not
    ///   `#6.24(bstr)`; any error of decoding the embedded bytes (offsets count from their first byte).
    public static func decodeEmbedded(_ bytes: ArraySlice<UInt8>, limits: Limits = .default) throws -> CBORValue {
        // Stepping over the item makes the checks decoding it would, in the same order, with the same errors.
        var outer = CBORDecoder(bytes, limits: limits)
        _ = try outer.nextEncodedItem()
        try outer.checkAtEnd()
        var reader = CBORDecoder(bytes, limits: limits)
        let tag = try reader.head()
        guard tag.major == 6, tag.argument == CBORValue.embeddedCBORTag else {
            throw CBORError(.unexpectedType, at: 0, "expected #6.24(bstr) (embedded CBOR)")
        }
        let content = try reader.head()
        guard content.major == 2 else {
            throw CBORError(.unexpectedType, at: 0, "expected #6.24(bstr) (embedded CBOR)")
        }
        if content.indefinite { return try decode(try reader.string(content, major: 2), limits: limits) }
        let range = try reader.definiteRange(content)
        return try decode(reader.slice(range), limits: limits)
    }

    /// The input bytes at `range` (offsets).
    private func slice(_ range: Range<Int>) -> ArraySlice<UInt8> {
        bytes[(startIndex + range.lowerBound)..<(startIndex + range.upperBound)]
    }

    private func checkAtEnd() throws {
        guard isAtEnd else { throw CBORError(.trailingBytes, at: offset, "\(size - offset) bytes follow the item") }
    }

    /// Whether every byte has been read.
    public var isAtEnd: Bool { offset >= size }

    /// Decodes the next data item.
    ///
    /// - Throws: ``CBORError``: `.truncated`, `.reservedEncoding`, `.invalidIndefinite`, `.invalidUTF8`,
    ///   `.duplicateMapKey`, `.tooDeep`, `.tooLong`, `.tooManyItems`.
    public mutating func decodeNext() throws -> CBORValue {
        try checkInputSize()
        return try item(depth: 0)
    }

    private func checkInputSize() throws {
        guard size <= limits.maximumInputSize else {
            throw CBORError(.tooLong, at: 0, "input of \(size) bytes exceeds \(limits.maximumInputSize)")
        }
    }

    /// Skips the next data item and returns its encoded bytes exactly as they appear in the input.
    ///
    /// The item is checked as ``decodeNext()`` checks it.
    /// - Throws: As ``decodeNext()``.
    public mutating func nextEncodedItem() throws -> ArraySlice<UInt8> {
        try checkInputSize()
        let first = offset
        try skip(depth: 0)
        return slice(first..<offset)
    }

    /// A step on the way to a nested item: a map key or an array index.
    public enum PathComponent: Hashable, Sendable {
        case key(CBORValue)
        case index(Int)
    }

    /// The encoded bytes, exactly as received, of the item at `path` inside the single item `bytes` holds.
    ///
    /// Digests and MACs over items a peer encoded (ISO/IEC 18013-5 `IssuerSignedItemBytes`) must cover the peer's
    /// bytes, which a re-encoding would reproduce only if the peer encoded deterministically.
    /// - Returns: The bytes, or `nil` when a step names a key or index the item does not have.
    /// - Throws: ``CBORError`` when the bytes do not decode.
    public static func encodedItem(
        in bytes: [UInt8],
        at path: [PathComponent],
        limits: Limits = .default
    ) throws -> ArraySlice<UInt8>? {
        try encodedItem(in: bytes[...], at: path, limits: limits)
    }

    /// ``encodedItem(in:at:limits:)`` over bytes read in place: the result is a slice of `bytes`, and error
    /// offsets count from its first byte.
    public static func encodedItem(
        in bytes: ArraySlice<UInt8>,
        at path: [PathComponent],
        limits: Limits = .default
    ) throws -> ArraySlice<UInt8>? {
        var decoder = CBORDecoder(bytes, limits: limits)
        for step in path {
            var head = try decoder.head()
            // Tags are transparent to paths: a step applies to the tagged content.
            while head.major == 6 { head = try decoder.head() }
            var found = false
            var index = 0
            switch (head.major, step) {
            case (4, .index(let wanted)):
                while try decoder.hasMore(indefinite: head.indefinite, count: &index, of: head.argument) {
                    if index - 1 == wanted {
                        found = true
                        break
                    }
                    _ = try decoder.nextEncodedItem()
                }
            case (5, .key(let wanted)):
                while try decoder.hasMore(indefinite: head.indefinite, count: &index, of: head.argument) {
                    if try decoder.decodeNext() == wanted {
                        found = true
                        break
                    }
                    _ = try decoder.nextEncodedItem()
                }
            default:
                return nil
            }
            guard found else { return nil }
        }
        return try decoder.nextEncodedItem()
    }

    /// The encoded bytes, exactly as received, of each element of the array `bytes` holds (tags around the array
    /// are skipped); `nil` when it holds no array.
    /// - Throws: ``CBORError`` when the bytes do not decode.
    public static func encodedElements(
        ofArray bytes: [UInt8],
        limits: Limits = .default
    ) throws -> [ArraySlice<UInt8>]? {
        try encodedElements(ofArray: bytes[...], limits: limits)
    }

    /// ``encodedElements(ofArray:limits:)`` over bytes read in place: the results are slices of `bytes`, and
    /// error offsets count from its first byte.
    public static func encodedElements(
        ofArray bytes: ArraySlice<UInt8>,
        limits: Limits = .default
    ) throws -> [ArraySlice<UInt8>]? {
        var decoder = CBORDecoder(bytes, limits: limits)
        var head = try decoder.head()
        while head.major == 6 { head = try decoder.head() }
        guard head.major == 4 else { return nil }
        var elements: [ArraySlice<UInt8>] = []
        var index = 0
        while try decoder.hasMore(indefinite: head.indefinite, count: &index, of: head.argument) {
            elements.append(try decoder.nextEncodedItem())
        }
        return elements
    }

    /// Advances through a definite or indefinite container: `true` while another element follows (counting it).
    private mutating func hasMore(indefinite: Bool, count: inout Int, of total: UInt64) throws -> Bool {
        if indefinite {
            guard offset < size else { throw CBORError(.truncated, at: offset, "no break code") }
            if bytes[startIndex + offset] == 0xFF {
                offset += 1
                return false
            }
        } else if UInt64(count) >= total {
            return false
        }
        count += 1
        return true
    }

    // MARK: - Items

    private struct Head {
        var major: UInt8
        var info: UInt8
        var argument: UInt64
        var indefinite: Bool
        var offset: Int
    }

    private mutating func head() throws -> Head {
        let start = offset
        guard offset < size else { throw CBORError(.truncated, at: offset, "expected a data item") }
        let initial = bytes[startIndex + offset]
        offset += 1
        let major = initial >> 5
        let info = initial & 0x1F
        var argument: UInt64
        switch info {
        case 0..<24: argument = UInt64(info)
        case 24...27:
            let width = 1 << Int(info - 24)
            guard size - offset >= width else {
                throw CBORError(.truncated, at: start, "head needs \(width) argument bytes")
            }
            argument = 0
            for _ in 0..<width {
                argument = argument << 8 | UInt64(bytes[startIndex + offset])
                offset += 1
            }
        case 31:
            guard major >= 2, major != 6 else {
                throw CBORError(.invalidIndefinite, at: start, "major type \(major) has no indefinite length")
            }
            return Head(major: major, info: info, argument: 0, indefinite: true, offset: start)
        default:
            throw CBORError(.reservedEncoding, at: start, "additional information \(info) is reserved")
        }
        return Head(major: major, info: info, argument: argument, indefinite: false, offset: start)
    }

    private mutating func count(_ itemOffset: Int) throws {
        itemCount += 1
        guard itemCount <= limits.maximumItemCount else {
            throw CBORError(.tooManyItems, at: itemOffset, "more than \(limits.maximumItemCount) data items")
        }
    }

    private mutating func item(depth: Int) throws -> CBORValue {
        guard depth <= limits.maximumDepth else {
            throw CBORError(.tooDeep, at: offset, "nesting deeper than \(limits.maximumDepth)")
        }
        let head = try head()
        try count(head.offset)
        switch head.major {
        case 0: return .unsigned(head.argument)
        case 1: return .negative(head.argument)
        case 2: return .byteString(try string(head, major: 2))
        case 3: return .textString(try text(head))
        case 4:
            var items: [CBORValue] = []
            if head.indefinite {
                while try !takeBreak() { items.append(try item(depth: depth + 1)) }
            } else {
                let count = try boundedCount(head, perElement: 1)
                items.reserveCapacity(count)
                for _ in 0..<count { items.append(try item(depth: depth + 1)) }
            }
            return .array(items)
        case 5:
            var entries: [CBORMapEntry] = []
            var keys = MapKeys()
            func add(_ keyOffset: Int, _ key: CBORValue, _ value: CBORValue) throws {
                try keys.insert(key, at: keyOffset, after: entries)
                entries.append(CBORMapEntry(key, value))
            }
            if head.indefinite {
                while try !takeBreak() {
                    let keyOffset = offset
                    let key = try item(depth: depth + 1)
                    try add(keyOffset, key, try item(depth: depth + 1))
                }
            } else {
                let count = try boundedCount(head, perElement: 2)
                entries.reserveCapacity(count)
                for _ in 0..<count {
                    let keyOffset = offset
                    let key = try item(depth: depth + 1)
                    try add(keyOffset, key, try item(depth: depth + 1))
                }
            }
            return .map(entries)
        case 6:
            return .tagged(head.argument, try item(depth: depth + 1))
        default:
            return try simpleOrFloat(head)
        }
    }

    /// Steps over the next item with every check ``item(depth:)`` makes (limits, UTF-8, duplicate map keys,
    /// reserved encodings, break codes), in the same order and with the same errors, but builds only map keys:
    /// callers that want an item's bytes as received (digests, MACs) need its end, not its value.
    private mutating func skip(depth: Int) throws {
        guard depth <= limits.maximumDepth else {
            throw CBORError(.tooDeep, at: offset, "nesting deeper than \(limits.maximumDepth)")
        }
        let head = try head()
        try count(head.offset)
        switch head.major {
        case 0, 1: return
        case 2: try skipString(head, major: 2)
        case 3: try skipString(head, major: 3)
        case 4:
            if head.indefinite {
                while try !takeBreak() { try skip(depth: depth + 1) }
            } else {
                for _ in 0..<(try boundedCount(head, perElement: 1)) { try skip(depth: depth + 1) }
            }
        case 5:
            // Keys are decoded (they are compared for duplicates, as `item` does); values are skipped.
            var keys = MapKeys()
            var earlier: [CBORMapEntry] = []  // keys only: the values are not built
            func entry() throws {
                let keyOffset = offset
                let key = try item(depth: depth + 1)
                try skip(depth: depth + 1)
                try keys.insert(key, at: keyOffset, after: earlier)
                earlier.append(CBORMapEntry(key, .null))
            }
            if head.indefinite {
                while try !takeBreak() { try entry() }
            } else {
                for _ in 0..<(try boundedCount(head, perElement: 2)) { try entry() }
            }
        case 6: try skip(depth: depth + 1)
        default: _ = try simpleOrFloat(head)
        }
    }

    /// Steps over a string as ``string(_:major:)`` reads it; a text string's bytes are checked as UTF-8 in place.
    private mutating func skipString(_ head: Head, major: UInt8) throws {
        let valid: Bool
        if head.indefinite {
            let joined = try string(head, major: major)
            valid = major != 3 || String(validating: joined, as: UTF8.self) != nil
        } else {
            let range = try definiteRange(head)
            valid = major != 3 || Self.isValidUTF8(slice(range))
        }
        guard valid else { throw CBORError(.invalidUTF8, at: head.offset, "text string is not valid UTF-8") }
    }

    /// A text string's value: a definite string's bytes are checked and read where they lie, an indefinite one's
    /// once joined. `String(validating:as:)` is not used: it is generic and looks up its metadata at run time on
    /// every call, which cost more than the rest of decoding a short string.
    private mutating func text(_ head: Head) throws -> String {
        let raw: ArraySlice<UInt8>
        if head.indefinite {
            raw = try string(head, major: 3)[...]
        } else {
            let range = try definiteRange(head)
            raw = slice(range)
        }
        guard Self.isValidUTF8(raw) else {
            throw CBORError(.invalidUTF8, at: head.offset, "text string is not valid UTF-8")
        }
        return String(decoding: raw, as: UTF8.self)
    }

    /// Whether `bytes` are well-formed UTF-8 (the check `String(validating:as:)` makes), without building a string.
    static func isValidUTF8(_ bytes: ArraySlice<UInt8>) -> Bool {
        if bytes.allSatisfy({ $0 < 0x80 }) { return true }  // ASCII: nearly every key and value in an mdoc
        var parser = Unicode.UTF8.ForwardParser()
        var iterator = bytes.makeIterator()
        while true {
            switch parser.parseScalar(from: &iterator) {
            case .valid: continue
            case .emptyInput: return true
            case .error: return false
            }
        }
    }

    /// Consumes a break code if one is next; throws at the end of input.
    private mutating func takeBreak() throws -> Bool {
        guard offset < size else {
            throw CBORError(.truncated, at: offset, "indefinite-length item has no break code")
        }
        guard bytes[startIndex + offset] == 0xFF else { return false }
        offset += 1
        return true
    }

    /// The element count of a definite array or map, refused when the remaining bytes cannot hold it.
    private func boundedCount(_ head: Head, perElement: UInt64) throws -> Int {
        let remaining = UInt64(size - offset)
        guard head.argument <= remaining / perElement else {
            throw CBORError(
                .tooLong,
                at: head.offset,
                "count \(head.argument) needs more than the \(remaining) bytes that remain"
            )
        }
        guard head.argument <= UInt64(limits.maximumItemCount) else {
            throw CBORError(.tooManyItems, at: head.offset, "count \(head.argument) exceeds the item limit")
        }
        return Int(head.argument)
    }

    /// The bytes of a definite string or the concatenated chunks of an indefinite one.
    private mutating func string(_ head: Head, major: UInt8) throws -> [UInt8] {
        if !head.indefinite { return try definiteBytes(head) }
        var out: [UInt8] = []
        while try !takeBreak() {
            let chunk = try self.head()
            guard chunk.major == major, !chunk.indefinite else {
                throw CBORError(
                    .invalidIndefinite,
                    at: chunk.offset,
                    "chunk of an indefinite-length string must be a definite string of the same type"
                )
            }
            try count(chunk.offset)
            out += try definiteBytes(chunk)
        }
        return out
    }

    private mutating func definiteBytes(_ head: Head) throws -> [UInt8] {
        let range = try definiteRange(head)  // first: `slice(try definiteRange(head))` would copy the decoder
        return Array(slice(range))
    }

    /// The bytes of a definite string's content, refused when fewer remain; the offset moves past them.
    private mutating func definiteRange(_ head: Head) throws -> Range<Int> {
        let remaining = size - offset
        guard head.argument <= UInt64(remaining) else {
            throw CBORError(
                .tooLong,
                at: head.offset,
                "string of \(head.argument) bytes but only \(remaining) remain"
            )
        }
        let range = offset..<(offset + Int(head.argument))
        offset = range.upperBound
        return range
    }

    private mutating func simpleOrFloat(_ head: Head) throws -> CBORValue {
        if head.indefinite {
            throw CBORError(.invalidIndefinite, at: head.offset, "break code outside an indefinite-length item")
        }
        switch head.info {
        case 0..<20: return .simple(head.info)
        case 20: return .boolean(false)
        case 21: return .boolean(true)
        case 22: return .null
        case 23: return .undefined
        case 24:
            guard head.argument >= 32 else {
                throw CBORError(.reservedEncoding, at: head.offset, "two-byte simple value \(head.argument) below 32")
            }
            return .simple(UInt8(truncatingIfNeeded: head.argument))
        case 25: return .float(Double(Float16Bits.float(from: UInt16(truncatingIfNeeded: head.argument))))
        case 26: return .float(Double(Float(bitPattern: UInt32(truncatingIfNeeded: head.argument))))
        default: return .float(Double(bitPattern: head.argument))
        }
    }
}

/// IEEE 754 binary16 conversions in plain arithmetic (`Float16` is unavailable on some Linux targets).
enum Float16Bits {
    /// The value of a half-precision bit pattern (RFC 8949 Appendix D).
    static func float(from half: UInt16) -> Float {
        let exponent = Int((half >> 10) & 0x1F)
        let mantissa = Float(half & 0x3FF)
        let magnitude: Float
        if exponent == 0 {
            magnitude = mantissa * 0x1p-24
        } else if exponent == 31 {
            magnitude = mantissa == 0 ? .infinity : .nan
        } else {
            magnitude = (1 + mantissa / 1024) * Float(sign: .plus, exponent: exponent - 15, significand: 1)
        }
        return half & 0x8000 != 0 ? -magnitude : magnitude
    }

    /// The half-precision bit pattern of `value` when it converts exactly (NaN maps to the canonical `7E00`).
    static func exactBits(_ value: Double) -> UInt16? {
        if value.isNaN { return 0x7E00 }
        let sign: UInt16 = value.sign == .minus ? 0x8000 : 0
        let magnitude = abs(value)
        if magnitude == 0 { return sign }
        if magnitude.isInfinite { return sign | 0x7C00 }
        // Subnormal halves: multiples of 2^-24 below 2^-14.
        if magnitude < 0x1p-14 {
            let scaled = magnitude * 0x1p24
            guard scaled == scaled.rounded(.towardZero), scaled < 1024 else { return nil }
            return sign | UInt16(scaled)
        }
        guard magnitude <= 65504 else { return nil }
        let exponent = Int(magnitude.exponent)
        let significand = magnitude.significand  // in [1, 2)
        let fraction = (significand - 1) * 1024
        guard fraction == fraction.rounded(.towardZero) else { return nil }
        return sign | UInt16(exponent + 15) << 10 | UInt16(fraction)
    }
}

/// The duplicate-key check of one map being decoded. Small maps (every mdoc map) are checked by a scan of the keys
/// already read, which the caller holds anyway (decoding: its entries); a hash set only pays off for large ones,
/// and costs an allocation per map.
private struct MapKeys {
    private var set = Set<CBORValue>()

    /// Refuses `key` when one of `earlier` (the entries read before it, in order) has it.
    mutating func insert(_ key: CBORValue, at keyOffset: Int, after earlier: [CBORMapEntry]) throws {
        let duplicate: Bool
        if earlier.count < 16 {
            duplicate = earlier.contains { $0.key == key }
        } else {
            if set.isEmpty { set = Set(earlier.map { $0.key }) }
            duplicate = !set.insert(key).inserted
        }
        guard !duplicate else { throw CBORError(.duplicateMapKey, at: keyOffset, "map key \(key) appears twice") }
    }
}
