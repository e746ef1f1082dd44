internal import Foundation
package import PaymentCapability
public import Proxima
internal import ProximaCore
public import ProximaCrypto
internal import ProximaSystem

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
    package init(settings: PaymentSettings, privateKeyFile: String) throws {
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
            data = try SystemFile.read(path, limit: 64 * 1024)
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
