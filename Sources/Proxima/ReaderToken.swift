import Foundation
import ProximaCore
public import ProximaCrypto
import Synchronization

extension PaymentCardReader {
    /// A processor-issued reader token (Apple's `PaymentCardReader.Token`): an ES256 JWT signed with the
    /// processor's key, naming the merchant and this kernel's reader identifier.
    ///
    /// Its description and reflection (`dump`) never show the token: it is a bearer credential.
    public struct Token: RawRepresentable, Hashable, Sendable, CustomStringConvertible, CustomReflectable {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { "PaymentCardReader.Token(\(rawValue.utf8.count) characters, redacted)" }
        public var customMirror: Mirror { Mirror(self, children: ["rawValue": "redacted"], displayStyle: .struct) }
    }
}

/// What a verified reader token says.
public struct VerifiedReaderToken: Hashable, Sendable {
    /// The merchant id from the manifest's `merchantIdClaim`.
    public var merchantID: String
    /// `iss`: the processor.
    public var issuer: String
    /// `aud`.
    public var audience: [String]
    /// `exp`.
    public var expiresAt: Date?
    /// The later of `nbf` and `iat`: before it (less the clock skew) the token is not valid yet.
    public var validFrom: Date? = nil
}

/// Tokens already verified, per token text and payment settings, so a read does not repeat the signature check.
///
/// Invariant: `entries` is only touched under its `Mutex`; it holds at most `capacity` tokens (cleared when full:
/// a kernel sees few distinct tokens, one per merchant session).
final class VerifiedTokenCache: Sendable {
    static let shared = VerifiedTokenCache()
    static let capacity = 256

    struct Key: Hashable, Sendable {
        var token: String
        var processorKey: [UInt8]
        var issuer: String
        var merchantIdClaim: String
        var audiences: [String]

        init(token: String, settings: PaymentSettings) {
            self.token = token
            processorKey = settings.processorPublicKey.x963Representation
            issuer = settings.tokenIssuer
            merchantIdClaim = settings.merchantIdClaim
            audiences = settings.acceptedAudiences
        }
    }

    private let entries = Mutex<[Key: VerifiedReaderToken]>([:])

    func entry(for key: Key) -> VerifiedReaderToken? { entries.withLock { $0[key] } }

    func store(_ token: VerifiedReaderToken, for key: Key) {
        entries.withLock { entries in
            if entries.count >= Self.capacity { entries.removeAll(keepingCapacity: true) }
            entries[key] = token
        }
    }
}

extension VerifiedReaderToken {
    /// Whether `now` is inside the token's validity window, with `skew` either side (as the verifier allows).
    func isCurrent(at now: Date, skew: Duration) -> Bool {
        let skewSeconds = TimeInterval(skew.components.seconds)
        guard let expiresAt, now.timeIntervalSince1970 <= expiresAt.timeIntervalSince1970 + skewSeconds else {
            return false
        }
        if let validFrom, now.timeIntervalSince1970 < validFrom.timeIntervalSince1970 - skewSeconds { return false }
        return true
    }
}

/// Verifies processor tokens against a manifest's payment settings: ES256 signature under the processor key,
/// `exp` and `nbf` (and `iat`) with 60 s of clock skew, `iss`, `aud`, and the merchant id claim.
struct ReaderTokenVerifier: Sendable {
    static let clockSkew: Duration = .seconds(60)

    var settings: PaymentSettings
    var now: @Sendable () -> Date

    /// - Throws: ``PaymentCardReaderError/emptyReaderToken(_:)``, ``PaymentCardReaderError/tokenExpired(_:)`` or
    ///   ``PaymentCardReaderError/invalidReaderToken(_:)`` (see `PaymentErrorMapping.tokenRefused`).
    func verify(_ token: PaymentCardReader.Token) throws(PaymentCardReaderError) -> VerifiedReaderToken {
        // Every read checks its token. A token already verified under these settings is not verified again (an
        // ECDSA verification costs more than the rest of a read); only its time window is checked, and a token
        // outside it goes through the full verification below, which names the reason.
        let key = VerifiedTokenCache.Key(token: token.rawValue, settings: settings)
        let current = now()
        if let cached = VerifiedTokenCache.shared.entry(for: key), cached.isCurrent(at: current, skew: Self.clockSkew) {
            return cached
        }
        let verified = try verifyFully(token)
        VerifiedTokenCache.shared.store(verified, for: key)
        return verified
    }

