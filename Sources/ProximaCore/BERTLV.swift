/// A BER-TLV tag (ISO/IEC 7816-4:2005 §5.2.2.1, EMV Book 3 Annex B1) of one to four bytes, held big-endian in a
/// `UInt32`: `0x6F`, `0x9F02`, `0xDF811A`.
///
/// The first tag byte gives the class (b8–b7) and whether the object is constructed (b6). When its low five bits
/// are all set (`1F`), further bytes follow; each further byte with b8 set is followed by another. A first byte
/// of `00` or `FF` is never a tag: both are padding between objects (EMV Book 3 Annex B, ISO/IEC 7816-4:2005
/// §5.2.2), which is also why the `UInt32` form is unambiguous.
public struct TLVTag: RawRepresentable, Hashable, Comparable, Sendable, CustomStringConvertible,
    ExpressibleByIntegerLiteral
{
    /// The tag bytes, big-endian, without leading zero bytes.
    public let rawValue: UInt32

    /// The class of a tag (ISO/IEC 7816-4:2005 §5.2.2.1, bits b8–b7 of the first byte).
    public enum TagClass: UInt8, Hashable, Sendable {
        case universal = 0
        case application = 1
        case contextSpecific = 2
        case `private` = 3
    }

    /// Creates a tag from its bytes packed big-endian (`0x9F02`), or `nil` when they are no well-formed tag.
    public init?(rawValue: UInt32) {
        guard Self.isWellFormed(rawValue) else { return nil }
        self.rawValue = rawValue
    }

    /// Creates a tag from its bytes (`[0x9F, 0x02]`), or `nil` when they are no well-formed tag of 1–4 bytes.
    public init?(bytes: [UInt8]) {
        guard (1...4).contains(bytes.count) else { return nil }
        var value: UInt32 = 0
        for byte in bytes { value = value << 8 | UInt32(byte) }
        // A leading 00 byte would vanish in the packed form, so it is rejected here.
        guard bytes[0] != 0, Self.isWellFormed(value) else { return nil }
        self.rawValue = value
    }

    /// A tag written as a literal, such as `0x9F02`.
    ///
    /// - Precondition: the literal is a well-formed tag; a literal is the programmer's, not outside input.
    public init(integerLiteral value: UInt32) {
        precondition(Self.isWellFormed(value), "0x\(String(value, radix: 16)) is not a well-formed BER-TLV tag")
        self.rawValue = value
    }

    /// Creates a tag the decoder already checked.
    init(unchecked rawValue: UInt32) {
        self.rawValue = rawValue
    }

    /// The tag's bytes as they appear on the wire.
    public var bytes: [UInt8] {
        var out: [UInt8] = []
        var started = false
        for shift in stride(from: 24, through: 0, by: -8) {
            let byte = UInt8(truncatingIfNeeded: rawValue >> UInt32(shift))
            if byte != 0 || started {
                out.append(byte)
                started = true
            }
        }
        return out
    }

    private var firstByte: UInt8 {
        var value = rawValue
        while value > 0xFF { value >>= 8 }
        return UInt8(truncatingIfNeeded: value)
    }

    /// The class from bits b8–b7 of the first byte.
    public var tagClass: TagClass { TagClass(rawValue: firstByte >> 6) ?? .universal }

    /// Whether the value field holds further BER-TLV objects (bit b6 of the first byte).
    public var isConstructed: Bool { firstByte & 0x20 != 0 }

    /// Upper-case hex of the tag bytes, such as `9F02`.
    public var description: String { bytes.hexString }

    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }

    /// Whether the packed bytes follow the tag rules: first byte neither `00` nor `FF`, a multi-byte tag only
    /// when the first byte's low five bits are `1F`, b8 set on every subsequent byte but the last.
    ///
    /// EMV tags such as `9F02` put values below `1F` in the second byte, which ISO/IEC 7816-4 discourages; they
    /// are accepted.
    ///
    /// Arithmetic only, no array: every tag literal (`0x9F66`) runs it, many times per payment read.
    static func isWellFormed(_ value: UInt32) -> Bool {
        guard value != 0 else { return false }
        let count = (32 - value.leadingZeroBitCount + 7) / 8
        func byte(_ index: Int) -> UInt8 { UInt8(truncatingIfNeeded: value >> UInt32(8 * (count - 1 - index))) }
        let first = byte(0)
        guard first != 0xFF else { return false }
        let multiByte = first & 0x1F == 0x1F
        guard multiByte == (count > 1) else { return false }
        var index = 1
        while index < count {
            let continues = byte(index) & 0x80 != 0
            guard continues == (index < count - 1) else { return false }
            index += 1
        }
        return true
    }
}

