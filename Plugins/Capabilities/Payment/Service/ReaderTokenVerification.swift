package import Foundation
internal import ProximaCrypto
internal import Synchronization

/// What a verified reader token says.
package struct VerifiedReaderToken: Hashable, Sendable {
    /// The merchant id from the manifest's `merchantIdClaim`.
    package var merchantID: String
    /// `iss`: the processor.
    package var issuer: String
    /// `aud`.
    package var audience: [String]
    /// `exp`.
    package var expiresAt: Date?
    /// The later of `nbf` and `iat`: before it (less the clock skew) the token is not valid yet.
    package var validFrom: Date? = nil
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

    /// - Throws: ``PaymentServiceError`` `emptyToken`, `tokenExpired` or `invalidToken`, the `JWTError` as its
    ///   `underlying` error.
    func verify(_ token: String) throws(PaymentServiceError) -> VerifiedReaderToken {
        // Every read checks its token. A token already verified under these settings is not verified again (an
        // ECDSA verification costs more than the rest of a read); only its time window is checked, and a token
        // outside it goes through the full verification below, which names the reason.
        let key = VerifiedTokenCache.Key(token: token, settings: settings)
        let current = now()
        if let cached = VerifiedTokenCache.shared.entry(for: key), cached.isCurrent(at: current, skew: Self.clockSkew) {
            return cached
        }
        let verified = try verifyFully(token)
        VerifiedTokenCache.shared.store(verified, for: key)
        return verified
    }

    private func verifyFully(_ token: String) throws(PaymentServiceError) -> VerifiedReaderToken {
        let text = token.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !text.isEmpty else {
            throw PaymentServiceError(.emptyToken, "the processor token is empty; ask the processor for a reader token")
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
            throw refused(error)
        } catch {
            throw PaymentServiceError(
                .invalidToken,
                "the processor token could not be verified: \(error)",
                underlying: error
            )
        }
        // The audience: this reader's identifier or one the manifest allows. `"*"` is an ordinary value here, so
        // a wildcard token is accepted only where `allowedAudiences` lists "*".
        let audience = verified.claims.audience ?? []
        guard audience.contains(where: settings.acceptedAudiences.contains) else {
            throw refused(
                JWTError(
                    .wrongAudience,
                    "token audience \(audience) names none of \(settings.acceptedAudiences) (capabilities.payment."
                        + "readerIdentifier and allowedAudiences)"
                )
            )
        }
        guard case .string(let merchant)? = verified.claims[settings.merchantIdClaim],
            !merchant.trimmingCharacters(in: .whitespaces).isEmpty
        else {
            throw PaymentServiceError(
                .invalidToken,
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

    /// A refused token: `tokenExpired` for `exp`, `invalidToken` for everything else, with the JWT error kept.
    private func refused(_ error: JWTError) -> PaymentServiceError {
        if error.code == .expired {
            return PaymentServiceError(
                .tokenExpired,
                "the processor token has expired (\(error.reason)); ask the processor for a new one",
                underlying: error
            )
        }
        return PaymentServiceError(
            .invalidToken,
            "the processor token was refused for reader \"\(settings.readerIdentifier)\": \(error.code): \(error.reason)",
            underlying: error
        )
    }
}
