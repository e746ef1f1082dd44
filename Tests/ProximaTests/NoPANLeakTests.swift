import Foundation
import Proxima
import ProximaCore
import Synchronization
import Testing

@testable import PaymentCapability

/// Nothing the payment API lets an app print or log carries a PAN: every read of every profile, successful or
/// not, with everything it produces rendered the ways a log would (`description`, `debugDescription`,
/// `String(reflecting:)`, `dump`), scanned for the test PANs of `Config/cards`.
@Suite struct NoPANLeakTests {
    /// Everything rendered, as a log would.
    final class Log: Sendable {
        private let lines = Mutex<[String]>([])

        func record(_ value: Any) {
            var dumped = ""
            dump(value, to: &dumped)
            let rendered = [
                String(describing: value), String(reflecting: value), dumped,
                (value as? any Error)?.localizedDescription ?? "",
            ]
            lines.withLock { $0.append(contentsOf: rendered) }
        }

        var text: String { lines.withLock { $0.joined(separator: "\n") } }
    }

    @Test func nothingThePaymentAPIRendersCarriesAPAN() async throws {
        #expect(Package.testPANs.count == 9)
        let log = Log()
        for profile in Package.paymentProfiles {
            for options in [PaymentCardReader.Options(), PaymentCardReader.Options(includeErrorInReadResult: true)] {
                try await PaymentHarness.withReader(cards: [profile], options: options) { reader, _ in
                    let session = try await PaymentHarness.preparedSession(reader)
                    log.record(session.id)
                    do {
                        let result = try await session.readPaymentCard(PaymentHarness.purchase())
                        log.record(result)
                        log.record(result.generalCardData as Any)
                        if let data = result.paymentCardData {
                            let contents = try CardDataEnvelope.open(
                                data,
                                privateKey: PaymentHarness.privateKey,
                                readerKeys: PaymentHarness.readerKeys
                            )
                            log.record(contents)
                            log.record(contents.formatted())
                            // The revealed form does show the PAN, so the scan below can fail.
                            #expect(Package.testPANs.contains { contents.formatted(revealingPAN: true).contains($0) })
                            let expired = await thrownError {
                                try CardDataEnvelope.open(
                                    data,
                                    privateKey: PaymentHarness.privateKey,
                                    readerKeys: PaymentHarness.readerKeys,
                                    now: .distantFuture
                                )
                            }
                            log.record(expired as Any)
                        }
                    } catch {
                        log.record(error)
                    }
                    for event in await readEvents(reader) { log.record(event) }
                }
            }
        }
        // Errors of every other kind, rendered too.
        try await PaymentHarness.withReader(cards: ["pay-visa-qvsdc.json"]) { reader, _ in
            let token = try PaymentHarness.token()
            log.record(token)
            log.record(await thrownError { try await reader.prepare(using: token) } as Any)
            try await reader.linkAccount(using: token)
            let session = try await reader.prepare(using: token)
            log.record(await thrownError { try await session.readPaymentCard(PaymentHarness.purchase("0.001")) } as Any)
            log.record(try await reader.linkedAccount() as Any)
        }
        let text = log.text
        #expect(text.contains("0119"), "the log holds the masked last four digits")
        for pan in Package.testPANs {
            #expect(!text.contains(pan), "PAN \(pan.prefix(6))… appears in what the API renders")
            // Also as the track 2 / BCD hex a careless dump of bytes would show.
            #expect(!text.contains(pan.prefix(12)), "the first 12 digits of a PAN appear")
        }
    }
}