/// One BER-TLV data object (ISO/IEC 7816-4:2005 §5.2.2, EMV Book 3 Annex B): a tag, a value, and, when the tag is
/// constructed, the objects the value holds.
///
/// For a constructed tag `children` are always the decoding of `value`, and `value` is kept exactly as received
/// (padding included), so re-encoding a decoded object reproduces its value bytes. Descriptions print tags and
/// lengths only, never values: values may carry card data.
public struct TLV: Hashable, Sendable, CustomStringConvertible {
    public let tag: TLVTag
    /// The value field. For a constructed object, the encoding of `children` (plus any padding received).
    public let value: [UInt8]
    /// The objects inside a constructed object, in order; empty for a primitive one.
    public let children: [TLV]

    /// The default bound on nesting: EMV templates nest four or five deep at most.
    public static let defaultMaximumDepth = 16
    /// The default bound on input size: the largest extended-length response.
    public static let defaultMaximumSize = 65_536

    /// A primitive data object.
    ///
    /// - Precondition: `tag` is primitive (use ``init(tag:children:)`` or ``decode(_:maximumDepth:maximumSize:)``
    ///   for constructed ones) and `value` has at most 2³²−1 bytes.
    public init(tag: TLVTag, value: [UInt8]) {
        precondition(!tag.isConstructed, "tag \(tag) is constructed; build it with init(tag:children:)")
        precondition(UInt64(value.count) <= UInt64(UInt32.max), "a BER-TLV value has at most 2^32-1 bytes")
        self.tag = tag
        self.value = value
        self.children = []
    }

    /// A constructed data object whose value is the encoding of `children`.
    ///
    /// - Precondition: `tag` is constructed.
    public init(tag: TLVTag, children: [TLV]) {
        precondition(tag.isConstructed, "tag \(tag) is primitive; build it with init(tag:value:)")
        self.tag = tag
        self.value = children.flatMap(\.bytes)
        self.children = children
    }

    /// An object whose tag is only known at run time (from a card profile, from a card): a constructed tag's
    /// value is decoded into children, a primitive tag's value is taken as it is.
    ///
    /// - Throws: `ProximaError.malformedData` when the tag is constructed and the value is no list of BER-TLV
    ///   objects within ``defaultMaximumDepth`` and ``defaultMaximumSize``; offsets count from the start of `value`.
    public init(tag: TLVTag, encodedValue value: [UInt8]) throws {
        guard tag.isConstructed else {
            self.init(tag: tag, value: value)
            return
        }
        guard value.count <= Self.defaultMaximumSize else {
            throw ProximaError(
                .malformedData,
                "TLV \(tag) value of \(value.count) bytes exceeds the maximum of \(Self.defaultMaximumSize)"
            )
        }
        let children = try Self.decodeList(
            value,
            from: 0,
            to: value.count,
            depth: 2,
            maximumDepth: Self.defaultMaximumDepth
        )
        self.init(decodedTag: tag, value: value, children: children)
    }

    /// A decoded object; the decoder keeps the invariant between `value` and `children`.
    private init(decodedTag tag: TLVTag, value: [UInt8], children: [TLV]) {
        self.tag = tag
        self.value = value
        self.children = children
    }

    public var isConstructed: Bool { tag.isConstructed }

    /// The encoding: tag, minimal length field (short form below 128, else `81`–`84`), value.
    public var bytes: [UInt8] {
        var out = tag.bytes
        out.append(contentsOf: BER.encodeLength(value.count))
        out.append(contentsOf: value)
        return out
    }

    /// Tag, length, and the same for children; never the values.
    public var description: String {
        let inner = children.isEmpty ? "" : " {" + children.map(\.description).joined(separator: ", ") + "}"
        return "\(tag) (\(value.count) byte\(value.count == 1 ? "" : "s"))\(inner)"
    }

    // MARK: Decoding

