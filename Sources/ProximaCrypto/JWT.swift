import ProximaCore

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Why a JSON Web Token was refused. Only the ``code`` takes part in equality; ``Code/missingClaim(_:)`` carries
/// the claim's name, so `JWTError(.missingClaim("exp"))` and `JWTError(.missingClaim("aud"))` differ.
public struct JWTError: Error, Hashable, Sendable, CustomStringConvertible {
    public let code: Code
    public let reason: String

    public init(_ code: Code, _ reason: String = "") {
        self.code = code
        self.reason = reason
    }

    public var description: String { reason.isEmpty ? "\(code)" : "\(code): \(reason)" }

    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.code == rhs.code }
    public func hash(into hasher: inout Hasher) { hasher.combine(code) }

    /// A stable error code. Compare codes, never reasons.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Backing: Hashable, Sendable {
            case malformedToken, algorithmNotAllowed, invalidSignature, expired, notYetValid
            case wrongIssuer, wrongAudience
            case missingClaim(String)
        }
        private let backing: Backing
        private init(_ backing: Backing) { self.backing = backing }

        public var description: String {
            switch backing {
            case .malformedToken: "malformedToken"
            case .algorithmNotAllowed: "algorithmNotAllowed"
            case .invalidSignature: "invalidSignature"
            case .expired: "expired"
            case .notYetValid: "notYetValid"
            case .wrongIssuer: "wrongIssuer"
            case .wrongAudience: "wrongAudience"
            case .missingClaim(let name): "missingClaim(\(name))"
            }
        }

        /// The name of the missing claim for ``missingClaim(_:)``, else `nil`.
        public var claimName: String? {
            if case .missingClaim(let name) = backing { return name }
            return nil
        }

        /// Not a compact JWS of three base64url parts with a JSON object header (with `alg`) and a JSON object
        /// payload, or a registered claim or header parameter of the wrong type, or an unsupported `crit`.
        public static let malformedToken = Code(.malformedToken)
        /// The header's `alg` is not `ES256`: `none`, `HS256` and every other algorithm are refused outright, so a
        /// public key can never be used as an HMAC secret.
        public static let algorithmNotAllowed = Code(.algorithmNotAllowed)
        /// The ES256 signature is not 64 bytes or does not verify under the key.
        public static let invalidSignature = Code(.invalidSignature)
        /// `exp` has passed (beyond the allowed clock skew).
        public static let expired = Code(.expired)
        /// `nbf` or `iat` lies in the future (beyond the allowed clock skew).
        public static let notYetValid = Code(.notYetValid)
        /// `iss` is not the expected issuer.
        public static let wrongIssuer = Code(.wrongIssuer)
        /// No value of `aud` is an accepted audience.
        public static let wrongAudience = Code(.wrongAudience)
        /// A claim the validator requires is absent.
        public static func missingClaim(_ name: String) -> Code { Code(.missingClaim(name)) }
    }
}

// MARK: - Parsing and verifying

/// A JSON Web Token (RFC 7519) in JWS compact serialization (RFC 7515 §7.1), parsed but not yet trusted.
///
/// Parsing checks structure only. ``verifySignature(using:)`` checks the algorithm and signature, and
/// ``JWTValidator`` adds the claims; use the validator unless you check claims yourself.
public struct JSONWebToken: Sendable {
    /// The longest compact token accepted, in bytes.
    public static let maximumLength = 32 * 1024

    /// The JOSE header.
    public let header: JSONValue
    /// The claims set (the payload).
    public let claims: JWTClaims
    /// The header's `alg`.
    public let algorithm: String
    /// The header's `typ`, if present.
    public let type: String?
    /// The header's `kid`, if present.
    public let keyID: String?
    /// `BASE64URL(header) "." BASE64URL(payload)`: the bytes the signature covers.
    public let signingInput: [UInt8]
    /// The decoded signature (64 bytes `r || s` for a well-formed ES256 token; empty for `alg: none`).
    public let signature: [UInt8]

