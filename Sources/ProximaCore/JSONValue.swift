/// A JSON document (RFC 8259) as a value, with object keys kept in document order.
///
/// Proxima parses JSON itself rather than through Foundation so that duplicate keys, integer versus
/// fractional numbers and nesting depth are all visible to the strict decoders that name JSON paths.
public enum JSONValue: Hashable, Sendable {
    case null
    case bool(Bool)
    /// An integer literal that fits in `Int64`.
    case integer(Int64)
    /// Any other number.
    case number(Double)
    case string(String)
    case array([JSONValue])
    /// Members in document order. The parser rejects duplicate keys.
    case object([(key: String, value: JSONValue)])

    public static func == (lhs: JSONValue, rhs: JSONValue) -> Bool {
        switch (lhs, rhs) {
        case (.null, .null): true
        case (.bool(let a), .bool(let b)): a == b
        case (.integer(let a), .integer(let b)): a == b
        case (.number(let a), .number(let b)): a == b
        case (.string(let a), .string(let b)): a == b
        case (.array(let a), .array(let b)): a == b
        case (.object(let a), .object(let b)):
            a.count == b.count && zip(a, b).allSatisfy { $0.key == $1.key && $0.value == $1.value }
        default: false
        }
    }

    public func hash(into hasher: inout Hasher) {
        switch self {
        case .null: hasher.combine(0)
        case .bool(let b): hasher.combine(b)
        case .integer(let i): hasher.combine(i)
        case .number(let d): hasher.combine(d)
        case .string(let s): hasher.combine(s)
        case .array(let a): hasher.combine(a)
        case .object(let members):
            for m in members {
                hasher.combine(m.key)
                hasher.combine(m.value)
            }
        }
    }

    /// The member named `key` of an object, else `nil`.
    public subscript(key: String) -> JSONValue? {
        guard case .object(let members) = self else { return nil }
        return members.first { $0.key == key }?.value
    }

    /// The JSON type name used in error messages ("object", "string", …).
    public var typeName: String {
        switch self {
        case .null: "null"
        case .bool: "boolean"
        case .integer: "integer"
        case .number: "number"
        case .string: "string"
        case .array: "array"
        case .object: "object"
        }
    }
}

// MARK: - Parsing

extension JSONValue {
    /// Limits that keep a hostile document from exhausting the stack or memory.
    public struct Limits: Sendable {
        public var maxDepth: Int
        public var maxBytes: Int
        public init(maxDepth: Int = 64, maxBytes: Int = 4 << 20) {
            self.maxDepth = maxDepth
            self.maxBytes = maxBytes
        }
    }

    /// Parses a complete JSON text.
    /// - Throws: `ProximaError.malformedData` naming the line, column and what was expected.
    public static func parse(_ bytes: [UInt8], limits: Limits = Limits()) throws -> JSONValue {
        guard bytes.count <= limits.maxBytes else {
            throw ProximaError(
                .malformedData,
                "JSON text of \(bytes.count) bytes exceeds the \(limits.maxBytes)-byte limit"
            )
        }
        var parser = JSONParser(bytes: bytes, maxDepth: limits.maxDepth)
        return try parser.parseDocument()
    }

    public static func parse(_ text: String, limits: Limits = Limits()) throws -> JSONValue {
        try parse(Array(text.utf8), limits: limits)
    }
}

private struct JSONParser {
    let bytes: [UInt8]
    let maxDepth: Int
    var index = 0
    var depth = 0

    init(bytes: [UInt8], maxDepth: Int) {
        self.bytes = bytes
        self.maxDepth = maxDepth
    }

    mutating func parseDocument() throws -> JSONValue {
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { index = 3 }
        skipWhitespace()
        let value = try parseValue()
        skipWhitespace()
        guard index == bytes.count else { throw error("unexpected content after the JSON value") }
        return value
    }

    func error(_ message: String) -> ProximaError {
        var line = 1
        var column = 1
        for b in bytes[..<min(index, bytes.count)] {
            if b == UInt8(ascii: "\n") {
                line += 1
                column = 1
            } else if b & 0xC0 != 0x80 {
                column += 1
            }
        }
        return ProximaError(.malformedData, "JSON line \(line), column \(column): \(message)")
    }

