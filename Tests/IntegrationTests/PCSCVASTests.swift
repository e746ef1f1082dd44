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

    @Test("a virtual iPhone gives its pass and its card in one card presence", .livePCSCD(.exclusive))
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

/// Google Smart Tap then payment in one tap through the same stack, on the virtual Android phone of
/// `Config/cards/smarttap-android-loyalty-visa.json` (a zlib-compressed pass answered in 64-byte parts with `9100`,
/// then its Visa).
@Suite(
    "Smart Tap then payment in one tap through real pcscd with vpcd",
    .enabled(if: LivePCSCD.isAvailable),
    .serialized,
    .timeLimit(.minutes(1))
)
struct PCSCSmartTapTests {
    @Test("a virtual Android phone gives its Smart Tap pass and its card in one card presence", .livePCSCD(.exclusive))
    func passThenCardInOneConnect() async throws {
        let reader = LivePCSCD.c1
        let host = VPCDCardHost(card: try loadCard("smarttap-android-loyalty-visa.json"), endpoint: reader.endpoint)
        try host.insert()
        let manifest = try pcscManifest(lanes: [("lane-1", reader)])
        var settings = try PCSCVASTests.settings()
        let path = PackageFiles.configDirectory + "/keys/smarttap-test-private.pem"
        settings.smartTap = try LoyaltySettings.SmartTap(
            collectorID: 20_180_608,
            keyVersion: 1,
            privateKey: try P256.PrivateKey(pemRepresentation: String(contentsOfFile: path, encoding: .utf8))
        )
        let capability = AppleVASCapability(settings: settings)
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
        // The Apple merchant is not on an Android phone; the collector's pass is.
        #expect(vas.entries.map(\.passTypeIdentifier) == ["pass.com.example.loyalty", "20180608"])
        #expect(vas.entries.map(\.status) == [.vasDataNotFound, .success])
        #expect(vas.entries.last?.message == Array("PROXIMA-GOOGLE-0002".utf8))
        #expect(payment.status == .onlineRequest)
        #expect(payment.selectedApplicationIdentifier?.hexString == "A0000000031010")
        #expect(host.presenceCount == 1)
        // SELECT OSE, SELECT Smart Tap 2, NEGOTIATE, GET DATA, at least one GET MORE DATA, then the payment's APDUs.
        #expect(host.commandsAnswered >= 5 + 7, "\(host.commandsAnswered) APDUs")
        await removeAndSettle([host])
    }
}
