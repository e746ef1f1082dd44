/// Strict, path-naming reading of JSON objects for configuration files (manifest, plugin config, card profiles).
///
/// Every accessor marks its key as used; ``finish()`` then rejects any key nobody read, so a typo such as
/// `"overflowToShard"` is an error naming its path instead of being silently ignored. Errors carry the path in
/// ``ProximaError/jsonPath`` and the problem in ``ProximaError/reason`` (printed `lanes[2].readers[0]: expected a
/// string, found integer`).
public struct StrictObject {
    /// The JSON path of this object (`plugins[0].config`); empty for the document root.
    public let path: String
    public let errorCode: ProximaError.Code
    private let members: [(key: String, value: JSONValue)]
    private var used: Set<String> = []

    /// - Throws: when `value` is not an object.
    public init(_ value: JSONValue, at path: String, errorCode: ProximaError.Code = .invalidManifest) throws {
        guard case .object(let members) = value else {
            throw ProximaError(errorCode, "expected an object, found \(value.typeName)", jsonPath: path)
        }
        self.path = path
        self.errorCode = errorCode
        self.members = members
    }

    /// The path of member `key`.
    public func path(of key: String) -> String { path.isEmpty ? key : "\(path).\(key)" }

    /// `path` for messages: the root is called "(document)".
    public static func display(_ path: String) -> String { path.isEmpty ? "(document)" : path }

    public func has(_ key: String) -> Bool { members.contains { $0.key == key } }

    /// Member names in document order.
    public var keys: [String] { members.map(\.key) }

    /// The raw member value, marking it used; `nil` when absent.
    public mutating func value(_ key: String) -> JSONValue? {
        guard let v = members.first(where: { $0.key == key })?.value else { return nil }
        used.insert(key)
        return v
    }

    /// The raw member value, marking it used.
    /// - Throws: when absent.
    public mutating func required(_ key: String, expected: String) throws -> JSONValue {
        guard let v = value(key) else {
            throw ProximaError(errorCode, "missing required member \"\(key)\" (\(expected))", jsonPath: path)
        }
        return v
    }

    public func fail(_ key: String, _ message: String) -> ProximaError {
        ProximaError(errorCode, message, jsonPath: path(of: key))
    }

    // MARK: Typed accessors

    public mutating func string(_ key: String, nonEmpty: Bool = true) throws -> String {
        try decodeString(required(key, expected: "a string"), at: path(of: key), nonEmpty: nonEmpty)
    }

    public mutating func optionalString(_ key: String, nonEmpty: Bool = true) throws -> String? {
        guard let v = value(key) else { return nil }
        return try decodeString(v, at: path(of: key), nonEmpty: nonEmpty)
    }

    public mutating func bool(_ key: String, default defaultValue: Bool) throws -> Bool {
        guard let v = value(key) else { return defaultValue }
        guard case .bool(let b) = v else { throw mismatch(v, "a boolean (true or false)", at: path(of: key)) }
        return b
    }

    public mutating func integer(_ key: String, in range: ClosedRange<Int64>) throws -> Int64 {
        try decodeInteger(
            required(key, expected: "an integer in \(range.lowerBound)…\(range.upperBound)"),
            at: path(of: key),
            in: range
        )
    }

    public mutating func optionalInteger(_ key: String, in range: ClosedRange<Int64>) throws -> Int64? {
        guard let v = value(key) else { return nil }
        return try decodeInteger(v, at: path(of: key), in: range)
    }

    public mutating func optionalNumber(_ key: String, in range: ClosedRange<Double>) throws -> Double? {
        guard let v = value(key) else { return nil }
        let d: Double
        switch v {
        case .integer(let i): d = Double(i)
        case .number(let n): d = n
        default: throw mismatch(v, "a number in \(range.lowerBound)…\(range.upperBound)", at: path(of: key))
        }
        guard range.contains(d) else {
            throw ProximaError(
                errorCode,
                "\(d) is out of range, expected \(range.lowerBound)…\(range.upperBound)",
                jsonPath: path(of: key)
            )
        }
        return d
    }

    /// An optional array; `each` decodes every element with its own path (`key[3]`).
    public mutating func optionalArray<T>(
        _ key: String,
        _ each: (JSONValue, String) throws -> T
    ) throws -> [T]? {
        guard let v = value(key) else { return nil }
        guard case .array(let elements) = v else { throw mismatch(v, "an array", at: path(of: key)) }
        return try elements.enumerated().map { try each($1, "\(path(of: key))[\($0)]") }
    }

    public mutating func array<T>(_ key: String, _ each: (JSONValue, String) throws -> T) throws -> [T] {
        _ = try required(key, expected: "an array")
        return try optionalArray(key, each) ?? []
    }

    /// A string that must be one of `allowed`.
    public mutating func optionalChoice(_ key: String, _ allowed: [String]) throws -> String? {
        guard let s = try optionalString(key) else { return nil }
        guard allowed.contains(s) else {
            throw ProximaError(
                errorCode,
                "\"\(s)\" is not one of \(allowed.map { "\"\($0)\"" }.joined(separator: ", "))",
                jsonPath: path(of: key)
            )
        }
        return s
    }

    /// Rejects members no accessor read.
    /// - Parameter allowedExtra: keys accepted without being read (e.g. `"$schema"`, `"comment"`).
    public func finish(allowing allowedExtra: Set<String> = ["comment", "$comment"]) throws {
        let unknown = members.map(\.key).filter { !used.contains($0) && !allowedExtra.contains($0) }
        guard let first = unknown.first else { return }
        let known = used.sorted().joined(separator: ", ")
        throw ProximaError(
            errorCode,
            "unknown member \"\(first)\"" + (known.isEmpty ? "" : " (known here: \(known))"),
            jsonPath: path(of: first)
        )
    }

    // MARK: Element decoders, usable for array elements too

    public func decodeString(_ v: JSONValue, at path: String, nonEmpty: Bool = true) throws -> String {
        guard case .string(let s) = v else { throw mismatch(v, "a string", at: path) }
        if nonEmpty && s.isEmpty { throw ProximaError(errorCode, "expected a non-empty string", jsonPath: path) }
        return s
    }

    public func decodeInteger(_ v: JSONValue, at path: String, in range: ClosedRange<Int64>) throws -> Int64 {
        guard case .integer(let i) = v else {
            throw mismatch(v, "an integer in \(range.lowerBound)…\(range.upperBound)", at: path)
        }
        guard range.contains(i) else {
            throw ProximaError(
                errorCode,
                "\(i) is out of range, expected \(range.lowerBound)…\(range.upperBound)",
                jsonPath: path
            )
        }
        return i
    }

    public func mismatch(_ v: JSONValue, _ expected: String, at path: String) -> ProximaError {
        ProximaError(errorCode, "expected \(expected), found \(v.typeName)", jsonPath: path)
    }
}
