import Foundation
import Proxima
import ProximaCore
import ProximaKernel
import ProximaTestSupport
import Testing

@testable import PaymentCapability

/// End-to-end reads through the public API: kernel, simulator transport, virtual cards of `Config/cards`, EMV
/// capability, HPKE envelope.
@Suite struct PaymentReadTests {
    struct Expectation: Sendable, CustomTestStringConvertible {
        var file: String
        /// `nil`: the read throws `error`.
        var outcome: PaymentCardReadResult.ReadOutcome?
        var error: PaymentCardReaderSession.ReadError.Code?
        var brand: String?
        var lastFour: String?
        var expiry: String?
        var aid: String?
        var pan: String?
        var pinRequired = false
        var events: [String]
        /// The envelope's outcome and the cryptogram type (`9F27`) it carries.
        var envelopeOutcome = "onlineRequest"
        var cid: UInt8 = 0x80
        var testDescription: String { file }
    }

    static let expectations: [Expectation] = [
        Expectation(
            file: "pay-visa-qvsdc.json",
            outcome: .success,
            brand: "Visa",
            lastFour: "0119",
            expiry: "12/28",
            aid: "A0000000031010",
            pan: "4761739001010119",
            events: ["readyForTap", "cardDetected", "removeCard", "readCompleted"]
        ),
        // The same card with an Application Effective Date (5F25): online, it reads as the card without one
        // (store and forward records the date's state and refuses the not-yet-effective card offline).
        Expectation(
            file: "pay-visa-qvsdc-effective.json",
            outcome: .success,
            brand: "Visa",
            lastFour: "0119",
            expiry: "12/28",
            aid: "A0000000031010",
            pan: "4761739001010119",
            events: ["readyForTap", "cardDetected", "removeCard", "readCompleted"]
        ),
        Expectation(
            file: "pay-visa-qvsdc-not-yet-effective.json",
            outcome: .success,
            brand: "Visa",
            lastFour: "0119",
            expiry: "12/49",
            aid: "A0000000031010",
            pan: "4761739001010119",
            events: ["readyForTap", "cardDetected", "removeCard", "readCompleted"]
        ),
        Expectation(
            file: "pay-mastercard-mchip.json",
            outcome: .success,
            brand: "Mastercard",
            lastFour: "0012",
            expiry: "11/29",
            aid: "A0000000041010",
            pan: "5413330089010012",
            events: ["readyForTap", "cardDetected", "removeCard", "readCompleted"]
        ),
        Expectation(
            file: "pay-multi-aid.json",
            outcome: .success,
            brand: "Maestro",
            lastFour: "0020",
            expiry: "11/29",
            aid: "A0000000043060",
            pan: "5413330089010020",
            events: ["readyForTap", "cardDetected", "removeCard", "readCompleted"]
        ),
        Expectation(
            file: "pay-online-pin.json",
            outcome: .success,
            brand: "Visa",
            lastFour: "0010",
            expiry: "12/28",
            aid: "A0000000031010",
            pan: "4761739001010010",
            pinRequired: true,
            events: ["readyForTap", "cardDetected", "removeCard", "pinEntryRequested", "readCompleted"]
        ),
        Expectation(
            file: "pay-declined.json",
            error: .paymentCardDeclined,
            events: ["readyForTap", "cardDetected", "removeCard", "readCompleted"]
        ),
        Expectation(
            // Co-badged CB/Visa on the default combinations: CB has no default kernel, so Visa runs.
            file: "pay-cb-visa.json",
            outcome: .success,
            brand: "Visa",
            lastFour: "0119",
            expiry: "12/28",
            aid: "A0000000031010",
            pan: "4761739001010119",
            events: ["readyForTap", "cardDetected", "removeCard", "readCompleted"]
        ),
        Expectation(
            file: "pay-mastercard-magstripe.json",
            error: .cardNotSupported,
            events: ["readyForTap", "cardDetected", "readNotCompleted"]
        ),
        Expectation(
            file: "pay-amex-expresspay.json",
            outcome: .success,
            brand: "American Express",
            lastFour: "0126",
            expiry: "11/29",
            aid: "A00000002501",
            pan: "374245455400126F",
            events: ["readyForTap", "cardDetected", "removeCard", "readCompleted"]
        ),
        Expectation(
            file: "pay-jcb-jspeedy.json",
            outcome: .success,
            brand: "JCB",
            lastFour: "0505",
            expiry: "11/29",
            aid: "A0000000651010",
            pan: "3566002020360505",
            events: ["readyForTap", "cardDetected", "removeCard", "readCompleted"]
        ),
        Expectation(
            file: "pay-discover-dpas.json",
            outcome: .success,
            brand: "Discover",
            lastFour: "9424",
            expiry: "12/28",
            aid: "A0000001523010",
            pan: "6011000990139424",
            pinRequired: true,
            events: ["readyForTap", "cardDetected", "removeCard", "pinEntryRequested", "readCompleted"]
        ),
        Expectation(
            file: "pay-unionpay-quics.json",
            outcome: .success,
            brand: "UnionPay",
            lastFour: "8599",
            expiry: "12/28",
            aid: "A000000333010102",
            pan: "6250941006528599",
            events: ["readyForTap", "cardDetected", "removeCard", "readCompleted"],
            envelopeOutcome: "approved",
            cid: 0x40
        ),
        Expectation(
            file: "pay-visa-fdda.json",
            outcome: .success,
            brand: "Visa",
            lastFour: "0119",
            expiry: "12/28",
            aid: "A0000000031010",
            pan: "4761739001010119",
            events: ["readyForTap", "cardDetected", "removeCard", "readCompleted"],
            envelopeOutcome: "approved",
            cid: 0x40
        ),
        Expectation(
            file: "pay-visa-fdda-expired.json",
            outcome: .success,
            brand: "Visa",
            lastFour: "0119",
            expiry: "12/28",
            aid: "A0000000031010",
            pan: "4761739001010119",
            events: ["readyForTap", "cardDetected", "removeCard", "readCompleted"],
            cid: 0x40
        ),
        Expectation(
            file: "pay-mastercard-cda.json",
            outcome: .success,
            brand: "Mastercard",
            lastFour: "0012",
            expiry: "11/29",
            aid: "A0000000041010",
            pan: "5413330089010012",
            events: ["readyForTap", "cardDetected", "removeCard", "readCompleted"]
        ),
        // Asks for a TC below the floor limit; the default terminal's floor limit is 0, so it goes online.
        Expectation(
            file: "pay-mastercard-cda-offline.json",
            outcome: .success,
            brand: "Mastercard",
            lastFour: "0012",
            expiry: "11/29",
            aid: "A0000000041010",
            pan: "5413330089010012",
            events: ["readyForTap", "cardDetected", "removeCard", "readCompleted"]
        ),
        Expectation(
            file: "pay-visa-fdda-bad-signature.json",
            error: .paymentCardDeclined,
            events: ["readyForTap", "cardDetected", "removeCard", "readCompleted"]
        ),
        Expectation(
            file: "pay-visa-fdda-unknown-ca.json",
            error: .paymentCardDeclined,
            events: ["readyForTap", "cardDetected", "removeCard", "readCompleted"]
        ),
        Expectation(
            file: "pay-mastercard-cda-bad-signature.json",
            error: .paymentCardDeclined,
            events: ["readyForTap", "cardDetected", "removeCard", "readCompleted"]
        ),
        Expectation(
            file: "pay-malformed-record.json",
            error: .cardReadFailed,
            events: ["readyForTap", "cardDetected", "readNotCompleted"]
        ),
    ]

