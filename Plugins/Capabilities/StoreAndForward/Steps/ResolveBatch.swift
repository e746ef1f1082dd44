package import Foundation
package import PaymentCapability
internal import ProximaCore
package import ProximaCrypto

/// Verifies the processor's deletion token for a batch: an ES256 JWT (`Docs/store-and-forward-batch.md` §6)
/// signed with the processor key of `capabilities.payment.processorPublicKey`, `iss` the token issuer, `aud` this
/// kernel's reader identifier, `exp` not passed, and claims `jti`, `batch_id` and `batch_digest` (base64url of the
/// batch container's SHA-256, no padding).
package struct DeletionTokenVerifier: Sendable {
    package var processorKey: P256.PublicKey
    package var issuer: String
    package var readerIdentifier: String
    package var now: @Sendable () -> Date

    package static let clockSkew: Duration = .seconds(60)

    package init(
        processorKey: P256.PublicKey,
        issuer: String,
        readerIdentifier: String,
        now: @escaping @Sendable () -> Date
    ) {
        self.processorKey = processorKey
        self.issuer = issuer
        self.readerIdentifier = readerIdentifier
        self.now = now
    }

    package init(settings: PaymentSettings, now: @escaping @Sendable () -> Date) {
        processorKey = settings.processorPublicKey
        issuer = settings.tokenIssuer
        readerIdentifier = settings.readerIdentifier
        self.now = now
    }

    /// - Throws: ``StoreAndForwardError`` `deletionTokenExpired`, or `deletionTokenInvalid` naming the check that
    ///   failed (the `JWTError` as its cause).
    package func verify(_ token: String) throws(StoreAndForwardError) -> VerifiedDeletionToken {
        let text = token.trimmingCharacters(in: .whitespacesAndNewlines)
        let validator = JWTValidator(
            issuer: issuer,
            audience: [readerIdentifier],
            requiredClaims: ["exp", "iat", "jti", "batch_id", "batch_digest"],
            clockSkew: Self.clockSkew,
            now: now
        )
        let verified: JSONWebToken
        do {
            verified = try validator.validate(text, using: processorKey)
        } catch let error as JWTError where error.code == .expired {
            throw StoreAndForwardError(
                .deletionTokenExpired,
                "the deletion token has expired (\(error.reason)); ask the processor for a new one; nothing deleted",
                underlying: error
            )
        } catch {
            throw StoreAndForwardError(
                .deletionTokenInvalid,
                "the deletion token is not the processor's: \(error); nothing deleted",
                underlying: error
            )
        }
        guard case .string(let tokenID)? = verified.claims["jti"], !tokenID.isEmpty,
            case .string(let batchID)? = verified.claims["batch_id"], !batchID.isEmpty,
            case .string(let digestText)? = verified.claims["batch_digest"],
            let digest = Base64.urlDecode(digestText), digest.count == 32,
            let issuedAt = verified.claims.issuedAt
        else {
            throw StoreAndForwardError(
                .deletionTokenInvalid,
                "the deletion token's jti, batch_id or batch_digest (base64url of 32 bytes) is malformed; "
                    + "nothing deleted"
            )
        }
        return VerifiedDeletionToken(tokenID: tokenID, batchID: batchID, digest: digest, issuedAt: issuedAt, raw: text)
    }
}

extension StoreAndForwardService {
    package var deletionTokenVerifier: DeletionTokenVerifier {
        DeletionTokenVerifier(settings: payment.settings, now: now)
    }

    /// Deletes the active batch with the processor's deletion token for it (Apple's `resolveBatch`).
    /// - Returns: How many reads remain stored.
    /// - Throws: ``StoreAndForwardError`` `deletionTokenInvalid` (forged, altered, another batch, replayed, wrong
    ///   digest), `deletionTokenExpired`, `batchNotFound`; nothing is deleted then.
    package func resolve(deletionToken token: String) async throws(StoreAndForwardError) -> Int {
        let verified = try deletionTokenVerifier.verify(token)
        return try await store.resolve(verified, now: now(), bootID: try currentBoot())
    }

    /// Verifies the processor's deletion token and records it with the active batch, to delete it later through the
    /// batch's handle (the sketch's `store.delete(using: batch.deletionToken)`).
    package func recordDeletionToken(_ token: String) async throws(StoreAndForwardError) {
        try await store.recordDeletionToken(try deletionTokenVerifier.verify(token))
    }

    /// Deletes batch `batchID` through its handle: with the processor's token recorded for it; in the weaker
    /// `deletionTokens: "app"` mode, on the app's word when none was recorded.
    /// - Returns: How many reads remain stored.
    /// - Throws: `deletionTokenInvalid` when no processor token was recorded (processor mode) — nothing deleted;
    ///   the errors of ``resolve(deletionToken:)``.
    package func delete(batchID: String) async throws(StoreAndForwardError) -> Int {
        guard let active = try await store.activeBatch(), active.id == batchID else {
            throw StoreAndForwardError(.batchNotFound, "batch \(batchID) is not the active batch; nothing deleted")
        }
        if let recorded = active.deletionToken { return try await resolve(deletionToken: recorded) }
        guard settings.deletionTokens == .app else {
            throw StoreAndForwardError(
                .deletionTokenInvalid,
                "no processor deletion token is recorded for batch \(batchID): send batch.data to the processor and "
                    + "record its token (recordDeletionToken) first, or set \(StoreAndForwardSettings.jsonPath)."
                    + "deletionTokens to \"app\"; nothing deleted"
            )
        }
        return try await store.resolve(
            VerifiedDeletionToken(
                tokenID: "app:" + batchID,
                batchID: batchID,
                digest: active.digest,
                issuedAt: active.createdAt,
                raw: ""
            ),
            now: now(),
            bootID: try currentBoot()
        )
    }
}
