import Synchronization

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// What a reader token must satisfy, shared by the payment and the ID verification services: an ES256 signature
/// under the server's key, `iss`, `exp` (required) and `nbf`/`iat` with ``clockSkew``, further required claims,
/// and an `aud` naming one of ``acceptedAudiences`` (`"*"` here is an ordinary value: a wildcard token is accepted
/// only where the list holds `"*"`).
///
/// Each service maps the ``JWTError`` codes onto its own errors and checks its own claims (the merchant id).
package struct ReaderTokenCheck: Sendable {
    /// The clock skew every reader token is allowed.
    package static let defaultClockSkew: Duration = .seconds(60)

    package var publicKey: P256.PublicKey
    package var issuer: String
    /// Every `aud` value accepted, the reader's own identifier first.
    package var acceptedAudiences: [String]
    /// Claims that must be present besides `exp`.
    package var requiredClaims: [String]
    package var clockSkew: Duration

    package init(
        publicKey: P256.PublicKey,
        issuer: String,
        acceptedAudiences: [String],
        requiredClaims: [String] = [],
        clockSkew: Duration = ReaderTokenCheck.defaultClockSkew
    ) {
        self.publicKey = publicKey
        self.issuer = issuer
        self.acceptedAudiences = acceptedAudiences
        self.requiredClaims = requiredClaims
        self.clockSkew = clockSkew
    }

    /// The verified claims of `token` at `now`.
    ///
    /// A token already verified under this check is not verified again (an ECDSA verification costs more than the
    /// rest of a read); only its time window is checked, and one outside it goes through the full verification,
    /// which names the reason.
    ///
    /// - Throws: ``JWTError``: `malformed` for an empty or unparsable token, `badSignature`, `missingClaim`,
    ///   `expired`, `notYetValid`, `wrongIssuer`, `wrongAudience`.
    package func verify(_ token: String, now: @escaping @Sendable () -> Date) throws(JWTError) -> JWTClaims {
        let text = String(token.drop(while: \.isWhitespace).reversed().drop(while: \.isWhitespace).reversed())
        let key = VerifiedTokenClaimsCache.Key(token: text, check: self)
        if let cached = VerifiedTokenClaimsCache.shared.entry(for: key), isCurrent(cached, at: now()) {
            return cached
        }
        let validator = JWTValidator(
            issuer: issuer,
            audience: [],
            requiredClaims: ["exp"] + requiredClaims,
            clockSkew: clockSkew,
            now: now
        )
        let claims: JWTClaims
        do {
            claims = try validator.validate(text, using: publicKey).claims
        } catch let error as JWTError {
            throw error
        } catch {
            throw JWTError(.malformedToken, "the token could not be verified: \(error)")
        }
        let audience = claims.audience ?? []
        guard audience.contains(where: acceptedAudiences.contains) else {
            throw JWTError(.wrongAudience, "token audience \(audience) names none of \(acceptedAudiences)")
        }
        VerifiedTokenClaimsCache.shared.store(claims, for: key)
        return claims
    }

    /// Whether `now` is inside the claims' validity window, with the clock skew either side.
    private func isCurrent(_ claims: JWTClaims, at now: Date) -> Bool {
        let skew = TimeInterval(clockSkew.components.seconds)
        let current = now.timeIntervalSince1970
        guard let expiresAt = claims.expiresAt, current < expiresAt.timeIntervalSince1970 + skew else { return false }
        let validFrom = [claims.notBefore, claims.issuedAt].compactMap { $0?.timeIntervalSince1970 }.max()
        if let validFrom, current < validFrom - skew { return false }
        return true
    }
}

/// Claims of tokens already verified, per token text and check.
///
/// Invariant: `entries` is only touched under its `Mutex`; it holds at most `capacity` tokens (cleared when full:
/// a kernel sees few distinct tokens, one per merchant session).
final class VerifiedTokenClaimsCache: Sendable {
    static let shared = VerifiedTokenClaimsCache()
    static let capacity = 256

    struct Key: Hashable, Sendable {
        var token: String
        var publicKey: [UInt8]
        var issuer: String
        var acceptedAudiences: [String]
        var requiredClaims: [String]
        var clockSkew: Duration

        init(token: String, check: ReaderTokenCheck) {
            self.token = token
            publicKey = check.publicKey.x963Representation
            issuer = check.issuer
            acceptedAudiences = check.acceptedAudiences
            requiredClaims = check.requiredClaims
            clockSkew = check.clockSkew
        }
    }

    private let entries = Mutex<[Key: JWTClaims]>([:])

    func entry(for key: Key) -> JWTClaims? { entries.withLock { $0[key] } }

    func store(_ claims: JWTClaims, for key: Key) {
        entries.withLock { entries in
            if entries.count >= Self.capacity { entries.removeAll(keepingCapacity: true) }
            entries[key] = claims
        }
    }
}
