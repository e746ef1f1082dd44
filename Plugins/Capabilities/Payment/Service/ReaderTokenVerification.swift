package import Foundation
package import ProximaCrypto

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

    /// Whether `now` is inside the token's validity window, with ``ReaderTokenVerifier/clockSkew`` either side: the
    /// window ``ReaderTokenVerifier/verify(_:)`` checked, so a token verified once needs no second verification
    /// while it holds.
    package func isCurrent(at now: Date) -> Bool {
        let skew = TimeInterval(ReaderTokenVerifier.clockSkew.components.seconds)
        let current = now.timeIntervalSince1970
        guard let expiresAt, current < expiresAt.timeIntervalSince1970 + skew else { return false }
        if let validFrom, current < validFrom.timeIntervalSince1970 - skew { return false }
        return true
    }
}

extension PaymentSettings {
    /// The token rules of these settings: the processor key, `tokenIssuer`, the accepted audiences and the
    /// merchant id claim, with 60 s of clock skew.
    package var tokenCheck: ReaderTokenCheck {
        ReaderTokenCheck(
            publicKey: processorPublicKey,
            issuer: tokenIssuer,
            acceptedAudiences: acceptedAudiences,
            requiredClaims: [merchantIdClaim]
        )
    }
}

/// Verifies processor tokens against a manifest's payment settings: the shared ``ProximaCrypto/ReaderTokenCheck``
/// (ES256 signature under the processor key, `exp`, `nbf`, `iat`, `iss`, `aud`), then the merchant id claim.
struct ReaderTokenVerifier: Sendable {
    static let clockSkew = ReaderTokenCheck.defaultClockSkew

    var settings: PaymentSettings
    var now: @Sendable () -> Date

    /// - Throws: ``PaymentServiceError`` `emptyToken`, `tokenExpired` or `invalidToken`, the `JWTError` as its
    ///   `underlying` error.
    func verify(_ token: String) throws(PaymentServiceError) -> VerifiedReaderToken {
        guard !token.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty else {
            throw PaymentServiceError(.emptyToken, "the processor token is empty; ask the processor for a reader token")
        }
        let claims: JWTClaims
        do {
            claims = try settings.tokenCheck.verify(token, now: now)
        } catch {
            throw refused(error)
        }
        guard case .string(let merchant)? = claims[settings.merchantIdClaim],
            !merchant.trimmingCharacters(in: .whitespaces).isEmpty
        else {
            throw PaymentServiceError(
                .invalidToken,
                "the token's merchant id claim \"\(settings.merchantIdClaim)\" is not a non-empty string"
            )
        }
        return VerifiedReaderToken(
            merchantID: merchant,
            issuer: claims.issuer ?? settings.tokenIssuer,
            audience: claims.audience ?? [],
            expiresAt: claims.expiresAt,
            validFrom: [claims.notBefore, claims.issuedAt].compactMap { $0 }.max()
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
        let hint =
            error.code == .wrongAudience ? " (capabilities.payment.readerIdentifier and allowedAudiences)" : ""
        return PaymentServiceError(
            .invalidToken,
            "the processor token was refused for reader \"\(settings.readerIdentifier)\": \(error.code): "
                + "\(error.reason)\(hint)",
            underlying: error
        )
    }
}
