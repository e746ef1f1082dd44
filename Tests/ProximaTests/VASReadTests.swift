import Foundation
import Proxima
import ProximaCore
import ProximaKernel
import ProximaTestSupport
import Testing

/// Loyalty through the public API on the simulator: the usage sketch's VAS snippet as written, Apple's shapes,
/// and loyalty then payment in one tap on one lease, against the virtual iPhones of `Config/cards/vas-*.json`.
@Suite struct VASReadTests {
    static let loyaltyBlock = """
        { "appleVAS": { "merchants": [
            { "passTypeIdentifier": "pass.com.example.loyalty", "privateKeys": ["keys/vas-test-private.pem"] },
            { "passTypeIdentifier": "pass.com.example.coffee",
              "privateKeys": ["keys/vas-test-rotated-private.pem", "keys/vas-test-private.pem"] } ],
          "maxCryptogramAgeSeconds": 300 } }
        """

    /// A kernel with one simulated reader holding `card`, payment and loyalty configured, and a prepared session.
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

    /// The kernel events of one read, up to its lease's release.
    static func kinds(_ events: AsyncStream<KernelEvent>) async -> [String] {
        var kinds: [String] = []
        for await event in events {
            kinds.append("\(event.kind)".components(separatedBy: "(").first ?? "")
            if case .leaseReleased = event.kind { break }
        }
        return kinds
    }

    @Test func usageSketchSnippetReadsPassAndCardInOneTap() async throws {
        try await Self.withSession("vas-iphone-loyalty-visa.json") { session, kernel in
            let events = kernel.events.subscribe()
            let request = PaymentCardTransactionRequest(amount: Decimal(29.99), currencyCode: "USD", type: .purchase)

            // The usage sketch, as written.
            let vasRequest = VASRequest(
                merchantIdentifier: "pass.com.example.loyalty",
                localizedDescription: "Example Loyalty Program"
            )

            // Read loyalty card alongside payment
            let result = try await session.readPaymentCard(
                request,
                vasRequest: vasRequest
            )

            // Access loyalty data
            var loyaltyNumber: String?
            if let vasResult = result.vasReadResult {
                // Process loyalty identifiers
                loyaltyNumber = vasResult.entries.first?.customerVASData.map { String(decoding: $0, as: UTF8.self) }
            }

            #expect(loyaltyNumber == "PROXIMA-LOYALTY-0002")
            #expect(result.vasReadResult?.entries.map(\.status) == [.success])
            #expect(result.vasReadResult?.entries.map(\.id) == ["pass.com.example.loyalty"])
            #expect(result.outcome == .success)
            #expect(result.generalCardData?.brand == "Visa")
            #expect(result.paymentCardData != nil)
            // One lease, one card presence: loyalty and payment ran in the same tap.
            #expect(
                await Self.kinds(events) == [
                    "leaseGranted", "readyForTap", "cardDetected", "readCompleted", "leaseReleased",
                ]
            )
            #expect(!"\(result)".contains("PROXIMA-LOYALTY"))
        }
    }

    @Test func readVASAlone() async throws {
        try await Self.withSession("vas-iphone-loyalty.json") { session, _ in
            let result = try await session.readVAS(
                VASRequest(
                    vasMerchants: [
                        VASRequest.Merchant(
                            id: "pass.com.example.loyalty",
                            url: URL(string: "https://example.com/join"),
                            localizedName: "Example"
                        ),
                        VASRequest.Merchant(id: "pass.com.example.coffee", url: nil, localizedName: "Coffee"),
                    ],
                    localizedVASType: "Loyalty card"
                )
            )
            #expect(result.entries.map(\.status) == [.success, .vasDataNotFound])
            #expect(result.entries.first?.customerVASData == Data("PROXIMA-LOYALTY-0001".utf8))
            #expect(result.entries.last?.customerVASData == nil)
            #expect(!result.description.contains("PROXIMA-LOYALTY"))
        }
    }

    @Test func twoPassesThenMastercardWithApplesCombinedRead() async throws {
        try await Self.withSession("vas-iphone-two-passes.json") { session, _ in
            let (payment, vas) = try await session.readPaymentCard(
                PaymentHarness.purchase("12.50", "EUR"),
                vasRequest: VASRequest(
                    vasMerchants: [
                        VASRequest.Merchant(id: "pass.com.example.loyalty", localizedName: "Example"),
                        VASRequest.Merchant(id: "pass.com.example.coffee", localizedName: "Coffee"),
                    ],
                    localizedVASType: "Loyalty card"
                ),
                stopOnVASResult: false
            )
            #expect(vas?.entries.map(\.status) == [.success, .success])
            #expect(
                vas?.entries.map { $0.customerVASData.map { String(decoding: $0, as: UTF8.self) } } == [
                    "PROXIMA-LOYALTY-0003", "COFFEE-7",
                ]
            )
            #expect(payment?.generalCardData?.brand == "Mastercard")
            #expect(payment?.vasReadResult == vas)
        }
    }

    @Test func stopOnVASResultEndsTheTapOnAPass() async throws {
        try await Self.withSession("vas-iphone-loyalty-visa.json") { session, _ in
            let (payment, vas) = try await session.readPaymentCard(
                PaymentHarness.purchase(),
                vasRequest: VASRequest(merchantIdentifier: "pass.com.example.loyalty", localizedDescription: "Example"),
                stopOnVASResult: true
            )
            #expect(payment == nil)
            #expect(vas?.entries.map(\.status) == [.success])
        }
    }

    @Test func aLockedPhoneStillPays() async throws {
        try await Self.withSession("vas-iphone-locked.json") { session, _ in
            let (payment, vas) = try await session.readPaymentCard(
                PaymentHarness.purchase(),
                vasRequest: VASRequest(merchantIdentifier: "pass.com.example.loyalty", localizedDescription: "Example"),
                stopOnVASResult: true
            )
            #expect(vas?.entries.map(\.status) == [.vasDataNotActivated])
            #expect(payment?.outcome == .success)
        }
    }

    @Test func aPlainCardHasNoPassesAndPays() async throws {
        try await Self.withSession("pay-visa-qvsdc.json") { session, _ in
            let result = try await session.readPaymentCard(
                PaymentHarness.purchase(),
                vasRequest: VASRequest(merchantIdentifier: "pass.com.example.loyalty", localizedDescription: "Example")
            )
            #expect(result.vasReadResult?.entries.map(\.status) == [.vasDataNotFound])
            #expect(result.outcome == .success)
        }
    }

    @Test(arguments: ["vas-iphone-stale.json", "vas-iphone-wrong-key.json"])
    func refusedCryptogramsFailTheRead(_ card: String) async throws {
        try await Self.withSession(card) { session, _ in
            do {
                _ = try await session.readVAS(
                    VASRequest(merchantIdentifier: "pass.com.example.loyalty", localizedDescription: "Example")
                )
                Issue.record("the read succeeded")
            } catch let error as PaymentCardReaderSession.ReadError {
                #expect(error.code == .cardReadFailed)
                #expect(error.description.contains("DECRYPT 9F27 pass.com.example.loyalty"))
                #expect(!error.description.contains("PROXIMA-LOYALTY"))
            }
        }
    }

    @Test func anUnconfiguredMerchantIsInvalid() async throws {
        try await Self.withSession("vas-iphone-loyalty.json") { session, _ in
            await #expect(throws: PaymentCardReaderError.invalidVASMerchants("")) {
                _ = try await session.readVAS(
                    VASRequest(merchantIdentifier: "pass.com.example.unknown", localizedDescription: "Unknown")
                )
            }
        }
    }
}