    private func verifyFully(_ token: PaymentCardReader.Token) throws(PaymentCardReaderError) -> VerifiedReaderToken {
        let text = token.rawValue.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !text.isEmpty else {
            throw .emptyReaderToken("the processor token is empty; ask the processor for a reader token")
        }
        let validator = JWTValidator(
            issuer: settings.tokenIssuer,
            audience: [],
            requiredClaims: ["exp", settings.merchantIdClaim],
            clockSkew: Self.clockSkew,
            now: now
        )
        let verified: JSONWebToken
        do {
            verified = try validator.validate(text, using: settings.processorPublicKey)
        } catch let error as JWTError {
            throw PaymentErrorMapping.tokenRefused(error, readerIdentifier: settings.readerIdentifier)
        } catch {
            throw .invalidReaderToken("the processor token could not be verified: \(error)")
        }
        // The audience: this reader's identifier or one the manifest allows. `"*"` is an ordinary value here, so
        // a wildcard token is accepted only where `allowedAudiences` lists "*".
        let audience = verified.claims.audience ?? []
        guard audience.contains(where: settings.acceptedAudiences.contains) else {
            throw PaymentErrorMapping.tokenRefused(
                JWTError(
                    .wrongAudience,
                    "token audience \(audience) names none of \(settings.acceptedAudiences) (capabilities.payment."
                        + "readerIdentifier and allowedAudiences)"
                ),
                readerIdentifier: settings.readerIdentifier
            )
        }
        guard case .string(let merchant)? = verified.claims[settings.merchantIdClaim],
            !merchant.trimmingCharacters(in: .whitespaces).isEmpty
        else {
            throw .invalidReaderToken(
                "the token's merchant id claim \"\(settings.merchantIdClaim)\" is not a non-empty string"
            )
        }
        return VerifiedReaderToken(
            merchantID: merchant,
            issuer: verified.claims.issuer ?? settings.tokenIssuer,
            audience: audience,
            expiresAt: verified.claims.expiresAt,
            validFrom: [verified.claims.notBefore, verified.claims.issuedAt].compactMap { $0 }.max()
        )
    }
}

/// Issues reader tokens as a payment processor would: for the `proxima psp token` sandbox, the example and tests.
///
/// Real processors issue tokens on their servers with their own key; this type exists so that integrators can run
/// the whole flow against the TEST key in `Config/keys` (or one from ``ProcessorKeyPair/generate()``).
public struct ReaderTokenIssuer: Sendable {
    public var privateKey: P256.PrivateKey
    /// `iss` of every token.
    public var issuer: String
    /// The claim that carries the merchant id.
    public var merchantIdClaim: String

    public init(privateKey: P256.PrivateKey, issuer: String, merchantIdClaim: String = "merchant_id") {
        self.privateKey = privateKey
        self.issuer = issuer
        self.merchantIdClaim = merchantIdClaim
    }

    /// An issuer whose key is the PEM private key (PKCS#8 or SEC 1, unencrypted) in `privateKeyFile`.
    /// - Throws: `ProximaError.invalidArgument` naming the file when it cannot be read or holds no P-256 key.
    public init(privateKeyFile: String, issuer: String, merchantIdClaim: String = "merchant_id") throws {
        self.init(
            privateKey: try ProcessorKeyPair.loadPrivateKey(privateKeyFile),
            issuer: issuer,
            merchantIdClaim: merchantIdClaim
        )
    }

