import EMVCommon
import Proxima
import ProximaCore
import ProximaKernel
import ProximaTestSupport
import Testing

@testable import PaymentCapability

/// Kernels 4–7 and offline data authentication end to end on the simulator transport: one simulated reader per
/// card profile, one lane per reader, a payment read with the TEST CA keys on each.
@Suite struct PaymentKernelSimulatorTests {
    struct Expected: Sendable {
        var file: String
        var status: EMVOutcome.Status
        var kernel: EMVKernel
        var lastFour: String
    }

    static let cards: [Expected] = [
        Expected(file: "pay-amex-expresspay.json", status: .onlineRequest, kernel: .americanExpress, lastFour: "0126"),
        Expected(file: "pay-jcb-jspeedy.json", status: .onlineRequest, kernel: .jcb, lastFour: "0505"),
        Expected(file: "pay-discover-dpas.json", status: .onlineRequest, kernel: .discover, lastFour: "9424"),
        Expected(file: "pay-unionpay-quics.json", status: .approved, kernel: .unionPay, lastFour: "8599"),
        Expected(file: "pay-visa-fdda.json", status: .approved, kernel: .visa, lastFour: "0119"),
        Expected(file: "pay-visa-fdda-bad-signature.json", status: .declined, kernel: .visa, lastFour: "0119"),
        Expected(file: "pay-visa-fdda-expired.json", status: .onlineRequest, kernel: .visa, lastFour: "0119"),
        Expected(file: "pay-visa-fdda-unknown-ca.json", status: .declined, kernel: .visa, lastFour: "0119"),
        Expected(file: "pay-mastercard-cda.json", status: .onlineRequest, kernel: .mastercard, lastFour: "0012"),
        Expected(
            file: "pay-mastercard-cda-bad-signature.json",
            status: .declined,
            kernel: .mastercard,
            lastFour: "0012"
        ),
    ]

    @Test func eachKernelAndODACaseReadsThroughTheSimulator() async throws {
        let readers = Self.cards.indices.map {
            KernelSimulatorTests.reader("r\($0)", card: "cards/" + Self.cards[$0].file)
        }
        let lanes =
            "[" + Self.cards.indices.map { #"{ "id": "l\#($0)", "readers": ["r\#($0)"] }"# }.joined(separator: ",")
            + "]"
        let manifest = try KernelSimulatorTests.manifest(readers: readers, lanes: lanes)
        let keys = try CertificationAuthorityKeys(
            contentsOf: PackageFiles.configDirectory + "/keys/ca-public-keys-test.json"
        )
        let capability = EMVPaymentCapability(certificationAuthorities: keys)
        let transaction = EMVTransaction(
            amountAuthorised: 2999,
            currencyCode: 840,
            date: TransactionDate(year: 2026, month: 3, day: 14, hour: 9, minute: 26, second: 53)
        )
        try await KernelSimulatorTests.withKernel(manifest) { kernel in
            for (index, expected) in Self.cards.enumerated() {
                let outcome = try await kernel.tap(lane: LaneID("l\(index)")) { channel, context in
                    try await capability.run(transaction, on: channel, context: context)
                }
                #expect(outcome.status == expected.status, "\(expected.file): \(outcome.reason)")
                #expect(outcome.application?.kernel == expected.kernel, "\(expected.file)")
                #expect(outcome.lastFourDigits == expected.lastFour, "\(expected.file)")
                if outcome.status != .declined {
                    #expect(outcome.cardData[0x9F26]?.count == 8, "\(expected.file)")
                }
            }
        }
    }
}
