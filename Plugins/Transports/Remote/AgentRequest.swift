public import ExternalTransport
internal import ProximaCore

/// One frame from the store kernel to an agent, parsed and checked: the kernel's side of the driver protocol
/// (`Docs/driver-protocol.md` §Messages), which an agent answers as a driver would.
///
/// The parser is total: any payload gives a value or a `ProximaError.malformedData` naming the member (fuzzed by
/// `FuzzDriverFrame`). Members a newer minor version may add are ignored.
public enum AgentRequest: Hashable, Sendable {
    case hello(version: DriverProtocolVersion)
    /// The kernel refuses or dismisses the agent, with why.
    case bye(reason: String)
    case connect(id: Int64, reader: String, exclusive: Bool, timeoutMilliseconds: Int64)
    case transmit(id: Int64, reader: String, apdu: [UInt8], timeoutMilliseconds: Int64)
    case disconnect(id: Int64, reader: String)
    case control(id: Int64, reader: String, code: Int64, data: [UInt8])

    /// The request id, for the answer; `nil` for `hello` and `bye`.
    public var id: Int64? {
        switch self {
        case .hello, .bye: nil
        case .connect(let id, _, _, _), .transmit(let id, _, _, _), .disconnect(let id, _), .control(let id, _, _, _):
            id
        }
    }

    /// Parses one frame payload.
    /// - Throws: `ProximaError.malformedData` naming the member and what was expected.
    public static func parse(_ payload: [UInt8]) throws -> AgentRequest {
        if let transmit = parseCanonicalTransmit(payload) { return transmit }
        return try parseMessage(payload)
    }

    /// The `transmit` request exactly as the kernel writes it (`{"type":"transmit","id":7,"reader":"lane-1",`
    /// `"apdu":"00A4040000","timeoutMs":5000}`: these members in this order, no spaces, no escapes, upper- or
    /// lower-case hex), read without building a JSON tree: it arrives for every APDU. `nil` for anything else (other
    /// spacing or order, an escape, a leading zero, a value out of range), which ``parse(_:)`` then reads with the
    /// general parser; for every payload this accepts, the general parser gives the same request.
    package static func parseCanonicalTransmit(_ payload: [UInt8]) -> AgentRequest? {
        var reader = CanonicalReader(payload)
        guard reader.expect(#"{"type":"transmit","id":"#), let id = reader.integer(), id >= 1,
            reader.expect(#","reader":""#), let name = reader.plainString(), (1...64).contains(name.utf8.count),
            reader.expect(#","apdu":""#), let apdu = reader.hex(), (4...65_544).contains(apdu.count),
            reader.expect(#","timeoutMs":"#), let timeout = reader.integer(), (1...600_000).contains(timeout),
            reader.expect("}"), reader.atEnd
        else { return nil }
        return .transmit(id: id, reader: name, apdu: apdu, timeoutMilliseconds: timeout)
    }

    /// The general parser: every message, any JSON spacing and member order.
    package static func parseMessage(_ payload: [UInt8]) throws -> AgentRequest {
        let json = try JSONValue.parse(payload, limits: JSONValue.Limits(maxDepth: 8, maxBytes: max(1, payload.count)))
        var object = try StrictObject(json, at: "message", errorCode: .malformedData)
        let type = try object.string("type")
        switch type {
        case "hello":
            let text = try object.string("protocol")
            guard let version = DriverProtocolVersion(parsing: text) else {
                throw object.fail("protocol", "expected \"MAJOR.MINOR\" such as \"1.0\"")
            }
            return .hello(version: version)
        case "bye":
            let reason = try object.optionalString("reason", nonEmpty: false) ?? ""
            return .bye(reason: String(reason.prefix(512)))
        case "connect", "transmit", "disconnect", "control":
            let id = try object.integer("id", in: 1...Int64.max)
            let reader = try object.string("reader")
            guard reader.utf8.count <= 64 else { throw object.fail("reader", "more than 64 bytes") }
            let timeout = try object.optionalInteger("timeoutMs", in: 1...600_000) ?? 5_000
            switch type {
            case "connect":
                let exclusive = try object.bool("exclusive", default: false)
                return .connect(id: id, reader: reader, exclusive: exclusive, timeoutMilliseconds: timeout)
            case "transmit":
                let apdu = try hex(&object, "apdu", limit: 65_544)
                guard apdu.count >= 4 else { throw object.fail("apdu", "a command APDU has at least 4 bytes") }
                return .transmit(id: id, reader: reader, apdu: apdu, timeoutMilliseconds: timeout)
            case "disconnect":
                return .disconnect(id: id, reader: reader)
            default:
                let code = try object.integer("code", in: 0...Int64(UInt32.max))
                let data = object.has("data") ? try hex(&object, "data", limit: 65_536) : []
                return .control(id: id, reader: reader, code: code, data: data)
            }
        default:
            throw object.fail("type", "unknown message type \"\(String(type.prefix(64)))\"")
        }
    }

    private static func hex(_ object: inout StrictObject, _ key: String, limit: Int) throws -> [UInt8] {
        let text = try object.string(key, nonEmpty: false)
        guard text.utf8.count <= 2 * limit, let bytes = [UInt8](hex: text) else {
            throw object.fail(key, "expected at most \(limit) bytes as hex digits")
        }
        return bytes
    }
}

/// A cursor over a payload for ``AgentRequest/parseCanonicalTransmit(_:)``: every step is bounded by the payload's
/// length and fails (returns `false` or `nil`) rather than trap.
private struct CanonicalReader {
    private let bytes: [UInt8]
    private var index = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    var atEnd: Bool { index == bytes.count }

    /// Consumes `literal` when the payload continues with it.
    mutating func expect(_ literal: StaticString) -> Bool {
        literal.withUTF8Buffer { text in
            guard bytes.count - index >= text.count else { return false }
            for (offset, byte) in text.enumerated() where bytes[index + offset] != byte { return false }
            index += text.count
            return true
        }
    }

    /// A non-negative JSON integer: 1…18 digits, no leading zero (as JSON and the kernel write it).
    mutating func integer() -> Int64? {
        let start = index
        var value: Int64 = 0
        while index < bytes.count, index - start < 18, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) {
            value = value * 10 + Int64(bytes[index] - UInt8(ascii: "0"))
            index += 1
        }
        let count = index - start
        guard count > 0, !(count > 1 && bytes[start] == UInt8(ascii: "0")) else { return nil }
        // A 19th digit, a fraction or an exponent: left to the general parser.
        if index < bytes.count,
            [UInt8(ascii: "."), UInt8(ascii: "e"), UInt8(ascii: "E")].contains(bytes[index])
                || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index])
        {
            return nil
        }
        return value
    }

    /// The characters up to the closing quote, consumed with it: printable ASCII only, no backslash (anything else is
    /// the general parser's).
    mutating func plainString() -> String? {
        let start = index
        while index < bytes.count, bytes[index] != UInt8(ascii: "\"") {
            guard (0x20...0x7E).contains(bytes[index]), bytes[index] != UInt8(ascii: "\\") else { return nil }
            index += 1
        }
        guard index < bytes.count else { return nil }
        defer { index += 1 }
        return String(decoding: bytes[start..<index], as: UTF8.self)
    }

    /// Hex digits up to the closing quote, consumed with it, as bytes; `nil` for an odd count or another character.
    mutating func hex() -> [UInt8]? {
        var result: [UInt8] = []
        result.reserveCapacity(min(bytes.count - index, 2 * 65_544) / 2)
        while index + 1 < bytes.count, bytes[index] != UInt8(ascii: "\"") {
            guard let high = Self.nibble(bytes[index]), let low = Self.nibble(bytes[index + 1]) else { return nil }
            result.append(high << 4 | low)
            index += 2
        }
        guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { return nil }
        index += 1
        return result
    }

    private static func nibble(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        default: nil
        }
    }
}