    /// Parses a compact token `header.payload.signature`.
    ///
    /// - Throws: ``JWTError/Code/malformedToken`` unless there are exactly three parts, each strict unpadded
    ///   base64url, the header a JSON object with a string `alg` (and string `typ` and `kid` when present, and no
    ///   `crit`), and the payload a JSON object whose registered claims have their RFC 7519 types.
    public init(compactSerialization token: String) throws {
        let bytes = Array(token.utf8)
        guard bytes.count <= Self.maximumLength else {
            throw JWTError(.malformedToken, "token of \(bytes.count) bytes exceeds \(Self.maximumLength)")
        }
        let parts = bytes.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard parts.count == 3 else {
            throw JWTError(.malformedToken, "compact JWS has \(parts.count) parts separated by '.'; expected 3")
        }
        guard let headerBytes = Base64.urlDecode(String(decoding: parts[0], as: UTF8.self)), !headerBytes.isEmpty
        else { throw JWTError(.malformedToken, "JWS header is not unpadded base64url") }
        guard let payloadBytes = Base64.urlDecode(String(decoding: parts[1], as: UTF8.self)), !payloadBytes.isEmpty
        else { throw JWTError(.malformedToken, "JWS payload is not unpadded base64url") }
        guard let signature = Base64.urlDecode(String(decoding: parts[2], as: UTF8.self)) else {
            throw JWTError(.malformedToken, "JWS signature is not unpadded base64url")
        }

        let header = try Self.parseObject(headerBytes, "JWS header")
        guard case .string(let algorithm)? = header["alg"] else {
            throw JWTError(.malformedToken, "JWS header has no string \"alg\"")
        }
        let type = try Self.optionalString(header, "typ")
        let keyID = try Self.optionalString(header, "kid")
        // RFC 7515 §4.1.11: extensions listed in "crit" must be understood; this implementation understands none.
        guard header["crit"] == nil else {
            throw JWTError(.malformedToken, "JWS header lists critical extensions (\"crit\"), which are not supported")
        }

        self.header = header
        self.algorithm = algorithm
        self.type = type
        self.keyID = keyID
        self.claims = try JWTClaims(json: try Self.parseObject(payloadBytes, "JWT claims set"))
        self.signingInput = Array(parts[0]) + [UInt8(ascii: ".")] + Array(parts[1])
        self.signature = signature
    }

    private static func parseObject(_ bytes: [UInt8], _ what: String) throws -> JSONValue {
        let value: JSONValue
        do {
            value = try JSONValue.parse(bytes, limits: JSONValue.Limits(maxDepth: 32, maxBytes: maximumLength))
        } catch {
            throw JWTError(.malformedToken, "\(what) is not JSON: \(error)")
        }
        guard case .object = value else {
            throw JWTError(.malformedToken, "\(what) is a JSON \(value.typeName); expected an object")
        }
        return value
    }

    private static func optionalString(_ header: JSONValue, _ name: String) throws -> String? {
        switch header[name] {
        case nil: return nil
        case .string(let value)?: return value
        case let other?:
            throw JWTError(.malformedToken, "JWS header \"\(name)\" is a \(other.typeName); expected a string")
        }
    }

    /// Checks that the token is ES256 (RFC 7518 §3.4) and that its signature verifies under `key`.
    ///
    /// - Throws: ``JWTError/Code/algorithmNotAllowed`` for any `alg` other than `ES256` (checked first, so no other
    ///   algorithm ever reaches a verifier); ``JWTError/Code/invalidSignature`` when the signature is not 64 bytes
    ///   or does not verify.
    public func verifySignature(using key: P256.PublicKey) throws {
        guard algorithm == "ES256" else {
            throw JWTError(.algorithmNotAllowed, "JWS alg \"\(algorithm)\" is not allowed; only ES256 is accepted")
        }
        guard let signature = try? P256.ECDSASignature(rawRepresentation: signature) else {
            throw JWTError(.invalidSignature, "ES256 signature of \(signature.count) bytes; expected 64 (r||s)")
        }
        guard key.isValidSignature(signature, for: signingInput) else {
            throw JWTError(.invalidSignature, "ES256 signature does not verify under the key")
        }
    }
}