    mutating func skipWhitespace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x09, 0x0A, 0x0D: index += 1
            default: return
            }
        }
    }

    mutating func parseValue() throws -> JSONValue {
        guard index < bytes.count else { throw error("expected a value, found the end of the text") }
        switch bytes[index] {
        case UInt8(ascii: "{"): return try parseObject()
        case UInt8(ascii: "["): return try parseArray()
        case UInt8(ascii: "\""): return .string(try parseString())
        case UInt8(ascii: "t"): try expectLiteral("true"); return .bool(true)
        case UInt8(ascii: "f"): try expectLiteral("false"); return .bool(false)
        case UInt8(ascii: "n"): try expectLiteral("null"); return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try parseNumber()
        default: throw error("expected a value, found '\(printable(bytes[index]))'")
        }
    }

    func printable(_ b: UInt8) -> Swift.String {
        (0x20..<0x7F).contains(b) ? Swift.String(UnicodeScalar(b)) : "byte 0x" + [b].hexString
    }

    mutating func expectLiteral(_ literal: StaticString) throws {
        let lit = literal.withUTF8Buffer { Array($0) }
        guard index + lit.count <= bytes.count, Array(bytes[index..<(index + lit.count)]) == lit else {
            throw error("invalid literal, expected '\(literal)'")
        }
        index += lit.count
    }

    mutating func enter() throws {
        depth += 1
        guard depth <= maxDepth else { throw error("nesting deeper than \(maxDepth) levels") }
    }

    mutating func parseObject() throws -> JSONValue {
        try enter()
        defer { depth -= 1 }
        index += 1
        var members: [(key: String, value: JSONValue)] = []
        var seen = Set<Swift.String>()
        skipWhitespace()
        if index < bytes.count && bytes[index] == UInt8(ascii: "}") {
            index += 1
            return .object(members)
        }
        while true {
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else {
                throw error("expected a quoted member name")
            }
            let keyStart = index
            let key = try parseString()
            guard seen.insert(key).inserted else {
                index = keyStart
                throw error("duplicate member \"\(key)\"")
            }
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else {
                throw error("expected ':' after \"\(key)\"")
            }
            index += 1
            skipWhitespace()
            let value = try parseValue()
            members.append((key, value))
            skipWhitespace()
            guard index < bytes.count else { throw error("unterminated object, expected ',' or '}'") }
            if bytes[index] == UInt8(ascii: ",") {
                index += 1
                continue
            }
            if bytes[index] == UInt8(ascii: "}") {
                index += 1
                return .object(members)
            }
            throw error("expected ',' or '}' in object")
        }
    }

    mutating func parseArray() throws -> JSONValue {
        try enter()
        defer { depth -= 1 }
        index += 1
        var elements: [JSONValue] = []
        skipWhitespace()
        if index < bytes.count && bytes[index] == UInt8(ascii: "]") {
            index += 1
            return .array(elements)
        }
        while true {
            skipWhitespace()
            elements.append(try parseValue())
            skipWhitespace()
            guard index < bytes.count else { throw error("unterminated array, expected ',' or ']'") }
            if bytes[index] == UInt8(ascii: ",") {
                index += 1
                continue
            }
            if bytes[index] == UInt8(ascii: "]") {
                index += 1
                return .array(elements)
            }
            throw error("expected ',' or ']' in array")
        }
    }

    mutating func parseHex4() throws -> UInt32 {
        guard index + 4 <= bytes.count else { throw error("truncated \\u escape") }
        var v: UInt32 = 0
        for _ in 0..<4 {
            let c = bytes[index]
            let d: UInt32
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): d = UInt32(c - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): d = UInt32(c - UInt8(ascii: "a") + 10)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): d = UInt32(c - UInt8(ascii: "A") + 10)
            default: throw error("invalid hex digit in \\u escape")
            }
            v = v << 4 | d
            index += 1
        }
        return v
    }

    mutating func parseString() throws -> Swift.String {
        index += 1  // opening quote
        var out: [UInt8] = []
        while true {
            guard index < bytes.count else { throw error("unterminated string") }
            let c = bytes[index]
            switch c {
            case UInt8(ascii: "\""):
                index += 1
                guard let s = Swift.String(validating: out, as: UTF8.self) else {
                    throw error("string is not valid UTF-8")
                }
                return s
            case UInt8(ascii: "\\"):
                index += 1
                guard index < bytes.count else { throw error("unterminated escape") }
                let e = bytes[index]
                index += 1
                switch e {
                case UInt8(ascii: "\""): out.append(0x22)
                case UInt8(ascii: "\\"): out.append(0x5C)
                case UInt8(ascii: "/"): out.append(0x2F)
                case UInt8(ascii: "b"): out.append(0x08)
                case UInt8(ascii: "f"): out.append(0x0C)
                case UInt8(ascii: "n"): out.append(0x0A)
                case UInt8(ascii: "r"): out.append(0x0D)
                case UInt8(ascii: "t"): out.append(0x09)
                case UInt8(ascii: "u"):
                    var scalar = try parseHex4()
                    if (0xD800...0xDBFF).contains(scalar) {
                        guard index + 6 <= bytes.count, bytes[index] == UInt8(ascii: "\\"),
                            bytes[index + 1] == UInt8(ascii: "u")
                        else { throw error("unpaired surrogate in \\u escape") }
                        index += 2
                        let low = try parseHex4()
                        guard (0xDC00...0xDFFF).contains(low) else { throw error("invalid low surrogate") }
                        scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                    } else if (0xDC00...0xDFFF).contains(scalar) {
                        throw error("unpaired surrogate in \\u escape")
                    }
                    guard let u = Unicode.Scalar(scalar) else { throw error("invalid \\u escape") }
                    out.append(contentsOf: Array(Swift.String(Character(u)).utf8))
                default:
                    throw error("invalid escape '\\\(printable(e))'")
                }
            default:
                guard c >= 0x20 else { throw error("control character in string") }
                out.append(c)
                index += 1
            }
        }
    }

    mutating func parseNumber() throws -> JSONValue {
        let start = index
        if bytes[index] == UInt8(ascii: "-") { index += 1 }
        func digits(_ p: inout JSONParser) -> Int {
            let s = p.index
            while p.index < p.bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(p.bytes[p.index]) {
                p.index += 1
            }
            return p.index - s
        }
        guard index < bytes.count else { throw error("expected digits in number") }
        if bytes[index] == UInt8(ascii: "0") {
            index += 1
        } else if digits(&self) == 0 {
            throw error("expected digits in number")
        }
        var isInteger = true
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            isInteger = false
            index += 1
            guard digits(&self) > 0 else { throw error("expected digits after '.'") }
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
            isInteger = false
            index += 1
            if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") {
                index += 1
            }
            guard digits(&self) > 0 else { throw error("expected digits in exponent") }
        }
        let text = Swift.String(decoding: bytes[start..<index], as: UTF8.self)
        if isInteger, let i = Int64(text) { return .integer(i) }
        guard let d = Double(text), d.isFinite else { throw error("number \(text) is out of range") }
        return .number(d)
    }
}

