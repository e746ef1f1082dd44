/// One CBOR data item (RFC 8949 §3): the value model the decoder produces and the encoder consumes.
///
/// Integers keep CBOR's two major types, so the full range −2⁶⁴…2⁶⁴−1 fits without a big-number type:
/// ``unsigned(_:)`` is major type 0 and ``negative(_:)`` major type 1, holding n for the value −1−n. Maps keep their
/// entries in the order they were received (or built); the deterministic encoder sorts them. Indefinite-length
/// items decode into their definite equivalents, so a value never says how it was framed.
///
/// Embedded CBOR (tag 24) stays a byte string inside the tag: the holder's bytes are hashed and MACed as received,
/// never re-encoded (ISO/IEC 18013-5 §8.3.2.1.2.2). Descriptions print the structure with byte and text lengths
/// only, because items may carry identity data; ``diagnostic`` prints values (RFC 8949 §8) for tests and tools.
///
/// Only ``tagged(_:_:)`` is `indirect` (its content is a value): arrays and maps already hold their elements in
/// heap storage, and boxing every integer and string would cost the decoder one allocation per item.
public enum CBORValue: Hashable, Sendable {
    /// Major type 0: an unsigned integer 0…2⁶⁴−1.
    case unsigned(UInt64)
    /// Major type 1: the integer −1−n for n in 0…2⁶⁴−1.
    case negative(UInt64)
    /// Major type 2: a byte string.
    case byteString([UInt8])
    /// Major type 3: a text string (valid UTF-8).
    case textString(String)
    /// Major type 4: an array.
    case array([CBORValue])
    /// Major type 5: a map, entries in order; keys are unique.
    case map([CBORMapEntry])
    /// Major type 6: a tag number and its content.
    indirect case tagged(UInt64, CBORValue)
    /// Major type 7, simple values 20 and 21.
    case boolean(Bool)
    /// Major type 7, simple value 22.
    case null
    /// Major type 7, simple value 23.
    case undefined
    /// Major type 7, any other simple value (0…19, 32…255).
    case simple(UInt8)
    /// Major type 7, a half, single or double precision float, held as a `Double` (every half and single value
    /// is exactly representable).
    case float(Double)

    /// An integer value of either sign.
    public init(_ value: Int) {
        self = value >= 0 ? .unsigned(UInt64(value)) : .negative(UInt64(-(value + 1)))
    }

    /// A text string.
    public init(_ text: String) { self = .textString(text) }

    /// The integer value when it fits an `Int`, else `nil` (also for non-integers).
    public var intValue: Int? {
        switch self {
        case .unsigned(let n): n <= UInt64(Int.max) ? Int(n) : nil
        case .negative(let n): n <= UInt64(Int.max) ? -Int(n) - 1 : nil
        default: nil
        }
    }

    /// The string of a text string, else `nil`.
    public var textValue: String? {
        if case .textString(let text) = self { return text }
        return nil
    }

    /// The bytes of a byte string, else `nil`.
    public var bytesValue: [UInt8]? {
        if case .byteString(let bytes) = self { return bytes }
        return nil
    }

    /// The elements of an array, else `nil`.
    public var arrayValue: [CBORValue]? {
        if case .array(let items) = self { return items }
        return nil
    }

    /// The entries of a map, else `nil`.
    public var mapValue: [CBORMapEntry]? {
        if case .map(let entries) = self { return entries }
        return nil
    }

    /// The value of a boolean, else `nil`.
    public var boolValue: Bool? {
        if case .boolean(let value) = self { return value }
        return nil
    }

    /// The value stored under `key` when this is a map holding it, else `nil`.
    public subscript(key: CBORValue) -> CBORValue? {
        guard case .map(let entries) = self else { return nil }
        return entries.first { $0.key == key }?.value
    }

    /// The value stored under the text key `key`, for maps keyed by names (`"docType"`).
    public subscript(key: String) -> CBORValue? { self[.textString(key)] }

    /// The value stored under the integer key `key`, for maps keyed by labels (COSE headers, `DeviceEngagement`).
    public subscript(key: Int) -> CBORValue? { self[CBORValue(key)] }
}

/// One entry of a CBOR map.
public struct CBORMapEntry: Hashable, Sendable {
    public var key: CBORValue
    public var value: CBORValue

    public init(_ key: CBORValue, _ value: CBORValue) {
        self.key = key
        self.value = value
    }
}

extension CBORValue: ExpressibleByIntegerLiteral, ExpressibleByStringLiteral, ExpressibleByBooleanLiteral,
    ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral
{
    public init(integerLiteral value: Int) { self.init(value) }
    public init(stringLiteral value: String) { self = .textString(value) }
    public init(booleanLiteral value: Bool) { self = .boolean(value) }
    public init(arrayLiteral elements: CBORValue...) { self = .array(elements) }
    /// A map with the entries in the order written.
    public init(dictionaryLiteral elements: (CBORValue, CBORValue)...) {
        self = .map(elements.map { CBORMapEntry($0.0, $0.1) })
    }
}