/// A JWT claims set (RFC 7519 §4) with typed access to the registered claims, whose types are checked when parsed.
public struct JWTClaims: Sendable {
    /// The whole claims set, a JSON object.
    public let json: JSONValue
    /// `iss`.
    public let issuer: String?
    /// `sub`.
    public let subject: String?
    /// `aud`, a single string given as a one-element array.
    public let audience: [String]?
    /// `exp`.
    public let expiresAt: Date?
    /// `nbf`.
    public let notBefore: Date?
    /// `iat`.
    public let issuedAt: Date?
    /// `jti`.
    public let id: String?

    /// Any claim by name.
    public subscript(name: String) -> JSONValue? { json[name] }

    /// Reads the registered claims of a claims set.
    /// - Throws: ``JWTError/Code/malformedToken`` when `json` is not an object or a registered claim has the wrong
    ///   type (`exp`, `nbf`, `iat` numbers; `iss`, `sub`, `jti` strings; `aud` a string or an array of strings).
    public init(json: JSONValue) throws {
        guard case .object = json else {
            throw JWTError(.malformedToken, "JWT claims set is a JSON \(json.typeName); expected an object")
        }
        func string(_ name: String) throws -> String? {
            switch json[name] {
            case nil: return nil
            case .string(let value)?: return value
            case let other?:
                throw JWTError(.malformedToken, "claim \"\(name)\" is a \(other.typeName); expected a string")
            }
        }
        func date(_ name: String) throws -> Date? {
            switch json[name] {
            case nil: return nil
            case .integer(let seconds)?: return Date(timeIntervalSince1970: Double(seconds))
            case .number(let seconds)?: return Date(timeIntervalSince1970: seconds)
            case let other?:
                throw JWTError(.malformedToken, "claim \"\(name)\" is a \(other.typeName); expected a NumericDate")
            }
        }
        self.json = json
        issuer = try string("iss")
        subject = try string("sub")
        id = try string("jti")
        expiresAt = try date("exp")
        notBefore = try date("nbf")
        issuedAt = try date("iat")
        switch json["aud"] {
        case nil: audience = nil
        case .string(let value)?: audience = [value]
        case .array(let values)?:
            audience = try values.map {
                guard case .string(let value) = $0 else {
                    throw JWTError(.malformedToken, "claim \"aud\" holds a \($0.typeName); expected strings")
                }
                return value
            }
        case let other?:
            throw JWTError(.malformedToken, "claim \"aud\" is a \(other.typeName); expected a string or array")
        }
    }
}

// MARK: - Issuing

/// Issues ES256 JWTs (RFC 7515 compact serialization, RFC 7518 §3.4 signatures).
public struct JWTSigner: Sendable {
    public let privateKey: P256.PrivateKey
    /// The `kid` put in each header, if any.
    public let keyID: String?

    public init(privateKey: P256.PrivateKey, keyID: String? = nil) {
        self.privateKey = privateKey
        self.keyID = keyID
    }

    /// A signed token carrying `claims`.
    ///
    /// - Parameters:
    ///   - claims: The claims set, a JSON object (NumericDates as integers of seconds since 1970).
    ///   - type: The header's `typ`; `nil` leaves it out.
    /// - Throws: `ProximaError.invalidArgument` when `claims` is not an object or a registered claim has the wrong
    ///   type; ``CryptoError/Code/libraryFailure`` if signing fails.
    public func sign(claims: JSONValue, type: String? = "JWT") throws -> String {
        do {
            _ = try JWTClaims(json: claims)
        } catch let error as JWTError {
            throw ProximaError(.invalidArgument, "cannot issue a JWT: \(error.reason)")
        }
        var header: [(key: String, value: JSONValue)] = [("alg", .string("ES256"))]
        if let type { header.append(("typ", .string(type))) }
        if let keyID { header.append(("kid", .string(keyID))) }
        let signingInput =
            Base64.urlEncode(Array(JSONValue.object(header).jsonText.utf8)) + "."
            + Base64.urlEncode(Array(claims.jsonText.utf8))
        let signature = try privateKey.signature(for: Array(signingInput.utf8))
        return signingInput + "." + Base64.urlEncode(signature.rawRepresentation)
    }
}