    @Test func everyPaymentProfileHasAnExpectation() {
        #expect(Package.paymentProfiles == Self.expectations.map(\.file).sorted())
    }

    @Test(arguments: expectations)
    func readsProfileThroughThePublicAPI(_ expected: Expectation) async throws {
        try await PaymentHarness.withReader(cards: [expected.file]) { reader, _ in
            let session = try await PaymentHarness.preparedSession(reader)
            // The prepare progress, then nothing until the read.
            var progress: [PaymentCardReader.Event] = []
            for await event in reader.events {
                progress.append(event)
                if event == .updateProgress(100) { break }
            }
            #expect(progress == [.updateProgress(1), .updateProgress(50), .updateProgress(100)])

            let start = Date(timeIntervalSince1970: Date().timeIntervalSince1970.rounded(.down))
            let read: Result<PaymentCardReadResult, any Error>
            do {
                read = .success(try await session.readPaymentCard(PaymentHarness.purchase("29.99", "USD")))
            } catch {
                read = .failure(error)
            }
            #expect(await readEvents(reader).map(\.name) == expected.events)

            guard let outcome = expected.outcome else {
                guard case .failure(let error) = read else {
                    Issue.record("expected \(String(describing: expected.error)), got a result")
                    return
                }
                #expect(readCode(error) == expected.error, "\(error)")
                if expected.error == .cardReadFailed {
                    #expect("\(error)".contains("READ RECORD SFI 2 record 3"))
                }
                return
            }
            let result = try read.get()
            #expect(result.outcome == outcome)
            #expect(result.generalCardData?.brand == expected.brand)
            #expect(result.generalCardData?.lastFourDigits == expected.lastFour)
            #expect(result.generalCardData?.expiry == expected.expiry)
            #expect(result.applicationTypeIdentifier == expected.aid)
            #expect(result.isPINRequired == expected.pinRequired)
            #expect(result.lane == "lane-1")
            #expect(result.device == "r1")

            let contents = try CardDataEnvelope.open(
                try #require(result.paymentCardData),
                privateKey: PaymentHarness.privateKey,
                readerKeys: PaymentHarness.readerKeys
            )
            #expect(contents.transactionID == result.id)
            #expect(contents.amount == "29.99")
            #expect(contents.currencyCode == "USD")
            #expect(contents.kind == .purchase)
            #expect(contents.merchantID == PaymentHarness.merchant)
            #expect(contents.readerIdentifier == PaymentHarness.readerIdentifier)
            #expect(contents.lane == "lane-1")
            #expect(contents.device == "r1")
            #expect(contents.outcome == expected.envelopeOutcome)
            #expect(contents.cardholderVerification == (expected.pinRequired ? "onlinePIN" : "noCVM"))
            #expect(contents.readAt >= start)
            #expect(contents.expiresAt == contents.readAt.addingTimeInterval(60))
            #expect(result.paymentCardDataExpiresAt.timeIntervalSince(contents.expiresAt).magnitude < 1)
            #expect(contents[0x5A]?.hexString == expected.pan)
            let panDigits = String(try #require(expected.pan).prefix { $0 != "F" })
            #expect(contents[0x57]?.hexString.hasPrefix(panDigits + "D") == true)
            #expect(contents[0x84]?.hexString == expected.aid)
            #expect(contents[0x9F02] == [0x00, 0x00, 0x00, 0x00, 0x29, 0x99])
            #expect(contents[0x5F2A] == [0x08, 0x40])
            #expect(contents[0x9F1A] == [0x08, 0x40])
            #expect(contents[0x9C] == [0x00])
            #expect(contents[0x5F36] == [0x02])
            #expect(contents[0x9F27] == [expected.cid])
            #expect(contents[0x9F26]?.count == 8)
            #expect(contents[0x9F37]?.count == 4)
            #expect(contents[0x9F36]?.count == 2)
            // The processor tags, in the documented order.
            let order = EMVCardData.processorTags
            let tags = contents.emv.map(\.tag)
            #expect(tags == order.filter(tags.contains))
            // The envelope expires.
            let expired = #expect(throws: CardDataEnvelopeError.self) {
                try CardDataEnvelope.open(
                    try #require(result.paymentCardData),
                    privateKey: PaymentHarness.privateKey,
                    readerKeys: PaymentHarness.readerKeys,
                    now: contents.expiresAt.addingTimeInterval(1)
                )
            }
            #expect(expired?.code == .expired)
        }
    }

