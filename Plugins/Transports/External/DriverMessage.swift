public import ProximaCore

/// The protocol version a driver or the kernel speaks: `MAJOR.MINOR`. Peers of one major understand each other
/// (a newer minor only adds optional members); a different major is refused at the handshake.
public struct DriverProtocolVersion: Hashable, Sendable, CustomStringConvertible {
    public var major: Int
    public var minor: Int

    /// The version this build speaks.
    public static let current = DriverProtocolVersion(major: 1, minor: 0)

    public init(major: Int, minor: Int) {
        self.major = major
        self.minor = minor
    }

    /// Reads `"1.0"`; `nil` for anything else (no sign, no spaces, at most 4 digits each).
    public init?(parsing text: String) {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 2, parts.allSatisfy({ (1...4).contains($0.count) && $0.allSatisfy(\.isASCIIDigit) }),
            let major = Int(parts[0]), let minor = Int(parts[1])
        else { return nil }
        self.init(major: major, minor: minor)
    }

    public var description: String { "\(major).\(minor)" }
}

extension Character {
    fileprivate var isASCIIDigit: Bool { ("0"..."9").contains(self) }
}

/// A reader as a driver describes it.
public struct DriverReader: Hashable, Sendable {
    /// The driver's own id for the reader (1…64 characters); the kernel's reader id is the transport's prefix
    /// followed by it.
    public var id: String
    /// The name people see (`proxima readers`), 1…256 characters.
    public var name: String
    /// Whether the reader passes extended-length APDUs.
    public var extendedLength: Bool

    public init(id: String, name: String, extendedLength: Bool = false) {
        self.id = id
        self.name = name
        self.extendedLength = extendedLength
    }
}

/// One message from a driver to the kernel, parsed and checked.
public enum DriverMessage: Hashable, Sendable {
    /// The driver's side of the handshake, its first frame.
    case hello(version: DriverProtocolVersion, driverName: String, driverVersion: String)
    /// Every reader the driver has now; replaces what it said before.
    case readers([DriverReader])
    case readerAppeared(DriverReader)
    case readerVanished(reader: String)
    case cardPresent(reader: String)
    case cardRemoved(reader: String)
    /// The answer to request `id`; `body` is the whole message object (its members depend on the request).
    case result(id: Int64, body: JSONValue)
    /// Request `id` failed; `code` is one of ``DriverErrorCode``'s raw values (others are read as
    /// `transmitFailed`).
    case error(id: Int64, code: String, message: String)

    /// The most readers one driver may report.
    public static let maximumReaders = 64
    /// Limits for the JSON text of one frame: shallow, as no message nests deeper than three levels.
    static let jsonLimits = JSONValue.Limits(maxDepth: 8, maxBytes: DriverFrame.defaultMaximumPayload)

    /// Parses one frame payload.
    /// - Throws: `ProximaError.malformedData` naming the member and what was expected.
    public static func parse(_ payload: [UInt8]) throws -> DriverMessage {
        var limits = jsonLimits
        limits.maxBytes = max(limits.maxBytes, payload.count)
        let json = try JSONValue.parse(payload, limits: limits)
        var object = try StrictObject(json, at: "message", errorCode: .malformedData)
        let type = try object.string("type")
        switch type {
        case "hello":
            let versionText = try object.string("protocol")
            guard let version = DriverProtocolVersion(parsing: versionText) else {
                throw object.fail("protocol", "expected \"MAJOR.MINOR\" such as \"1.0\", found \"\(versionText)\"")
            }
            guard let driverValue = object.value("driver") else {
                throw object.fail("driver", "missing (an object with \"name\" and \"version\")")
            }
            var driver = try StrictObject(driverValue, at: object.path(of: "driver"), errorCode: .malformedData)
            let name = try bounded(driver.string("name"), 128, at: driver.path(of: "name"))
            let driverVersion = try bounded(driver.string("version"), 64, at: driver.path(of: "version"))
            return .hello(version: version, driverName: name, driverVersion: driverVersion)
        case "readers":
            let readers = try object.array("readers") { value, path in try reader(value, at: path) }
            guard readers.count <= maximumReaders else {
                throw object.fail("readers", "\(readers.count) readers, at most \(maximumReaders)")
            }
            guard Set(readers.map(\.id)).count == readers.count else {
                throw object.fail("readers", "two readers share an id")
            }
            return .readers(readers)
        case "readerAppeared":
            guard let value = object.value("reader") else { throw object.fail("reader", "missing (an object)") }
            return .readerAppeared(try reader(value, at: object.path(of: "reader")))
        case "readerVanished":
            return .readerVanished(reader: try readerID(&object))
        case "cardPresent":
            return .cardPresent(reader: try readerID(&object))
        case "cardRemoved":
            return .cardRemoved(reader: try readerID(&object))
        case "result":
            return .result(id: try object.integer("id", in: 1...Int64.max), body: json)
        case "error":
            let id = try object.integer("id", in: 1...Int64.max)
            let code = try bounded(object.string("code"), 64, at: object.path(of: "code"))
            let message = try object.optionalString("message", nonEmpty: false) ?? ""
            return .error(id: id, code: code, message: String(message.prefix(512)))
        default:
            throw object.fail("type", "unknown message type \"\(String(type.prefix(64)))\"")
        }
    }