// MARK: - Tags

extension CBORValue {
    /// Tag 0: a date/time string (RFC 8949 §3.4.1, RFC 3339), the CDDL `tdate`.
    public static let dateTimeTag: UInt64 = 0
    /// Tag 24: an encoded CBOR data item inside a byte string (RFC 8949 §3.4.5.1), `bstr .cbor`.
    public static let embeddedCBORTag: UInt64 = 24
    /// Tag 1004: an RFC 3339 `full-date` string (RFC 8943 §3), such as `"2024-12-31"`.
    public static let fullDateTag: UInt64 = 1004

    /// `#6.24(bstr)` around the deterministic encoding of `value`.
    public static func embedded(_ value: CBORValue) -> CBORValue {
        .tagged(embeddedCBORTag, .byteString(CBOREncoder.encode(value)))
    }

    /// `#6.24(bstr)` around bytes that are already an encoding (kept exactly as given).
    public static func embedded(encoded bytes: [UInt8]) -> CBORValue {
        .tagged(embeddedCBORTag, .byteString(bytes))
    }

    /// The bytes inside tag 24, else `nil`.
    public var embeddedBytes: [UInt8]? {
        guard case .tagged(Self.embeddedCBORTag, .byteString(let bytes)) = self else { return nil }
        return bytes
    }

    /// Decodes the item embedded by tag 24.
    ///
    /// - Throws: ``CBORError`` with kind `.unexpectedType` when this is not `#6.24(bstr)`, or any decoding error of
    ///   the embedded bytes (offsets count from the start of the embedded bytes).
    public func decodeEmbedded(limits: CBORDecoder.Limits = .default) throws -> CBORValue {
        guard let bytes = embeddedBytes else {
            throw CBORError(.unexpectedType, at: 0, "expected #6.24(bstr) (embedded CBOR)")
        }
        return try CBORDecoder.decode(bytes, limits: limits)
    }

    /// A `tdate` (tag 0) for a civil time in UTC, written `YYYY-MM-DDTHH:MM:SSZ` as ISO/IEC 18013-5 §7.2.1 wants.
    public static func dateTime(_ time: CivilTime) -> CBORValue {
        .tagged(dateTimeTag, .textString(time.rfc3339))
    }

    /// A `full-date` (tag 1004), `YYYY-MM-DD`.
    public static func fullDate(year: Int, month: Int, day: Int) -> CBORValue {
        func pad(_ value: Int, _ width: Int) -> String {
            let digits = String(value)
            return String(repeating: "0", count: max(0, width - digits.count)) + digits
        }
        return .tagged(fullDateTag, .textString("\(pad(year, 4))-\(pad(month, 2))-\(pad(day, 2))"))
    }

    /// The time of a `tdate` (tag 0) in the `YYYY-MM-DDTHH:MM:SSZ` form, with or without fractional seconds
    /// (dropped) and with a `Z` or numeric offset (applied); `nil` for anything else.
    public var dateTimeValue: CivilTime? {
        guard case .tagged(Self.dateTimeTag, .textString(let text)) = self else { return nil }
        return CBORValue.parseDateTime(text)
    }

    /// The `(year, month, day)` of a `full-date` (tag 1004), or of a `tdate` (tag 0) taken at its UTC date; `nil`
    /// otherwise. Issuers write birth and expiry dates either way (Multipaz PR #1737).
    public var fullDateValue: (year: Int, month: Int, day: Int)? {
        if case .tagged(Self.fullDateTag, .textString(let text)) = self {
            guard let time = CivilTime(rfc3339: text + "T00:00:00Z") else { return nil }
            return (time.year, time.month, time.day)
        }
        guard let time = dateTimeValue else { return nil }
        return (time.year, time.month, time.day)
    }