    @Test func declineIsAResultWhenErrorsAreIncluded() async throws {
        try await PaymentHarness.withReader(
            cards: ["pay-declined.json"],
            options: PaymentCardReader.Options(includeErrorInReadResult: true)
        ) { reader, _ in
            let session = try await PaymentHarness.preparedSession(reader)
            let result = try await session.readPaymentCard(PaymentHarness.purchase("5.00", "USD"))
            #expect(result.outcome == .cardDeclined)
            #expect(result.generalCardData?.lastFourDigits == "0038")
            let contents = try CardDataEnvelope.open(
                try #require(result.paymentCardData),
                privateKey: PaymentHarness.privateKey,
                readerKeys: PaymentHarness.readerKeys
            )
            #expect(contents.outcome == "declined")
            #expect(contents[0x9F27] == [0x00])
        }
    }

    @Test func refundAndOtherCurrenciesReachTheCard() async throws {
        try await PaymentHarness.withReader(cards: ["pay-visa-qvsdc.json"]) { reader, _ in
            let session = try await PaymentHarness.preparedSession(reader)
            let refund = try await session.readPaymentCard(
                PaymentCardTransactionRequest(amount: Decimal(string: "1.250")!, currencyCode: "KWD", for: .refund)
            )
            let contents = try CardDataEnvelope.open(
                try #require(refund.paymentCardData),
                privateKey: PaymentHarness.privateKey,
                readerKeys: PaymentHarness.readerKeys
            )
            #expect(contents.kind == .refund)
            #expect(contents.amount == "1.250")
            #expect(contents[0x9C] == [0x20])
            #expect(contents[0x9F02] == [0, 0, 0, 0, 0x12, 0x50])
            #expect(contents[0x5F2A] == [0x04, 0x14])
            #expect(contents[0x5F36] == [0x03])
            let yen = try await session.readPaymentCard(PaymentHarness.purchase("500", "jpy"))
            let yenContents = try CardDataEnvelope.open(
                try #require(yen.paymentCardData),
                privateKey: PaymentHarness.privateKey,
                readerKeys: PaymentHarness.readerKeys
            )
            #expect(yenContents.amount == "500")
            #expect(yenContents.currencyCode == "JPY")
            #expect(yenContents[0x9F02] == [0, 0, 0, 0, 0x05, 0x00])
            let check = try await session.readPaymentCard(
                PaymentCardVerificationRequest(currencyCode: "EUR", for: .saveCard)
            )
            let checkContents = try CardDataEnvelope.open(
                try #require(check.paymentCardData),
                privateKey: PaymentHarness.privateKey,
                readerKeys: PaymentHarness.readerKeys
            )
            #expect(checkContents.kind == .verification)
            #expect(checkContents.amount == "0.00")
            #expect(checkContents[0x9F02] == [0, 0, 0, 0, 0, 0])
            // Zero amount: the terminal asked the card for an online cryptogram (TTQ byte 2 bit 8).
            #expect(checkContents[0x9F66].map { $0[1] & 0x80 } == 0x80)
        }
    }