    /// Decodes a list of BER-TLV objects, skipping `00` and `FF` padding before, between and after them.
    ///
    /// Decoding is total: every problem becomes an error naming what and the byte offset in `bytes`; no input
    /// traps. Lengths (§5.2.2.2) may use the short form or `81`–`84` followed by 1–4 bytes; non-minimal long
    /// forms that cards send (`81 05`) are accepted.
    ///
    /// - Parameters:
    ///   - bytes: the encoded objects, e.g. a response data field.
    ///   - maximumDepth: how deep constructed objects may nest; top-level objects are at depth 1. Decoding
    ///     recurses once per level, so keep this small.
    ///   - maximumSize: the largest accepted input in bytes.
    /// - Throws: `ProximaError.malformedData` for a truncated tag or length, a tag over four bytes, an indefinite
    ///   length (`80`), a length over four bytes (`85`–`FE`), a length beyond the data, nesting deeper than
    ///   `maximumDepth`, or input over `maximumSize`.
    public static func decodeAll(
        _ bytes: [UInt8],
        maximumDepth: Int = defaultMaximumDepth,
        maximumSize: Int = defaultMaximumSize
    ) throws -> [TLV] {
        guard bytes.count <= maximumSize else {
            throw ProximaError(
                .malformedData,
                "TLV input of \(bytes.count) bytes exceeds the maximum of \(maximumSize)"
            )
        }
        return try decodeList(bytes, from: 0, to: bytes.count, depth: 1, maximumDepth: maximumDepth)
    }

    /// Decodes exactly one BER-TLV object; padding may surround it.
    ///
    /// - Parameters: as ``decodeAll(_:maximumDepth:maximumSize:)``.
    /// - Throws: `ProximaError.malformedData` as ``decodeAll(_:maximumDepth:maximumSize:)``, and when `bytes`
    ///   hold no object or more than one.
    public static func decode(
        _ bytes: [UInt8],
        maximumDepth: Int = defaultMaximumDepth,
        maximumSize: Int = defaultMaximumSize
    ) throws -> TLV {
        let objects = try decodeAll(bytes, maximumDepth: maximumDepth, maximumSize: maximumSize)
        guard objects.count == 1, let object = objects.first else {
            throw ProximaError(.malformedData, "expected one TLV object, found \(objects.count)")
        }
        return object
    }

    private static func decodeList(
        _ bytes: [UInt8],
        from start: Int,
        to end: Int,
        depth: Int,
        maximumDepth: Int
    ) throws -> [TLV] {
        var objects: [TLV] = []
        var offset = start
        while offset < end {
            if BER.isPadding(bytes[offset]) {
                offset += 1
                continue
            }
            guard depth <= maximumDepth else {
                throw ProximaError(
                    .malformedData,
                    "TLV at offset \(offset) nests deeper than the maximum depth of \(maximumDepth)"
                )
            }
            let header = try BER.readHeader(bytes, at: offset, end: end, what: "TLV")
            let valueEnd = header.valueStart + header.length
            let value = Array(bytes[header.valueStart..<valueEnd])
            var children: [TLV] = []
            if header.tag.isConstructed {
                children = try decodeList(
                    bytes,
                    from: header.valueStart,
                    to: valueEnd,
                    depth: depth + 1,
                    maximumDepth: maximumDepth
                )
            }
            objects.append(TLV(decodedTag: header.tag, value: value, children: children))
            offset = valueEnd
        }
        return objects
    }

    // MARK: Lookup

    /// The first object with `tag` among the descendants, depth first in encoding order; `nil` if none.
    public func first(_ tag: TLVTag) -> TLV? {
        children.first(tag)
    }

    /// Every object with `tag` among the descendants, depth first in encoding order.
    public func all(_ tag: TLVTag) -> [TLV] {
        children.all(tag)
    }

    /// The first direct child with `tag`, without searching deeper.
    public func child(_ tag: TLVTag) -> TLV? {
        children.first { $0.tag == tag }
    }

    /// The object reached by following `path` through the children, one level per tag: on an FCI template `6F`,
    /// `find(path: [0xA5, 0xBF0C])` gives its FCI issuer discretionary data. Where several children share a tag,
    /// each is tried in order.
    public func find(path: [TLVTag]) -> TLV? {
        path.isEmpty ? self : children.find(path: path)
    }
}

extension Array where Element == TLV {
    /// The first object with `tag` in this list or among its descendants, depth first in encoding order.
    public func first(_ tag: TLVTag) -> TLV? {
        for object in self {
            if object.tag == tag { return object }
            if let found = object.children.first(tag) { return found }
        }
        return nil
    }

    /// Every object with `tag` in this list or among its descendants, depth first in encoding order.
    public func all(_ tag: TLVTag) -> [TLV] {
        var found: [TLV] = []
        for object in self {
            if object.tag == tag { found.append(object) }
            found.append(contentsOf: object.children.all(tag))
        }
        return found
    }