    private static func reader(_ value: JSONValue, at path: String) throws -> DriverReader {
        var object = try StrictObject(value, at: path, errorCode: .malformedData)
        let id = try bounded(object.string("id"), 64, at: object.path(of: "id"))
        let name = try bounded(object.string("name"), 256, at: object.path(of: "name"))
        let extendedLength = try object.bool("extendedLength", default: false)
        return DriverReader(id: id, name: name, extendedLength: extendedLength)
    }

    private static func readerID(_ object: inout StrictObject) throws -> String {
        try bounded(object.string("reader"), 64, at: object.path(of: "reader"))
    }

    private static func bounded(_ text: String, _ limit: Int, at path: String) throws -> String {
        guard text.utf8.count <= limit else {
            throw ProximaError(.malformedData, "\(path): \(text.utf8.count) bytes, at most \(limit)")
        }
        return text
    }
}

/// The error codes a driver may answer a request with, and the kernel codes they become.
public enum DriverErrorCode: String, CaseIterable, Sendable {
    /// No card in the field (for `connect`): the kernel waits for the next `cardPresent`.
    case noCard
    case cardRemoved
    case cardTimeout
    case readerVanished
    case transmitFailed
    case unsupported
    case invalidRequest

    /// The kernel error code callers see.
    public var kernelCode: ProximaError.Code {
        switch self {
        case .noCard, .cardRemoved: .cardRemoved
        case .cardTimeout: .cardTimeout
        case .readerVanished: .readerVanished
        case .transmitFailed: .transmitFailed
        case .unsupported: .unsupported
        case .invalidRequest: .invalidArgument
        }
    }
}

/// What a `connect` request returns: the card as the reader sees it.
public struct DriverCardInfo: Hashable, Sendable {
    public var atr: [UInt8]
    public var ats: [UInt8]
    public var uid: [UInt8]
    public var technology: CardTechnology
    public var maximumCommandLength: Int
    public var extendedLength: Bool

    /// Reads a `connect` result.
    /// - Throws: `ProximaError.malformedData` naming the member.
    init(result body: JSONValue, readerExtendedLength: Bool) throws {
        var object = try StrictObject(body, at: "result", errorCode: .malformedData)
        atr = try Self.hex(&object, "atr", limit: 64)
        ats = try Self.hex(&object, "ats", limit: 64)
        uid = try Self.hex(&object, "uid", limit: 32)
        let technologies = [
            CardTechnology.iso14443A, .iso14443B, .felica, .contact, .unknown,
        ]
        let technology = try object.optionalChoice("technology", technologies.map(\.rawValue))
        self.technology = technology.flatMap(CardTechnology.init(rawValue:)) ?? .unknown
        extendedLength = try object.bool("extendedLength", default: readerExtendedLength)
        let longest = Int64(extendedLength ? 65_544 : 261)
        maximumCommandLength = Int(try object.optionalInteger("maxCommandLength", in: 5...longest) ?? longest)
    }

    static func hex(_ object: inout StrictObject, _ key: String, limit: Int) throws -> [UInt8] {
        guard let text = try object.optionalString(key, nonEmpty: false) else { return [] }
        guard text.utf8.count <= 2 * limit, let bytes = [UInt8](hex: text) else {
            throw object.fail(key, "expected at most \(limit) bytes as hex digits")
        }
        return bytes
    }
}

/// The kernel's messages to a driver.
package enum KernelMessage {
    /// `,"reader":<reader as a JSON string>`, for ``transmit(id:encodedReader:apdu:timeoutMilliseconds:)``.
    package static func encodedReader(_ reader: String) -> [UInt8] {
        Array((#","reader":"# + JSONValue.string(reader).jsonText).utf8)
    }

    /// The `transmit` request's frame, written straight into it (it is sent for every APDU): byte for byte
    /// `DriverFrame.encode` of `{"type":"transmit","id":…,"reader":…,"apdu":"<hex>","timeoutMs":…}`, the members in
    /// the order ``DriverConnection`` writes every request's.
    package static func transmit(
        id: Int64,
        encodedReader: [UInt8],
        apdu: [UInt8],
        timeoutMilliseconds: Int64
    ) -> [UInt8] {
        var writer = DriverFrame.Writer(capacity: 64 + encodedReader.count + 2 * apdu.count)
        writer.append(#"{"type":"transmit","id":"#)
        writer.append(integer: id)
        writer.append(encoded: encodedReader)
        writer.append(#","apdu":""#)
        writer.append(hex: apdu)
        writer.append(#"","timeoutMs":"#)
        writer.append(integer: timeoutMilliseconds)
        writer.append("}")
        return writer.finish()
    }

    static func hello() -> JSONValue {
        .object([
            ("type", .string("hello")),
            ("protocol", .string(DriverProtocolVersion.current.description)),
            ("kernel", .object([("name", .string("proxima")), ("version", .string(kernelVersion))])),
        ])
    }

    /// Sent before the kernel stops a driver whose hello it refuses.
    static func bye(_ reason: String) -> JSONValue {
        .object([("type", .string("bye")), ("reason", .string(reason))])
    }

    static let kernelVersion = "0.1"
}