// MARK: - Writing

extension JSONValue {
    /// Compact JSON text (RFC 8259), members in their stored order.
    public var jsonText: String { String(decoding: jsonBytes, as: UTF8.self) }

    /// ``jsonText`` as UTF-8 bytes, written without a `String` in between.
    public var jsonBytes: [UInt8] {
        var writer = JSONWriter()
        writer.value(self)
        return writer.bytes
    }
}

/// Writes compact JSON (RFC 8259) straight into UTF-8 bytes, member by member: what ``JSONValue/jsonText`` is made
/// with, and what a hot path uses to write a document without building a ``JSONValue`` tree (or a `String` per
/// hex field) first, as the card data envelope does on every read.
///
/// Commas come from the last byte written: none after `{`, `[` or `:`, one before any other member or element.
/// The caller nests `key`/value calls as the document nests; the writer does not check that.
public struct JSONWriter: Sendable {
    public private(set) var bytes: [UInt8] = []

    public init(capacity: Int = 256) { bytes.reserveCapacity(capacity) }

    public mutating func beginObject() {
        separate()
        bytes.append(UInt8(ascii: "{"))
    }

    public mutating func endObject() { bytes.append(UInt8(ascii: "}")) }

    public mutating func beginArray() {
        separate()
        bytes.append(UInt8(ascii: "["))
    }

