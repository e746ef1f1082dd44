internal import Foundation
package import PaymentCapability
internal import ProximaCore

extension StoreAndForwardService {
    /// The checks a read passes before the tap: the session's time, refunds, the currency, the per-transaction
    /// amount, and the stored count and total as they stand (checked again when the read is committed).
    /// - Returns: The currency and the amount in minor units.
    /// - Throws: ``StoreAndForwardError`` `sessionExpired` or `limitExceeded` naming the limit and figures;
    ///   the payment service's `invalidCurrency` and `invalidAmount` for an order that is not valid at all.
    package func checkBeforeTap(_ order: PaymentOrder, session: OfflineSession, lane: String) async throws -> (
        ISO4217Currency, Int64
    ) {
        let path = StoreAndForwardSettings.jsonPath
        guard now() < session.expiresAt else {
            throw StoreAndForwardError(
                .sessionExpired,
                "the offline session expired at \(AccountLinkStore.format(session.expiresAt)) (sessionHours "
                    + "\(settings.session.components.seconds / 3600)); prepare a new one",
                limit: path + ".sessionHours"
            )
        }
        let boot = try currentBoot()
        guard session.bootID == boot else {
            throw StoreAndForwardError(
                .sessionInvalidated,
                "the host restarted since this offline session was prepared (boot id \(session.bootID), now "
                    + "\(boot)): a store-and-forward session is invalid after a restart; prepare online, then a new "
                    + "session [lane \(lane)]"
            )
        }
        let (currency, minorUnits) = try payment.validate(order)
        switch order.kind {
        case .verification:
            throw StoreAndForwardError(
                .limitExceeded,
                "a card check without a charge cannot be stored: it needs the processor online",
                limit: path
            )
        case .refund where !settings.allowRefunds:
            throw StoreAndForwardError(
                .limitExceeded,
                "refunds are refused offline (\(path).allowRefunds is false) [lane \(lane)]",
                limit: path + ".allowRefunds"
            )
        case .refund, .purchase:
            break
        }
        guard let limit = settings.currencies[currency.alphabeticCode] else {
            let listed = settings.currencies.keys.sorted().joined(separator: ", ")
            throw StoreAndForwardError(
                .limitExceeded,
                "\(currency.alphabeticCode) is not accepted offline: maxStoredAmount lists \(listed) [lane \(lane)]",
                limit: path + ".maxStoredAmount"
            )
        }
        if let maximum = limit.maxTransaction, minorUnits > maximum {
            throw StoreAndForwardError(
                .limitExceeded,
                "\(currency.format(minorUnitAmount: minorUnits)) \(currency.alphabeticCode) is above "
                    + "maxTransactionAmount \(currency.format(minorUnitAmount: maximum)) for one offline read "
                    + "(AMOUNT_EXCEEDS_MAX_OFFLINE_AMOUNT) [lane \(lane)]",
                limit: path + ".maxTransactionAmount.\(currency.alphabeticCode)"
            )
        }
        // The totals this process last saw, when they let the read through (the commit checks again, exactly);
        // otherwise the store's own, so that a refusal is never made on stale figures.
        if let recent = store.recentTotals(),
            settings.storageRefusal(adding: minorUnits, currency: currency.alphabeticCode, to: recent, lane: lane)
                == nil
        {
            return (currency, minorUnits)
        }
        if let refusal = settings.storageRefusal(
            adding: minorUnits,
            currency: currency.alphabeticCode,
            to: try await store.totals(),
            lane: lane
        ) {
            throw refusal
        }
        return (currency, minorUnits)
    }

    /// The checks of the card once read: its brand, expiry and Application Effective Date (`5F25`).
    /// - Returns: The card's effective state: `effective`, or `unknown` when it gave no effective date.
    /// - Throws: ``StoreAndForwardError`` `limitExceeded` naming the brand list, the expiry, or the effective date
    ///   (the reason gives today's date, never the card's: it is card data).
    @discardableResult
    package func checkCard(_ card: MaskedCard, lane: String) throws(StoreAndForwardError)
        -> StoredReadRecord.EffectiveState
    {
        let path = StoreAndForwardSettings.jsonPath
        if let brands = settings.allowedBrands, !brands.contains(card.brand) {
            throw StoreAndForwardError(
                .limitExceeded,
                "\(card.brand) cards are not accepted offline: allowedBrands is \(brands.joined(separator: ", ")) "
                    + "[lane \(lane)]",
                limit: path + ".allowedBrands"
            )
        }
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC") ?? .current
        let today = calendar.dateComponents([.year, .month], from: now())
        let current = (today.year ?? 0) * 12 + (today.month ?? 0)
        let expiry = card.expirationYear * 12 + card.expirationMonth
        guard expiry >= current else {
            throw StoreAndForwardError(
                .limitExceeded,
                "the card expired (\(card.expirationMonth)/\(card.expirationYear), now "
                    + "\(today.month ?? 0)/\(today.year ?? 0)): expired cards are refused offline "
                    + "(OFFLINE_AND_CARD_EXPIRED) [lane \(lane)]",
                limit: "card expiry"
            )
        }
        guard let effective = card.effectiveDate else { return .unknown }
        let day = calendar.dateComponents([.year, .month, .day], from: now())
        let todayDate = CardEffectiveDate(year: day.year ?? 0, month: day.month ?? 0, day: day.day ?? 0)
        guard effective <= todayDate else {
            throw StoreAndForwardError(
                .limitExceeded,
                "the card is not yet effective: its Application Effective Date (5F25) is after today "
                    + "(\(day.year ?? 0)-\(Self.twoDigits(day.month))-\(Self.twoDigits(day.day)) UTC); "
                    + "not-yet-effective cards are refused offline [lane \(lane)]",
                limit: "card effective date"
            )
        }
        return .effective
    }

    private static func twoDigits(_ value: Int?) -> String {
        let value = value ?? 0
        return value < 10 ? "0\(value)" : "\(value)"
    }
}

extension StoreAndForwardSettings {
    /// Why storing `minorUnits` more of `currency` would cross the count or the currency's stored total, or `nil`.
    /// The same check runs before the tap and inside the commit's transaction.
    package func storageRefusal(adding minorUnits: Int64, currency: String, to totals: StoreTotals, lane: String)
        -> StoreAndForwardError?
    {
        guard totals.count + 1 <= maxStoredCount else {
            return StoreAndForwardError(
                .limitExceeded,
                "\(totals.count) reads are stored and maxStoredCount is \(maxStoredCount); forward a batch first "
                    + "[lane \(lane)]",
                limit: Self.jsonPath + ".maxStoredCount"
            )
        }
        guard let limit = currencies[currency] else { return nil }
        let stored = totals.amounts[currency] ?? 0
        guard stored + minorUnits <= limit.maxStored else {
            let format = limit.currency.format(minorUnitAmount:)
            return StoreAndForwardError(
                .limitExceeded,
                "\(format(stored)) \(currency) is stored; \(format(minorUnits)) more would make "
                    + "\(format(stored + minorUnits)), above maxStoredAmount \(format(limit.maxStored)) [lane \(lane)]",
                limit: Self.jsonPath + ".maxStoredAmount.\(currency)"
            )
        }
        return nil
    }
}