    static func parseDateTime(_ text: String) -> CivilTime? {
        let bytes = Array(text.utf8)
        guard bytes.count >= 20, bytes.count <= 40 else { return nil }
        let base = Array(bytes[0..<19]) + [UInt8(ascii: "Z")]
        guard let time = CivilTime(rfc3339: String(decoding: base, as: UTF8.self)) else { return nil }
        var index = 19
        if bytes[index] == UInt8(ascii: ".") {
            index += 1
            let start = index
            while index < bytes.count, (0x30...0x39).contains(bytes[index]) { index += 1 }
            guard index > start else { return nil }
        }
        guard index < bytes.count else { return nil }
        if bytes[index] == UInt8(ascii: "Z") || bytes[index] == UInt8(ascii: "z") {
            return index == bytes.count - 1 ? time : nil
        }
        guard bytes.count - index == 6, bytes[index] == 0x2B || bytes[index] == 0x2D, bytes[index + 3] == 0x3A
        else { return nil }
        func digit(_ i: Int) -> Int? { (0x30...0x39).contains(bytes[i]) ? Int(bytes[i] - 0x30) : nil }
        guard let h1 = digit(index + 1), let h2 = digit(index + 2), let m1 = digit(index + 4),
            let m2 = digit(index + 5)
        else { return nil }
        let hours = h1 * 10 + h2
        let minutes = m1 * 10 + m2
        guard hours < 24, minutes < 60 else { return nil }
        let offset = Int64((hours * 60 + minutes) * 60) * (bytes[index] == 0x2B ? 1 : -1)
        return CivilTime(unixSeconds: time.unixSeconds - offset)
    }
}

// MARK: - Descriptions

extension CBORValue: CustomStringConvertible {
    /// The structure with lengths only (`map(3)`, `bstr(32)`): never the bytes or text, which may be identity data.
    public var description: String {
        switch self {
        case .unsigned, .negative: "int"
        case .byteString(let bytes): "bstr(\(bytes.count))"
        case .textString(let text): "tstr(\(text.utf8.count))"
        case .array(let items): "array(\(items.count))"
        case .map(let entries): "map(\(entries.count))"
        case .tagged(let tag, let content): "\(tag)(\(content))"
        case .boolean: "bool"
        case .null: "null"
        case .undefined: "undefined"
        case .simple(let value): "simple(\(value))"
        case .float: "float"
        }
    }

    /// RFC 8949 §8 diagnostic notation, values included: for tests and developer tools, never for logs.
    public var diagnostic: String {
        switch self {
        case .unsigned(let n): return String(n)
        case .negative(let n): return n == UInt64.max ? "-18446744073709551616" : "-\(n + 1)"
        case .byteString(let bytes): return "h'\(bytes.hexString.lowercased())'"
        case .textString(let text): return Self.quoted(text)
        case .array(let items): return "[" + items.map(\.diagnostic).joined(separator: ", ") + "]"
        case .map(let entries):
            return "{" + entries.map { "\($0.key.diagnostic): \($0.value.diagnostic)" }.joined(separator: ", ") + "}"
        case .tagged(let tag, let content): return "\(tag)(\(content.diagnostic))"
        case .boolean(let value): return value ? "true" : "false"
        case .null: return "null"
        case .undefined: return "undefined"
        case .simple(let value): return "simple(\(value))"
        case .float(let value):
            if value.isNaN { return "NaN" }
            if value.isInfinite { return value < 0 ? "-Infinity" : "Infinity" }
            return "\(value)"
        }
    }

    private static func quoted(_ text: String) -> String {
        var out = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case _ where scalar.value < 0x20:
                let hex = String(scalar.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }
}

// MARK: - Errors

/// Why bytes are not a CBOR data item Proxima accepts, and the byte offset where decoding stopped.
///
/// Equality compares ``kind`` and ``offset`` only, so tests can say exactly where hostile input was caught.
public struct CBORError: Error, Hashable, Sendable, ClassifiedError {
    public let kind: Kind
    /// The offset (from the start of the decoded bytes) of the head or byte that is wrong.
    public let offset: Int
    public let reason: String

    public init(_ kind: Kind, at offset: Int, _ reason: String) {
        self.kind = kind
        self.offset = offset
        self.reason = reason
    }

    public var kernelCode: ProximaError.Code { .malformedData }
    public var description: String { "CBOR \(kind) at offset \(offset): \(reason)" }

    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.kind == rhs.kind && lhs.offset == rhs.offset }
    public func hash(into hasher: inout Hasher) {
        hasher.combine(kind)
        hasher.combine(offset)
    }

    /// What is wrong.
    public enum Kind: String, Hashable, Sendable, CustomStringConvertible {
        /// The bytes end inside an item.
        case truncated
        /// Bytes follow the single top-level item.
        case trailingBytes
        /// Additional information 28–30, or a two-byte simple value below 32 (RFC 8949 §3, §3.3).
        case reservedEncoding
        /// A break code where none may be, or an indefinite-length string chunk of another type.
        case invalidIndefinite
        /// A text string that is not valid UTF-8.
        case invalidUTF8
        /// A map key that appears twice (RFC 8949 §5.6).
        case duplicateMapKey
        /// Nesting deeper than the limit.
        case tooDeep
        /// A length or count larger than the limit, or than the bytes that remain.
        case tooLong
        /// More items in total than the limit.
        case tooManyItems
        /// A well-formed item of the wrong type for where it stands.
        case unexpectedType

        public var description: String { rawValue }
    }
}