    public mutating func endArray() { bytes.append(UInt8(ascii: "]")) }

    /// An object member's key; its value is the next thing written.
    public mutating func key(_ key: String) {
        string(key)
        bytes.append(UInt8(ascii: ":"))
    }

    /// An object member's key written as upper-case hex digits (an EMV tag); its value is the next thing written.
    public mutating func hexKey(_ key: [UInt8]) {
        hexString(key)
        bytes.append(UInt8(ascii: ":"))
    }

    public mutating func string(_ string: String) {
        separate()
        bytes.append(UInt8(ascii: "\""))
        // Most strings (identifiers, amounts, hex) need no escape and are copied whole.
        if string.utf8.contains(where: Self.needsEscape) {
            // Bytes of multi-byte scalars are all ≥ 0x80, so byte by byte keeps them as they are.
            for byte in string.utf8 { appendEscaped(byte) }
        } else {
            bytes.append(contentsOf: string.utf8)
        }
        bytes.append(UInt8(ascii: "\""))
    }

    /// `value` as a JSON string of upper-case hex digits, without a `String` in between.
    public mutating func hexString(_ value: [UInt8]) {
        separate()
        bytes.append(UInt8(ascii: "\""))
        bytes.appendHex(value)
        bytes.append(UInt8(ascii: "\""))
    }

    public mutating func integer(_ value: Int64) {
        separate()
        guard value != 0 else { return bytes.append(UInt8(ascii: "0")) }
        if value < 0 { bytes.append(UInt8(ascii: "-")) }
        // Digits of the magnitude, least significant first, then reversed in place (Int64.min included).
        var magnitude = value.magnitude
        let first = bytes.count
        while magnitude > 0 {
            bytes.append(UInt8(ascii: "0") + UInt8(magnitude % 10))
            magnitude /= 10
        }
        bytes[first...].reverse()
    }

    public mutating func bool(_ value: Bool) {
        separate()
        bytes.append(contentsOf: value ? Self.trueLiteral : Self.falseLiteral)
    }

    public mutating func null() {
        separate()
        bytes.append(contentsOf: Self.nullLiteral)
    }

    /// Any value, nested values included.
    public mutating func value(_ value: JSONValue) {
        switch value {
        case .null: null()
        case .bool(let b): bool(b)
        case .integer(let i): integer(i)
        case .number(let d):
            separate()
            bytes.append(contentsOf: "\(d)".utf8)
        case .string(let s): string(s)
        case .array(let elements):
            beginArray()
            for element in elements { self.value(element) }
            endArray()
        case .object(let members):
            beginObject()
            for member in members {
                key(member.key)
                self.value(member.value)
            }
            endObject()
        }
    }

    private static let trueLiteral = Array("true".utf8)
    private static let falseLiteral = Array("false".utf8)
    private static let nullLiteral = Array("null".utf8)

    /// A comma before a member or element that follows another one.
    @inline(__always) private mutating func separate() {
        guard let last = bytes.last else { return }
        if last != UInt8(ascii: "{") && last != UInt8(ascii: "[") && last != UInt8(ascii: ":") {
            bytes.append(UInt8(ascii: ","))
        }
    }

    @inline(__always) private static func needsEscape(_ byte: UInt8) -> Bool {
        byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\")
    }

    private mutating func appendEscaped(_ byte: UInt8) {
        switch byte {
        case UInt8(ascii: "\""): bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\"")])
        case UInt8(ascii: "\\"): bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\\")])
        case 0x0A: bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "n")])
        case 0x0D: bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "r")])
        case 0x09: bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "t")])
        case ..<0x20:
            // \u00XX with lower-case hex digits, as before.
            let digits = Array("0123456789abcdef".utf8)
            bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0")])
            bytes.append(digits[Int(byte >> 4)])
            bytes.append(digits[Int(byte & 0x0F)])
        default: bytes.append(byte)
        }
    }
}
