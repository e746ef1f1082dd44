import EMVCommon
import ProximaCardEmulator
import ProximaCore
import ProximaKernel
import ProximaTestSupport
import Testing

@testable import PaymentCapability

/// Kernels 4–7 and offline data authentication through real pcscd: kernel → PC/SC transport → libpcsclite →
/// pcscd → vpcd → `VPCDCardHost` → virtual card (which computes its fDDA or CDA signature at run time).
@Suite(
    "Kernels 4-7 and ODA through real pcscd with vpcd readers",
    .enabled(if: LivePCSCD.isAvailable),
    .serialized,
    .timeLimit(.minutes(1))
)
struct PCSCKernelODATests {
    struct Expected: Sendable {
        var file: String
        var status: EMVOutcome.Status
        var kernel: EMVKernel
        var lastFour: String
    }

    struct Round: Sendable {
        var cards: [Expected]
        /// The terminal floor limit in minor units (the default terminal's is 0: every purchase goes online).
        var floorLimit: Int64 = 0
    }

    static let rounds: [Round] = [
        Round(cards: [
            Expected(
                file: "pay-amex-expresspay.json",
                status: .onlineRequest,
                kernel: .americanExpress,
                lastFour: "0126"
            ),
            Expected(file: "pay-jcb-jspeedy.json", status: .onlineRequest, kernel: .jcb, lastFour: "0505"),
            Expected(file: "pay-discover-dpas.json", status: .onlineRequest, kernel: .discover, lastFour: "9424"),
            Expected(file: "pay-unionpay-quics.json", status: .approved, kernel: .unionPay, lastFour: "8599"),
            Expected(file: "pay-visa-fdda.json", status: .approved, kernel: .visa, lastFour: "0119"),
            Expected(file: "pay-mastercard-cda.json", status: .onlineRequest, kernel: .mastercard, lastFour: "0012"),
        ]),
        Round(cards: [
            Expected(file: "pay-visa-fdda-bad-signature.json", status: .declined, kernel: .visa, lastFour: "0119"),
            Expected(file: "pay-visa-fdda-expired.json", status: .onlineRequest, kernel: .visa, lastFour: "0119"),
            Expected(file: "pay-visa-fdda-unknown-ca.json", status: .declined, kernel: .visa, lastFour: "0119"),
            Expected(
                file: "pay-mastercard-cda-bad-signature.json",
                status: .declined,
                kernel: .mastercard,
                lastFour: "0012"
            ),
        ]),
        // Below the floor limit: terminal action analysis asks for a TC, CDA verifies it, approved offline.
        Round(
            cards: [
                Expected(
                    file: "pay-mastercard-cda-offline.json",
                    status: .approved,
                    kernel: .mastercard,
                    lastFour: "0012"
                )
            ],
            floorLimit: 5000
        ),
    ]

    @Test("each new kernel and each ODA case reads through pcscd", .livePCSCD(.exclusive))
    func kernelsAndODAOverPCSCD() async throws {
        let keys = try CertificationAuthorityKeys(
            contentsOf: PackageFiles.configDirectory + "/keys/ca-public-keys-test.json"
        )
        for (round, floorLimit) in Self.rounds.map({ ($0.cards, $0.floorLimit) }) {
            var settings = TerminalSettings()
            settings.terminalFloorLimit = floorLimit
            let capability = EMVPaymentCapability(settings: settings, certificationAuthorities: keys)
            let readers = Array(LivePCSCD.readers.prefix(round.count))
            try #require(readers.count == round.count)
            var hosts: [VPCDCardHost] = []
            for (reader, expected) in zip(readers, round) {
                let host = VPCDCardHost(card: try loadCard(expected.file), endpoint: reader.endpoint)
                try host.insert()
                hosts.append(host)
            }
            let lanes = readers.indices.map { (lane: "lane-\($0)", reader: readers[$0]) }
            let manifest = try pcscManifest(lanes: lanes)
            let outcomes = try await withKernel(manifest, readers: readers.count) { kernel in
                var outcomes: [EMVOutcome] = []
                for lane in lanes {
                    let outcome = try await kernel.tap(
                        lane: LaneID(lane.lane),
                        options: TapOptions(timeout: .seconds(10))
                    ) {
                        channel,
                        context in
                        try await capability.run(purchase(), on: channel, context: context)
                    }
                    outcomes.append(outcome)
                }
                return outcomes
            }
            for (outcome, expected) in zip(outcomes, round) {
                #expect(outcome.status == expected.status, "\(expected.file): \(outcome.reason)")
                #expect(outcome.application?.kernel == expected.kernel, "\(expected.file)")
                #expect(outcome.lastFourDigits == expected.lastFour, "\(expected.file)")
                if outcome.status != .declined {
                    #expect(outcome.cardData[0x9F26]?.count == 8, "\(expected.file)")
                }
            }
            await removeAndSettle(hosts)
        }
    }
}
