import Foundation
import Proxima
import ProximaCore
import ProximaKernel
import ProximaTestSupport
import StoreAndForwardCapability
import Testing

@testable import PaymentCapability

/// Every limit of `capabilities.storeAndForward`: the read at it is accepted, the one that would cross it refused
/// with the limit's name and the figures, and nothing of a refused read is stored.
@Suite struct LimitTests {
    /// Runs `body` with an offline session under `limits`.
    func withSession(
        _ limits: String,
        cards: [String] = ["pay-visa-qvsdc.json"],
        _ body: @Sendable (StoreAndForwardPaymentCardReaderSession, PaymentCardReaderStore) async throws -> Void
    ) async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let manifest = try Harness.manifest(directory: directory.path, cards: cards, storeAndForward: limits)
        try await Harness.withKernel(manifest) { kernel in
            let (reader, session) = try await Harness.offlineSession(kernel)
            try await body(session, try reader.fetchPaymentCardReaderStore())
        }
    }

    /// The refusal's reason, when it is a limit refusal.
    func limitReason(_ error: (any Error)?) -> String? {
        guard let error = error as? PaymentCardReaderSession.ReadError, error.code == .storeAndForwardLimitExceeded
        else { return nil }
        return error.reason
    }

    @Test func maxTransactionAmount() async throws {
        try await withSession(
            #"{ "maxTransactionAmount": { "USD": "100.00" }, "maxStoredAmount": { "USD": "1000.00" } }"#
        ) { session, store in
            let value1 = try await session.readPaymentCard(Harness.purchase("99.99"))
            #expect(value1.outcome == .success)
            let value2 = try await session.readPaymentCard(Harness.purchase("100.00"))
            #expect(value2.outcome == .success)
            let reason = limitReason(
                await thrownError { try await session.readPaymentCard(Harness.purchase("100.01")) }
            )
            #expect(reason?.contains("capabilities.storeAndForward.maxTransactionAmount.USD") == true)
            #expect(reason?.contains("100.01") == true && reason?.contains("100.00") == true)
            let value3 = try await store.fetchStoredPaymentCardReadResultCount()
            #expect(value3 == 2)
        }
    }

    @Test func maxStoredAmountPerCurrency() async throws {
        try await withSession(#"{ "maxStoredAmount": { "USD": "150.00", "EUR": "10.00" } }"#) { session, store in
            try await session.readPaymentCard(Harness.purchase("100.00"))
            try await session.readPaymentCard(Harness.purchase("49.99"))
            // 149.99 stored: 0.01 more is exactly the limit.
            try await session.readPaymentCard(Harness.purchase("0.01"))
            let reason = limitReason(await thrownError { try await session.readPaymentCard(Harness.purchase("0.01")) })
            #expect(reason?.contains("maxStoredAmount.USD") == true)
            #expect(reason?.contains("150.00") == true && reason?.contains("150.01") == true)
            // Another currency has its own total.
            try await session.readPaymentCard(Harness.purchase("10.00", "EUR"))
            #expect(
                limitReason(await thrownError { try await session.readPaymentCard(Harness.purchase("0.01", "EUR")) })
                    != nil
            )
            // A currency not listed is refused offline.
            let gbp = limitReason(
                await thrownError { try await session.readPaymentCard(Harness.purchase("1.00", "GBP")) }
            )
            #expect(gbp?.contains("GBP is not accepted offline") == true)
            let value4 = try await store.fetchStoredPaymentCardReadResultCount()
            #expect(value4 == 4)
        }
    }

    @Test func maxStoredCount() async throws {
        try await withSession(#"{ "maxStoredAmount": { "USD": "1000.00" }, "maxStoredCount": 3 }"#) { session, store in
            for _ in 1...3 { try await session.readPaymentCard(Harness.purchase("1.00")) }
            let reason = limitReason(await thrownError { try await session.readPaymentCard(Harness.purchase("1.00")) })
            #expect(reason?.contains("maxStoredCount is 3") == true)
            let value5 = try await store.fetchStoredPaymentCardReadResultCount()
            #expect(value5 == 3)
        }
    }

    @Test func refundsAreRefusedUnlessAllowed() async throws {
        try await withSession(#"{ "maxStoredAmount": { "USD": "1000.00" } }"#) { session, store in
            let reason = limitReason(
                await thrownError { try await session.readPaymentCard(Harness.purchase("5.00", type: .refund)) }
            )
            #expect(reason?.contains("allowRefunds") == true)
            let value6 = try await store.fetchStoredPaymentCardReadResultCount()
            #expect(value6 == 0)
        }
        try await withSession(#"{ "maxStoredAmount": { "USD": "1000.00" }, "allowRefunds": true }"#) { session, store in
            let value7 = try await session.readPaymentCard(Harness.purchase("5.00", type: .refund))
            #expect(value7.outcome == .success)
            let value8 = try await store.fetchStoredPaymentCardReadResultCount()
            #expect(value8 == 1)
        }
    }

    @Test func allowedBrands() async throws {
        try await withSession(#"{ "maxStoredAmount": { "USD": "1000.00" }, "allowedBrands": ["Mastercard"] }"#) {
            session,
            store in
            let reason = limitReason(await thrownError { try await session.readPaymentCard(Harness.purchase("5.00")) })
            #expect(reason?.contains("Visa cards are not accepted offline") == true)
            #expect(reason?.contains("allowedBrands") == true)
            let value9 = try await store.fetchStoredPaymentCardReadResultCount()
            #expect(value9 == 0)
        }
        try await withSession(#"{ "maxStoredAmount": { "USD": "1000.00" }, "allowedBrands": ["Visa"] }"#) {
            session,
            store in
            try await session.readPaymentCard(Harness.purchase("5.00"))
            let value10 = try await store.fetchStoredPaymentCardReadResultCount()
            #expect(value10 == 1)
        }
    }

    @Test func disabledRefusesTheSession() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let manifest = try Harness.manifest(
            directory: directory.path,
            storeAndForward: #"{ "enabled": false, "maxStoredAmount": { "USD": "1.00" } }"#
        )
        try await Harness.withKernel(manifest) { kernel in
            let error = await thrownError { try await Harness.offlineSession(kernel) }
            #expect((error as? PaymentCardReaderError)?.code == .storeAndForwardNotAllowed)
            #expect((error as? PaymentCardReaderError)?.reason.contains("enabled") == true)
        }
    }

    /// Expiry and the session's hours, on the service with a clock the test moves.
    @Test func expiredCardsAndExpiredSessions() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let manifest = try Harness.manifest(directory: directory.path)
        let clock = TestWallClock()
        let kernel = Kernel(manifest: manifest, registry: BuiltinPlugins.registry)
        let payment = try PaymentService(kernel: kernel, lane: "lane-1", now: { clock.now })
        let service = try StoreAndForwardService(payment: payment, now: { clock.now })
        let card = MaskedCard(brand: "Visa", lastFourDigits: "0010", expirationMonth: 12, expirationYear: 2028)
        try service.checkCard(card, lane: "lane-1")
        var expired = card
        expired.expirationYear = 2020
        let refusal = try #require(
            await thrownError { try service.checkCard(expired, lane: "lane-1") } as? StoreAndForwardError
        )
        #expect(refusal.code == .limitExceeded)
        #expect(refusal.reason.contains("OFFLINE_AND_CARD_EXPIRED"))
        // This month is still valid.
        let parts = Calendar(identifier: .gregorian).dateComponents(in: TimeZone(identifier: "UTC")!, from: clock.now)
        try service.checkCard(
            MaskedCard(
                brand: "Visa",
                lastFourDigits: "0010",
                expirationMonth: parts.month!,
                expirationYear: parts.year!
            ),
            lane: "lane-1"
        )

        let token = try Harness.token(manifest, issuedAt: clock.now)
        try payment.link(token.rawValue, replacing: true)
        let session = try await service.startSession(token: token.rawValue)
        let order = PaymentOrder(kind: .purchase, amount: 1, currencyCode: "USD")
        _ = try await service.checkBeforeTap(order, session: session, lane: "lane-1")
        clock.advance(by: 24 * 3600 - 1)
        _ = try await service.checkBeforeTap(order, session: session, lane: "lane-1")
        clock.advance(by: 1)
        let late = await thrownError { try await service.checkBeforeTap(order, session: session, lane: "lane-1") }
        #expect(serviceCode(late) == .sessionExpired)
        #expect((late as? StoreAndForwardError)?.limit == "capabilities.storeAndForward.sessionHours")
    }

    @Test(arguments: [
        (
            #"{ "maxStoredAmount": { "USD": "1.00" }, "maxStoredCont": 3 }"#,
            "capabilities.storeAndForward.maxStoredCont"
        ),
        (#"{ "maxStoredAmount": { "XYZ": "1.00" } }"#, "capabilities.storeAndForward.maxStoredAmount.XYZ"),
        (#"{ "maxStoredAmount": { "USD": "1.001" } }"#, "capabilities.storeAndForward.maxStoredAmount.USD"),
        (#"{ "maxStoredAmount": { "USD": 100 } }"#, "capabilities.storeAndForward.maxStoredAmount.USD"),
        (#"{ "maxStoredAmount": {} }"#, "capabilities.storeAndForward.maxStoredAmount"),
        (
            #"{ "maxStoredAmount": { "USD": "10.00" }, "maxTransactionAmount": { "USD": "20.00" } }"#,
            "capabilities.storeAndForward.maxTransactionAmount.USD"
        ),
        (
            #"{ "maxStoredAmount": { "USD": "10.00" }, "maxTransactionAmount": { "EUR": "1.00" } }"#,
            "capabilities.storeAndForward.maxTransactionAmount.EUR"
        ),
        (
            #"{ "maxStoredAmount": { "USD": "10.00" }, "onlineWithinHours": 0 }"#,
            "capabilities.storeAndForward.onlineWithinHours"
        ),
        (
            #"{ "maxStoredAmount": { "USD": "10.00" }, "allowedBrands": [] }"#,
            "capabilities.storeAndForward.allowedBrands"
        ),
        (
            #"{ "maxStoredAmount": { "USD": "10.00" }, "deletionTokens": "nobody" }"#,
            "capabilities.storeAndForward.deletionTokens"
        ),
        (#"{ "maxTransactionAmount": { "USD": "10.00" } }"#, "capabilities.storeAndForward"),
    ])
    func invalidSettingsNameTheirPath(settings: String, path: String) throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        do {
            _ = try Harness.manifest(directory: directory.path, storeAndForward: settings)
            Issue.record("accepted \(settings)")
        } catch {
            let paths = (error as? ManifestError)?.errors.map(\.path) ?? []
            #expect(paths.contains(path), "\(error)")
        }
    }
}