/// The agent's frames to the store kernel: the driver's side of the protocol.
package enum AgentMessage {
    static func hello(name: String) -> JSONValue {
        .object([
            ("type", .string("hello")),
            ("protocol", .string(DriverProtocolVersion.current.description)),
            ("driver", .object([("name", .string(name)), ("version", .string("0.1"))])),
        ])
    }

    static func reader(_ info: ReaderInfo) -> JSONValue {
        .object([
            ("id", .string(info.id.rawValue)),
            ("name", .string(String(info.name.prefix(256)))),
            ("extendedLength", .bool(info.supportsExtendedLength)),
        ])
    }

    static func readers(_ list: [ReaderInfo]) -> JSONValue {
        .object([("type", .string("readers")), ("readers", .array(list.map(reader)))])
    }

    static func event(_ type: String, reader: ReaderID) -> JSONValue {
        .object([("type", .string(type)), ("reader", .string(reader.rawValue))])
    }

    static func readerAppeared(_ info: ReaderInfo) -> JSONValue {
        .object([("type", .string("readerAppeared")), ("reader", reader(info))])
    }

    static func result(_ id: Int64, _ members: [(key: String, value: JSONValue)] = []) -> JSONValue {
        .object([("type", .string("result")), ("id", .integer(id))] + members)
    }

    /// The frame answering `transmit` request `id` with `response`: byte for byte what
    /// `DriverFrame.encode(result(id, [("apdu", .string(response.hexString))]))` gives, written straight into the frame
    /// (it is sent for every APDU).
    package static func transmitResult(_ id: Int64, _ response: [UInt8]) -> [UInt8] {
        var writer = DriverFrame.Writer(capacity: 48 + 2 * response.count)
        writer.append(#"{"type":"result","id":"#)
        writer.append(integer: id)
        writer.append(#","apdu":""#)
        writer.append(hex: response)
        writer.append(#""}"#)
        return writer.finish()
    }

    static func error(_ id: Int64, _ code: DriverErrorCode, _ message: String) -> JSONValue {
        .object([
            ("type", .string("error")), ("id", .integer(id)), ("code", .string(code.rawValue)),
            ("message", .string(String(message.prefix(512)))),
        ])
    }

    /// The driver error code for a kernel error of the agent's own transport.
    static func code(for error: any Error) -> DriverErrorCode {
        switch (error as? ProximaError)?.code {
        case .cardRemoved?: .cardRemoved
        case .cardTimeout?: .cardTimeout
        case .readerVanished?, .readerFaulted?: .readerVanished
        case .unsupported?: .unsupported
        case .invalidArgument?: .invalidRequest
        default: .transmitFailed
        }
    }
}
