import Foundation
import Proxima
import ProximaCore
import ProximaKernel
import ProximaTestSupport
import Testing

/// Google Smart Tap through the public API on the simulator: the usage sketch's request, unchanged, reads an
/// Android phone's pass under the collector id, alone or before the card in one tap on one lease.
@Suite struct SmartTapReadTests {
    static let loyaltyBlock = """
        { "appleVAS": { "merchants": [
            { "passTypeIdentifier": "pass.com.example.loyalty", "privateKeys": ["keys/vas-test-private.pem"] } ] },
          "smartTap": { "collectorID": 20180608, "keyVersion": 1, "privateKey": "keys/smarttap-test-private.pem" } }
        """

    @discardableResult
    static func withSession<T: Sendable>(
        _ card: String,
        _ body: @Sendable (PaymentCardReaderSession, Kernel) async throws -> T
    ) async throws -> T {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let manifest = try PaymentHarness.manifest(
            readers: [PaymentHarness.reader("r1", cards: [card])],
            dataDirectory: directory.path,
            payment: PaymentHarness.paymentBlock() + #", "loyalty": "# + loyaltyBlock
        )
        return try await PaymentHarness.withKernel(manifest) { kernel in
            let reader = PaymentCardReader(kernel: kernel, lane: "lane-1")
            let session = try await PaymentHarness.preparedSession(reader)
            return try await body(session, kernel)
        }
    }

    @Test func theSketchsRequestReadsTheAndroidPassAndTheCardInOneTap() async throws {
        try await Self.withSession("smarttap-android-loyalty-visa.json") { session, kernel in
            let events = kernel.events.subscribe()
            let request = PaymentCardTransactionRequest(amount: Decimal(29.99), currencyCode: "USD", type: .purchase)
            let vasRequest = VASRequest(
                merchantIdentifier: "pass.com.example.loyalty",
                localizedDescription: "Example Loyalty Program"
            )
            let result = try await session.readPaymentCard(request, vasRequest: vasRequest)
            let entries = try #require(result.vasReadResult?.entries)
            #expect(entries.map(\.id) == ["pass.com.example.loyalty", "20180608"])
            #expect(entries.map(\.status) == [.vasDataNotFound, .success])
            #expect(entries.last?.customerVASData == Data("PROXIMA-GOOGLE-0002".utf8))
            #expect(result.outcome == .success)
            #expect(result.generalCardData?.brand == "Visa")
            #expect(
                await VASReadTests.kinds(events) == [
                    "leaseGranted", "readyForTap", "cardDetected", "readCompleted", "leaseReleased",
                ]
            )
            #expect(!"\(result)".contains("PROXIMA-GOOGLE"))
        }
    }

    @Test func readVASNamingTheCollectorAndStopOnAPass() async throws {
        try await Self.withSession("smarttap-android-loyalty.json") { session, _ in
            let result = try await session.readVAS(
                VASRequest(
                    vasMerchants: [VASRequest.Merchant(id: "20180608", localizedName: "Example (Google Wallet)")],
                    localizedVASType: "Loyalty card"
                )
            )
            #expect(result.entries.map(\.id) == ["20180608"])
            #expect(result.entries.first?.customerVASData == Data("PROXIMA-GOOGLE-0001".utf8))
            // A loyalty-only phone: stopOnVASResult ends the tap on the pass, no payment attempted.
            let request = PaymentCardTransactionRequest(amount: Decimal(5), currencyCode: "USD", type: .purchase)
            let (payment, passes) = try await session.readPaymentCard(
                request,
                vasRequest: VASRequest(merchantIdentifier: "pass.com.example.loyalty", localizedDescription: "L"),
                stopOnVASResult: true
            )
            #expect(payment == nil)
            #expect(passes?.entries.map(\.status) == [.vasDataNotFound, .success])
        }
    }

    @Test func aPhoneThatRefusesTheCollectorIsACardReadFailure() async throws {
        try await Self.withSession("smarttap-android-other-collector.json") { session, _ in
            do {
                _ = try await session.readVAS(VASRequest(merchantIdentifier: "20180608", localizedDescription: "G"))
                Issue.record("expected a read error")
            } catch let error as PaymentCardReaderSession.ReadError {
                guard case .cardReadFailed(let reason) = error else {
                    Issue.record("expected cardReadFailed, got \(error)")
                    return
                }
                #expect(reason.contains("9500"))
            }
        }
    }
}
