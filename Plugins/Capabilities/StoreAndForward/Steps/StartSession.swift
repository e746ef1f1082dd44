internal import Foundation
package import PaymentCapability
internal import ProximaCore

extension StoreAndForwardService {
    /// Starts an offline session for `token` (Apple: a store-and-forward session needs a prior online session).
    ///
    /// The token is verified and its merchant must be linked, as online. The processor counts as reached when it
    /// issued the token (`iat`/`nbf`) or the last deletion token; the later of the two must lie within
    /// `onlineWithinHours`. The session then reads for `sessionHours`.
    ///
    /// - Throws: ``StoreAndForwardError`` `notAllowed` (disabled, processor not reached recently, token or link
    ///   refused: the payment service's error is the cause), `storeFailed`.
    package func startSession(token: String) async throws(StoreAndForwardError) -> OfflineSession {
        try checkEnabled()
        let merchant: VerifiedReaderToken
        do {
            merchant = try payment.linkedMerchant(token)
        } catch {
            throw StoreAndForwardError(.notAllowed, error.reason, underlying: error)
        }
        return try await startSession(merchant: merchant)
    }

    /// Starts an offline session for a merchant verified earlier (the token the reader last prepared with).
    package func startSession(merchant: VerifiedReaderToken) async throws(StoreAndForwardError) -> OfflineSession {
        try checkEnabled()
        let current = now()
        let recorded = try await store.totals().lastProcessorContact
        let contact = [merchant.validFrom, recorded].compactMap { $0 }.max()
        let window = TimeInterval(settings.onlineWithin.components.seconds)
        guard let contact, current.timeIntervalSince(contact) <= window else {
            let hours = Int(window / 3600)
            let since = contact.map { "was last reached \(Int(current.timeIntervalSince($0) / 3600)) h ago" }
            throw StoreAndForwardError(
                .notAllowed,
                "the processor \(since ?? "was never reached by this store") and onlineWithinHours is \(hours): "
                    + "prepare an online session (a fresh reader token) first",
                limit: StoreAndForwardSettings.jsonPath + ".onlineWithinHours"
            )
        }
        if let validFrom = merchant.validFrom, validFrom <= current {
            try await store.recordProcessorContact(validFrom)
        }
        return OfflineSession(
            id: UUID().uuidString.lowercased(),
            merchant: merchant,
            preparedAt: current,
            expiresAt: current.addingTimeInterval(TimeInterval(settings.session.components.seconds))
        )
    }

    private func checkEnabled() throws(StoreAndForwardError) {
        guard settings.enabled else {
            throw StoreAndForwardError(
                .notAllowed,
                "store and forward is disabled (\(StoreAndForwardSettings.jsonPath).enabled is false)",
                limit: StoreAndForwardSettings.jsonPath + ".enabled"
            )
        }
    }
}