// MARK: - Validating

/// Verifies an ES256 JWT and checks its claims (RFC 7519 §4.1, §7.2).
///
/// Checks, in order: structure, `alg` (only `ES256`), the signature, the required claims, `exp`, `nbf` and `iat`
/// against ``now`` with ``clockSkew`` of tolerance, `iss`, and `aud`. Each failure has its own ``JWTError`` code.
public struct JWTValidator: Sendable {
    /// The required `iss`; `nil` does not check it.
    public var issuer: String?
    /// The accepted audiences: the token's `aud` must hold one of them. Empty does not check `aud`; `"*"` accepts
    /// any audience but still requires the token to name one. A `"*"` inside the token matches nothing special.
    public var audience: [String]
    /// Claims that must be present, whatever their value.
    public var requiredClaims: [String]
    /// Tolerance for clocks that disagree, applied to `exp`, `nbf` and `iat`.
    public var clockSkew: Duration
    /// The current time.
    public var now: @Sendable () -> Date

    public init(
        issuer: String? = nil,
        audience: [String] = [],
        requiredClaims: [String] = ["exp"],
        clockSkew: Duration = .seconds(60),
        now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.issuer = issuer
        self.audience = audience
        self.requiredClaims = requiredClaims
        self.clockSkew = clockSkew
        self.now = now
    }

    /// Parses `token`, verifies its ES256 signature under `key` and validates its claims.
    /// - Returns: The verified token.
    /// - Throws: ``JWTError`` with the code of the first check that failed.
    @discardableResult
    public func validate(_ token: String, using key: P256.PublicKey) throws -> JSONWebToken {
        let parsed = try JSONWebToken(compactSerialization: token)
        try parsed.verifySignature(using: key)
        try validateClaims(parsed.claims)
        return parsed
    }

    /// Validates the claims of a token whose signature was already verified.
    /// - Throws: ``JWTError`` with code `missingClaim`, `expired`, `notYetValid`, `wrongIssuer` or `wrongAudience`.
    public func validateClaims(_ claims: JWTClaims) throws {
        for name in requiredClaims where claims[name] == nil {
            throw JWTError(.missingClaim(name), "JWT lacks the required claim \"\(name)\"")
        }
        let current = now().timeIntervalSince1970
        let skew = Double(clockSkew.components.seconds) + Double(clockSkew.components.attoseconds) * 1e-18
        if let expiresAt = claims.expiresAt, current >= expiresAt.timeIntervalSince1970 + skew {
            throw JWTError(.expired, "JWT expired at \(expiresAt.timeIntervalSince1970) (now \(current))")
        }
        if let notBefore = claims.notBefore, current < notBefore.timeIntervalSince1970 - skew {
            throw JWTError(.notYetValid, "JWT is not valid before \(notBefore.timeIntervalSince1970) (now \(current))")
        }
        if let issuedAt = claims.issuedAt, issuedAt.timeIntervalSince1970 > current + skew {
            throw JWTError(.notYetValid, "JWT was issued in the future, at \(issuedAt.timeIntervalSince1970)")
        }
        if let issuer {
            guard let actual = claims.issuer else { throw JWTError(.missingClaim("iss"), "JWT has no \"iss\"") }
            guard actual == issuer else {
                throw JWTError(.wrongIssuer, "JWT issuer \"\(actual)\" is not the expected \"\(issuer)\"")
            }
        }
        if !audience.isEmpty {
            guard let actual = claims.audience else { throw JWTError(.missingClaim("aud"), "JWT has no \"aud\"") }
            let accepted = audience.contains("*") ? !actual.isEmpty : actual.contains { audience.contains($0) }
            guard accepted else {
                throw JWTError(.wrongAudience, "JWT audience \(actual) holds none of \(audience)")
            }
        }
    }
}