    /// The object reached by following `path` from this list, one level per tag, the first tag naming a member of
    /// this list: `TLV.decodeAll(fci).find(path: [0x6F, 0xA5, 0xBF0C])`. `nil` for an empty path or no match.
    public func find(path: [TLVTag]) -> TLV? {
        guard let head = path.first else { return nil }
        let rest = [TLVTag](path.dropFirst())
        for object in self where object.tag == head {
            if let found = object.find(path: rest) { return found }
        }
        return nil
    }

    /// The concatenated encodings.
    public var bytes: [UInt8] { flatMap(\.bytes) }
}

/// Tag and length readers shared by BER-TLV objects and data object lists.
enum BER {
    struct Header {
        var tag: TLVTag
        /// Offset of the first value byte.
        var valueStart: Int
        /// Value length; `valueStart + length` is within the data.
        var length: Int
    }

    static func isPadding(_ byte: UInt8) -> Bool { byte == 0x00 || byte == 0xFF }

    /// Reads a tag at `offset` (which must be below `end`); returns the tag and the offset after it.
    ///
    /// - Parameter what: names the structure in errors (`TLV`, `DOL`).
    static func readTag(_ bytes: [UInt8], at offset: Int, end: Int, what: String) throws -> (TLVTag, Int) {
        let first = bytes[offset]
        var value = UInt32(first)
        var next = offset + 1
        if first & 0x1F == 0x1F {
            while true {
                guard next < end else {
                    throw ProximaError(
                        .malformedData,
                        "\(what) tag at offset \(offset) is truncated by the end of data"
                    )
                }
                guard next - offset < 4 else {
                    throw ProximaError(.malformedData, "\(what) tag at offset \(offset) is longer than 4 bytes")
                }
                let byte = bytes[next]
                value = value << 8 | UInt32(byte)
                next += 1
                if byte & 0x80 == 0 { break }
            }
        }
        return (TLVTag(unchecked: value), next)
    }

    /// Reads a length field at `offset`; returns the length and the offset after the field.
    static func readLength(_ bytes: [UInt8], at offset: Int, end: Int, what: String) throws -> (Int, Int) {
        guard offset < end else {
            throw ProximaError(.malformedData, "\(what) length at offset \(offset) is missing: data ends after the tag")
        }
        let first = bytes[offset]
        if first < 0x80 { return (Int(first), offset + 1) }
        if first == 0x80 {
            throw ProximaError(
                .malformedData,
                "\(what) length at offset \(offset) is indefinite (80), which ISO/IEC 7816-4 and EMV do not allow"
            )
        }
        let count = Int(first & 0x7F)
        guard count <= 4 else {
            throw ProximaError(
                .malformedData,
                "\(what) length at offset \(offset) announces \(count) length bytes (\([first].hexString)); at most 4"
            )
        }
        let available = end - offset - 1
        guard count <= available else {
            throw ProximaError(
                .malformedData,
                "\(what) length at offset \(offset) is truncated (needs \(count) length bytes, has \(available))"
            )
        }
        // At most 4 bytes: the value fits a UInt64 without overflow on every platform.
        var length: UInt64 = 0
        for index in 1...count { length = length << 8 | UInt64(bytes[offset + index]) }
        return (Int(clamping: length), offset + 1 + count)
    }

    /// Reads tag and length at `offset` and checks that the value fits before `end`.
    static func readHeader(_ bytes: [UInt8], at offset: Int, end: Int, what: String) throws -> Header {
        let (tag, lengthOffset) = try readTag(bytes, at: offset, end: end, what: what)
        let (length, valueStart) = try readLength(bytes, at: lengthOffset, end: end, what: what)
        let available = end - valueStart
        guard length <= available else {
            throw ProximaError(
                .malformedData,
                "\(what) length at offset \(lengthOffset) exceeds data (needs \(length), has \(available))"
            )
        }
        return Header(tag: tag, valueStart: valueStart, length: length)
    }

    /// The minimal length field for `length` (at most 2³²−1).
    static func encodeLength(_ length: Int) -> [UInt8] {
        switch length {
        case ..<0x80: return [UInt8(truncatingIfNeeded: length)]
        case ..<0x100: return [0x81, UInt8(truncatingIfNeeded: length)]
        case ..<0x1_0000: return [0x82] + bigEndian(length, count: 2)
        case ..<0x100_0000: return [0x83] + bigEndian(length, count: 3)
        default: return [0x84] + bigEndian(length, count: 4)
        }
    }

    private static func bigEndian(_ value: Int, count: Int) -> [UInt8] {
        (0..<count).map { UInt8(truncatingIfNeeded: value >> (8 * (count - 1 - $0))) }
    }
}
