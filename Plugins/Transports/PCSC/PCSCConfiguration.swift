public import ProximaCore

/// The `config` object of a PC/SC transport plugin in the manifest. Every member is optional:
///
/// ```json
/// {
///   "readerNames": ["ACS ACR1252 * PICC *", "Virtual PCD 00 0?"],
///   "exclusive": false,
///   "readerIDPrefix": "pcsc/",
///   "extendedLength": "auto"
/// }
/// ```
///
/// - `readerNames`: glob patterns over PC/SC reader names (`*` any run of characters, `?` one character, `\`
///   escapes the next one); only matching readers are used. Omitted: every reader pcscd reports. An empty list
///   is refused, since it would select nothing.
/// - `exclusive`: connect with `SCARD_SHARE_EXCLUSIVE`, so no other PC/SC client can use a card while Proxima
///   holds it. Default `false` (`SCARD_SHARE_SHARED`, with a PC/SC transaction held for the whole connection).
/// - `readerIDPrefix`: what reader ids start with; a reader's id is this prefix followed by its PC/SC name.
///   Default: the plugin id and `/` (`pcsc/Virtual PCD 00 00`). May be empty.
/// - `extendedLength`: `"auto"` (default) assumes readers take extended-length APDUs and falls back to short
///   APDUs on a connection whose first extended APDU is refused; `"always"` never falls back; `"never"` reports
///   every reader as short-only, so ``ProximaCore/CardChannel/transceive(_:options:)`` chains commands and uses
///   GET RESPONSE instead.
public struct PCSCConfiguration: Hashable, Sendable {
    /// How a transport finds out whether a reader takes extended-length APDUs.
    public enum ExtendedLength: String, Hashable, Sendable, CaseIterable {
        /// Assume yes; fall back to short APDUs for the rest of a connection when its first extended APDU is
        /// refused (a PC/SC transport error, or `6700`).
        case auto
        /// Assume yes and never fall back.
        case always
        /// Short APDUs only.
        case never
    }

    /// Glob patterns over reader names; empty selects every reader.
    public var readerNames: [String]
    /// Whether connections use `SCARD_SHARE_EXCLUSIVE`.
    public var exclusive: Bool
    /// The prefix of reader ids; `nil` means the plugin id and `/`.
    public var readerIDPrefix: String?
    public var extendedLength: ExtendedLength

    public init(
        readerNames: [String] = [],
        exclusive: Bool = false,
        readerIDPrefix: String? = nil,
        extendedLength: ExtendedLength = .auto
    ) {
        self.readerNames = readerNames
        self.exclusive = exclusive
        self.readerIDPrefix = readerIDPrefix
        self.extendedLength = extendedLength
    }

    /// Reads the plugin's `config` object; unknown members are errors.
    ///
    /// - Parameters:
    ///   - json: the `config` value.
    ///   - path: its JSON path in the manifest (`plugins[1].config`), for error messages.
    /// - Throws: `ProximaError.invalidManifest` naming the JSON path and what was expected.
    public init(json: JSONValue, path: String) throws {
        var object = try StrictObject(json, at: path, errorCode: .invalidManifest)
        let decoder = object
        let readerNames = try object.optionalArray("readerNames") { value, elementPath in
            try decoder.decodeString(value, at: elementPath)
        }
        if let readerNames, readerNames.isEmpty {
            throw object.fail(
                "readerNames",
                "expected at least one reader name pattern (omit \"readerNames\" to use every reader)"
            )
        }
        self.readerNames = readerNames ?? []
        exclusive = try object.bool("exclusive", default: false)
        readerIDPrefix = try object.optionalString("readerIDPrefix", nonEmpty: false)
        let choices = ExtendedLength.allCases.map(\.rawValue)
        let extendedLength = try object.optionalChoice("extendedLength", choices)
        self.extendedLength = extendedLength.flatMap(ExtendedLength.init(rawValue:)) ?? .auto
        try object.finish()
    }

    /// Whether the reader called `name` is selected by ``readerNames``.
    public func selects(readerNamed name: String) -> Bool {
        readerNames.isEmpty || readerNames.contains { ReaderNamePattern.matches(name, pattern: $0) }
    }
}

/// Glob matching of reader names: `*` matches any run of characters (also none), `?` exactly one, `\` makes the
/// next character literal. Everything else matches itself; matching is by Unicode scalar and case-sensitive.
enum ReaderNamePattern {
    static func matches(_ name: String, pattern: String) -> Bool {
        let text = Array(name.unicodeScalars)
        let tokens = tokenize(pattern)
        // Iterative matcher with one backtrack point (the last `*`): linear in practice, never exponential.
        var t = 0
        var p = 0
        var starToken: Int? = nil
        var starText = 0
        while t < text.count {
            if p < tokens.count, tokens[p] == .one || tokens[p] == .literal(text[t]) {
                t += 1
                p += 1
            } else if p < tokens.count, tokens[p] == .any {
                starToken = p
                starText = t
                p += 1
            } else if let star = starToken {
                p = star + 1
                starText += 1
                t = starText
            } else {
                return false
            }
        }
        while p < tokens.count, tokens[p] == .any { p += 1 }
        return p == tokens.count
    }

    private enum Token: Equatable {
        case literal(Unicode.Scalar)
        case one
        case any
    }

    private static func tokenize(_ pattern: String) -> [Token] {
        var tokens: [Token] = []
        var escaped = false
        for scalar in pattern.unicodeScalars {
            if escaped {
                tokens.append(.literal(scalar))
                escaped = false
                continue
            }
            switch scalar {
            case "\\": escaped = true
            case "*": if tokens.last != .any { tokens.append(.any) }
            case "?": tokens.append(.one)
            default: tokens.append(.literal(scalar))
            }
        }
        if escaped { tokens.append(.literal("\\")) }
        return tokens
    }
}
