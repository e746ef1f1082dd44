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
    ///
    /// A processor contact counts only when it was recorded during the current boot (Apple: the session needs
    /// an online session since the device last started): the merchant's token, verified in this process, and the
    /// store's contacts recorded under the same boot id. The session is recorded with the boot id; its reads
    /// are refused after a restart.
    package func startSession(merchant: VerifiedReaderToken) async throws(StoreAndForwardError) -> OfflineSession {
        try checkEnabled()
        let current = now()
        let boot = try currentBoot()
        let recorded = try await store.processorContact(bootID: boot)
        let contact = [merchant.validFrom, recorded].compactMap { $0 }.max()
        let window = TimeInterval(settings.onlineWithin.components.seconds)
        guard let contact, current.timeIntervalSince(contact) <= window else {
            let hours = Int(window / 3600)
            let since = contact.map { "was last reached \(Int(current.timeIntervalSince($0) / 3600)) h ago" }
            let restarted =
                try await store.totals().lastProcessorContact != nil && recorded == nil
                ? " (contacts recorded before the host last restarted do not count)" : ""
            throw StoreAndForwardError(
                .notAllowed,
                "the processor \(since ?? "was never reached by this store")\(restarted) and onlineWithinHours is "
                    + "\(hours): prepare an online session (a fresh reader token) first",
                limit: StoreAndForwardSettings.jsonPath + ".onlineWithinHours"
            )
        }
        if let validFrom = merchant.validFrom, validFrom <= current {
            try await store.recordProcessorContact(validFrom, bootID: boot)
        }
        let session = OfflineSession(
            id: RandomUUID.lowercasedString(),
            merchant: merchant,
            preparedAt: current,
            expiresAt: current.addingTimeInterval(TimeInterval(settings.session.components.seconds)),
            bootID: boot
        )
        try await store.recordSession(
            ReadStore.SessionRecord(
                id: session.id,
                bootID: boot,
                preparedAt: session.preparedAt,
                expiresAt: session.expiresAt
            )
        )
        return session
    }

    /// The session's expiry and read count as the store records them (Apple's `status()`): reads this session
    /// stored, declined ones not counted; reads forwarded and resolved since still count.
    /// - Throws: `sessionInvalidated` when the store has no record of it.
    package func status(of session: OfflineSession) async throws(StoreAndForwardError) -> ReadStore.SessionRecord {
        guard let record = try await store.session(session.id) else {
            throw StoreAndForwardError(
                .sessionInvalidated,
                "offline session \(session.id) is not recorded in the store"
            )
        }
        return record
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