    /// An issuer matching a manifest's payment settings (`tokenIssuer`, `merchantIdClaim`), signing with the
    /// private key in `privateKeyFile`.
    /// - Throws: `ProximaError.invalidArgument` when the file holds no P-256 private key, or one whose public key
    ///   is not the settings' `processorPublicKey` (tokens it made would all be refused).
    public init(settings: PaymentSettings, privateKeyFile: String) throws {
        let key = try ProcessorKeyPair.loadPrivateKey(privateKeyFile)
        guard key.publicKey == settings.processorPublicKey else {
            throw ProximaError(
                .invalidArgument,
                "\(privateKeyFile) is not the private key of \(settings.processorPublicKeyPath) "
                    + "(capabilities.payment.processorPublicKey); tokens it signs would be refused"
            )
        }
        self.init(privateKey: key, issuer: settings.tokenIssuer, merchantIdClaim: settings.merchantIdClaim)
    }

    /// A signed token.
    ///
    /// - Parameters:
    ///   - merchantID: The merchant id claim.
    ///   - audience: `aud`: the reader identifiers the token is for (or `["*"]`).
    ///   - lifetime: From `now` to `exp`.
    ///   - notBefore: `nbf`, when set.
    ///   - now: `iat`.
    /// - Throws: `ProximaError.invalidArgument` for an empty merchant id or audience.
    public func issue(
        merchantID: String,
        audience: [String],
        lifetime: Duration = .seconds(3600),
        notBefore: Date? = nil,
        now: Date = Date()
    ) throws -> PaymentCardReader.Token {
        guard !merchantID.isEmpty else { throw ProximaError(.invalidArgument, "the merchant id is empty") }
        guard !audience.isEmpty, !audience.contains("") else {
            throw ProximaError(.invalidArgument, "the token needs an audience: the reader identifier, or \"*\"")
        }
        let issuedAt = Int64(now.timeIntervalSince1970.rounded(.down))
        var claims: [(key: String, value: JSONValue)] = [
            ("iss", .string(issuer)),
            ("aud", audience.count == 1 ? .string(audience[0]) : .array(audience.map(JSONValue.string))),
            ("iat", .integer(issuedAt)),
            ("exp", .integer(issuedAt + lifetime.components.seconds)),
        ]
        if let notBefore { claims.append(("nbf", .integer(Int64(notBefore.timeIntervalSince1970.rounded(.down))))) }
        claims.append((merchantIdClaim, .string(merchantID)))
        let token = try JWTSigner(privateKey: privateKey).sign(claims: .object(claims))
        return PaymentCardReader.Token(rawValue: token)
    }
}

/// A processor key pair for the sandbox (`proxima psp keygen`): P-256, PEM.
public struct ProcessorKeyPair: Sendable {
    public var privateKey: P256.PrivateKey
    public var publicKey: P256.PublicKey { privateKey.publicKey }

    public init(privateKey: P256.PrivateKey) { self.privateKey = privateKey }

    /// A fresh key pair from the OS CSPRNG (through OpenSSL).
    public static func generate() throws -> ProcessorKeyPair { ProcessorKeyPair(privateKey: try P256.PrivateKey()) }

    /// The private key as unencrypted PKCS#8 PEM: keep it secret (file mode 0600).
    public func privateKeyPEM() throws -> String { try privateKey.pemRepresentation() }
    /// The public key as SubjectPublicKeyInfo PEM, for `capabilities.payment.processorPublicKey`.
    public var publicKeyPEM: String { publicKey.pemRepresentation }

    /// The P-256 private key in a PEM file.
    /// - Throws: `ProximaError.invalidArgument` naming the file.
    public static func loadPrivateKey(_ path: String) throws -> P256.PrivateKey {
        let data: [UInt8]
        do {
            data = try BoundedFile.read(path, limit: 64 * 1024)
        } catch {
            throw ProximaError(.invalidArgument, "cannot read the private key file \(path): \(error.reason)")
        }
        do {
            return try P256.PrivateKey(pemRepresentation: String(decoding: data, as: UTF8.self))
        } catch let error as CryptoError {
            throw ProximaError(.invalidArgument, "\(path) holds no P-256 private key: \(error.reason)")
        }
    }
}
