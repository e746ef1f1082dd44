internal import Foundation
package import PaymentCapability
internal import ProximaCore
internal import ProximaCrypto

extension StoreAndForwardService {
    /// Reads a card offline and stores it: the checks before the tap, the payment read (sealed to the processor
    /// inside the tap, valid for `storedReadValidityHours`), the card's brand and expiry, then the record signed by
    /// the store key and committed with the count and totals checked again in the same transaction.
    ///
    /// A read refused after the tap (brand, expiry, effective date, a limit another lane reached meanwhile) is not stored, and its
    /// envelope is dropped: nothing of it reaches the processor.
    ///
    /// - Returns: The stored read, with the store's totals after it.
    /// - Throws: ``StoreAndForwardError`` (`sessionExpired`, `limitExceeded`, `storeFailed`, `busy`), or what the
    ///   payment read throws (``PaymentServiceError``, ``PaymentReadFailure``, the kernel's and capability's errors).
    package func read(
        _ order: PaymentOrder,
        session: OfflineSession,
        slot: PaymentReadSlot,
        owner: ObjectIdentifier,
        options: PaymentReadOptions,
        onEvent: @escaping @Sendable (PaymentReadEvent) -> Void
    ) async throws -> StoredPaymentRead {
        let lane = payment.lane.rawValue
        let (currency, minorUnits) = try await checkBeforeTap(order, session: session, lane: lane)
        var readOptions = options
        readOptions.includeFailedReads = false
        readOptions.cardDataLifetime = settings.storedReadValidity
        let (_, sealed) = try await payment.read(
            order,
            merchant: session.merchant,
            slot: slot,
            owner: owner,
            options: readOptions,
            onEvent: onEvent,
            before: { _, _ in ((), proceed: true) }
        )
        guard let sealed, let card = sealed.card, let text = sealed.envelope, let envelope = Base64.decode(text) else {
            throw StoreAndForwardError(
                .storeFailed,
                "the card gave no card data to store (no envelope or no masked card) [lane \(lane)]"
            )
        }
        let effectiveState = try checkCard(card, lane: lane)
        let record = StoredReadRecord(
            id: sealed.transactionID,
            lane: sealed.lane.rawValue,
            device: sealed.reader.rawValue,
            readAtMilliseconds: Int64((now().timeIntervalSince1970 * 1000).rounded(.down)),
            kind: order.kind == .refund ? .refund : .purchase,
            currencyCode: currency.alphabeticCode,
            amountMinorUnits: minorUnits,
            amount: currency.format(minorUnitAmount: minorUnits),
            brand: card.brand,
            lastFourDigits: card.lastFourDigits,
            expirationMonth: card.expirationMonth,
            expirationYear: card.expirationYear,
            expirationState: .notExpired,
            effectiveState: effectiveState,
            envelopeDigest: try digest(envelope)
        )
        let totals = try await store(record, envelope: envelope, session: session.id, bootID: try currentBoot())
        return StoredPaymentRead(read: sealed, record: record, totals: totals)
    }

    /// Signs `record` with the store key and commits it with its envelope (one group commit with the reads other
    /// lanes store meanwhile: ``ReadStore/insert(_:settings:bootID:)``).
    /// - Parameter bootID: The current boot id: the session must have been recorded under it.
    /// - Throws: ``StoreAndForwardError`` `limitExceeded` (the commit's own check), `sessionInvalidated`,
    ///   `storeFailed`, `busy`.
    package func store(_ record: StoredReadRecord, envelope: [UInt8], session: String, bootID: String? = nil)
        async throws(StoreAndForwardError) -> StoreTotals
    {
        let body = record.body
        let signature: [UInt8]
        do {
            signature = try store.identity.privateKey.signature(for: StoredReadRecord.signaturePrefix + body)
                .rawRepresentation
        } catch {
            throw StoreAndForwardError(.storeFailed, "signing the stored read failed: \(error)", underlying: error)
        }
        let row = StoredRow(
            record: record,
            body: body,
            envelope: envelope,
            signature: signature,
            session: session,
            batchID: nil
        )
        return try await store.insert(row, settings: settings, bootID: bootID)
    }

    private func digest(_ bytes: [UInt8]) throws(StoreAndForwardError) -> [UInt8] {
        do {
            return try SHA256.hash(bytes)
        } catch {
            throw StoreAndForwardError(.storeFailed, "SHA-256 failed: \(error)", underlying: error)
        }
    }
}