    @Test func invalidRequestsAreRefusedBeforeAnyTap() async throws {
        try await PaymentHarness.withReader(cards: ["pay-visa-qvsdc.json"]) { reader, _ in
            let session = try await PaymentHarness.preparedSession(reader)
            for (amount, currency, code) in [
                ("0", "USD", PaymentCardReaderSession.ReadError.Code.invalidAmount), ("-1", "USD", .invalidAmount),
                ("29.999", "USD", .invalidAmount), ("10000000000", "USD", .invalidAmount),
                ("1.5", "JPY", .invalidAmount), ("10", "XYZ", .invalidCurrencyCode), ("10", "US", .invalidCurrencyCode),
            ] {
                let error = await thrownError {
                    try await session.readPaymentCard(PaymentHarness.purchase(amount, currency))
                }
                #expect(readCode(error) == code, "\(amount) \(currency): \(String(describing: error))")
            }
            let badCheck = await thrownError {
                try await session.readPaymentCard(PaymentCardVerificationRequest(currencyCode: "ABC"))
            }
            #expect(readCode(badCheck) == .invalidCurrencyCode)
            // No tap happened: no read events, and the next read is the card's first.
            let result = try await session.readPaymentCard(PaymentHarness.purchase())
            let contents = try CardDataEnvelope.open(
                try #require(result.paymentCardData),
                privateKey: PaymentHarness.privateKey,
                readerKeys: PaymentHarness.readerKeys
            )
            #expect(contents[0x9F36] == [0x00, 0x01])
        }
    }

