import Foundation
import LoyaltyCapability
import ProximaCardEmulator
import ProximaCore
import ProximaCrypto
import ProximaKernel
import ProximaTestSupport
import Testing

@testable import PaymentCapability

/// Loyalty then payment in one tap through the whole stack: kernel → PC/SC transport → libpcsclite → pcscd → vpcd →
/// `VPCDCardHost` → the virtual iPhone of `Config/cards/vas-iphone-loyalty-visa.json` (its pass, then its Visa).
@Suite(
    "Loyalty then payment in one tap through real pcscd with vpcd",
    .enabled(if: LivePCSCD.isAvailable),
    .serialized,
    .timeLimit(.minutes(1))
)
struct PCSCVASTests {
    static func settings() throws -> LoyaltySettings {
        let path = PackageFiles.configDirectory + "/keys/vas-test-private.pem"
        let key = try P256.PrivateKey(pemRepresentation: String(contentsOfFile: path, encoding: .utf8))
        return LoyaltySettings(
            merchants: [
                LoyaltySettings.Merchant(
                    passTypeIdentifier: "pass.com.example.loyalty",
                    passTypeHash: try SHA256.hash(Array("pass.com.example.loyalty".utf8)),
                    keys: [try LoyaltySettings.VASKey(privateKey: key, path: path)]
                )
            ],
            maxCryptogramAge: .seconds(300)
        )
    }

    @Test("a virtual iPhone gives its pass and its card in one card presence", .livePCSCD(.shared))
    func passThenCardInOneConnect() async throws {
        let reader = LivePCSCD.c1
        let host = VPCDCardHost(card: try loadCard("vas-iphone-loyalty-visa.json"), endpoint: reader.endpoint)
        try host.insert()
        let manifest = try pcscManifest(lanes: [("lane-1", reader)])
        let capability = AppleVASCapability(settings: try Self.settings())
        let (vas, payment) = try await withKernel(manifest, readers: 1) { kernel in
            try await kernel.tap(lane: "lane-1", options: TapOptions(timeout: .seconds(10))) { channel, context in
                let vas = try await capability.run(
                    VASReadRequest(
                        merchants: [VASMerchantRequest(passTypeIdentifier: "pass.com.example.loyalty")],
                        mode: .vasAndPayment
                    ),
                    on: channel,
                    context: context
                )
                let payment = try await EMVPaymentCapability().run(purchase(), on: channel, context: context)
                return (vas, payment)
            }
        }
        #expect(vas.entries.map(\.status) == [.success])
        #expect(vas.entries.first?.message == Array("PROXIMA-LOYALTY-0002".utf8))
        #expect(payment.status == .onlineRequest)
        #expect(payment.selectedApplicationIdentifier?.hexString == "A0000000031010")
        // One connect: the phone was presented once and answered VAS and payment APDUs in it.
        #expect(host.presenceCount == 1)
        #expect(host.commandsAnswered >= 7, "\(host.commandsAnswered) APDUs")
        await removeAndSettle([host])
    }
}