    /// A card that never comes: `cancelRead()` ends the read with `readCancelled`; a concurrent read is busy.
    @Test func cancelReadEndsAWaitingReadAndASecondReadIsBusy() async throws {
        try await PaymentHarness.withReader(
            cards: ["pay-visa-qvsdc.json"],
            arrival: #"{ "pattern": "fixed", "intervalMs": 3600000 }"#
        ) { reader, _ in
            let session = try await PaymentHarness.preparedSession(reader)
            #expect(try await session.cancelRead() == false)
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    let error = await thrownError { try await session.readPaymentCard(PaymentHarness.purchase()) }
                    #expect(readCode(error) == .readCancelled, "\(String(describing: error))")
                }
                var events: [String] = []
                for await event in reader.events where event.name == "readyForTap" {
                    events.append(event.name)
                    break
                }
                let busy = await thrownError { try await session.readPaymentCard(PaymentHarness.purchase()) }
                #expect(readerCode(busy) == .readerBusy)
                // Another session cannot cancel this session's read.
                let other = try await reader.prepare(using: try PaymentHarness.token())
                #expect(try await other.cancelRead() == false)
                #expect(try await session.cancelRead())
                try await group.waitForAll()
                for await event in reader.events where event.name != "updateProgress" {
                    events.append(event.name)
                    break
                }
                #expect(events == ["readyForTap", "readCancelled"])
            }
        }
    }

    @Test func cancellingTheCallingTaskIsCancelled() async throws {
        try await PaymentHarness.withReader(
            cards: ["pay-visa-qvsdc.json"],
            arrival: #"{ "pattern": "fixed", "intervalMs": 3600000 }"#
        ) { reader, _ in
            let session = try await PaymentHarness.preparedSession(reader)
            let read = Task { await thrownError { try await session.readPaymentCard(PaymentHarness.purchase()) } }
            for await event in reader.events where event == .readyForTap { break }
            read.cancel()
            let error = await read.value
            #expect(readCode(error) == .cancelled, "\(String(describing: error))")
            #expect(try await session.cancelRead() == false)
        }
    }

    @Test func noCardBeforeTheReadTimeoutIsTimedOut() async throws {
        try await PaymentHarness.withReader(
            cards: ["pay-visa-qvsdc.json"],
            arrival: #"{ "pattern": "fixed", "intervalMs": 3600000 }"#,
            options: PaymentCardReader.Options(readTimeout: .milliseconds(100))
        ) { reader, _ in
            let session = try await PaymentHarness.preparedSession(reader)
            let error = await thrownError { try await session.readPaymentCard(PaymentHarness.purchase()) }
            #expect(readCode(error) == .timedOut, "\(String(describing: error))")
        }
    }

    @Test func prepareWithoutAReaderIsNotReady() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let manifest = try PaymentHarness.manifest(
            readers: [PaymentHarness.reader("r1", cards: ["pay-visa-qvsdc.json"])],
            dataDirectory: directory.path
        )
        // The kernel is never run: no reader ever appears.
        let kernel = Kernel(manifest: manifest, registry: BuiltinPlugins.registry)
        let reader = PaymentCardReader(kernel: kernel, options: .init(prepareTimeout: .milliseconds(50)))
        let token = try PaymentHarness.token()
        try await reader.linkAccount(using: token)
        let error = await thrownError { try await reader.prepare(using: token) }
        #expect(readerCode(error) == .notReady, "\(String(describing: error))")
        var events: [PaymentCardReader.Event] = []
        for await event in reader.events {
            events.append(event)
            if event == .notReady { break }
        }
        #expect(events == [.updateProgress(1), .updateProgress(50), .notReady])
    }

    /// The kernel stops while a read waits for a reader: `backgrounded`, and the session needs `prepare()` again.
    @Test func kernelShutdownDuringAReadIsBackgrounded() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let manifest = try PaymentHarness.manifest(
            readers: [
                PaymentHarness.reader(
                    "r1",
                    cards: ["pay-visa-qvsdc.json"],
                    arrival: #"{ "pattern": "fixed", "intervalMs": 3600000 }"#
                )
            ],
            dataDirectory: directory.path
        )
        let kernel = Kernel(manifest: manifest, registry: BuiltinPlugins.registry)
        let holder = PaymentCardReader(kernel: kernel)
        let waiter = PaymentCardReader(kernel: kernel)
        let runner = Task { await kernel.run() }
        await kernel.waitForReaders(count: 1)
        let holding = try await PaymentHarness.preparedSession(holder)
        let waiting = try await waiter.prepare(using: try PaymentHarness.token())
        // The holder's read takes the lane's only reader and waits for a card that never comes.
        let first = Task { await thrownError { try await holding.readPaymentCard(PaymentHarness.purchase()) } }
        for await event in holder.events where event == .readyForTap { break }
        let second = Task { await thrownError { try await waiting.readPaymentCard(PaymentHarness.purchase()) } }
        // The pool announces no queued request: check its snapshot until the second read waits in it.
        try await waitUntil("the second read waiting for the lane's reader") {
            await !kernel.snapshot().waiting.isEmpty
        }
        runner.cancel()
        await runner.value
        let error = await second.value
        #expect(readerCode(error) == .backgrounded, "\(String(describing: error))")
        first.cancel()
        _ = await first.value
        // prepare() is needed again.
        let again = await thrownError { try await waiting.readPaymentCard(PaymentHarness.purchase()) }
        #expect(readCode(again) == .notReady)
        var events: [PaymentCardReader.Event] = []
        for await event in waiter.events where event == .notReady {
            events.append(event)
            break
        }
        #expect(events == [.notReady])
    }
}
