import Foundation
import ProximaCore
import ProximaCrypto
import ProximaTestSupport
import Testing

@testable import LoyaltyCapability

/// The one real, published VAS read: kormax/apple-vas `examples/traces/VASONLY.READ.log` (MIT), decrypted with
/// PassKit's public demo key from proxmark3 `client/resources/vas.passkit.der` (see Vectors/README.md).
@Suite struct AppleVASVectorTests {
    static let passTypeIdentifier = "pass.com.passkit.pksamples.nfcdemo"
    static let selectAnswer = "6f1d50084170706c655061799f210201009f2404e9caede39f23040000003e"
    static let cryptogram =
        "c0b77375d3f37956d84a538f28ac2a04b38ddc1a67d3647a4dd30abd736ea1cea8038388692e89db99e4746d872de782395640c536e79a75c47a9343da0af3937f06eeca7a865c4ad05a2c543ad2"
    /// The trace's GET VAS DATA data field (after `80CA0101 4B`, before `00`).
    static let traceCommandData =
        "9f220201009f252003b57cdb3eca0984ba9abdc2fb45d86626d87b39d33c5c6dbbc313a6347a31469f2604008000029f2b050100000000"
        + "9f291168747470733a2f2f6170706c652e636f6d"
    /// 2023-07-09 16:35:58 UTC in seconds since 2001-01-01.
    static let publishedTimestamp: TimeInterval = 710_613_358

    static func demoMerchant() throws -> LoyaltySettings.Merchant {
        let key = try P256.PrivateKey(pemRepresentation: try Vectors.text("passkit-demo-vas-private.pem"))
        return try TestKeys.merchant(passTypeIdentifier, keys: [key])
    }

    @Test func publishedCryptogramDecryptsToThePublishedMessageAndTimestamp() throws {
        let pass = try VASCryptogram.decrypt(bytes(Self.cryptogram), merchant: Self.demoMerchant())
        #expect(String(decoding: pass.message, as: UTF8.self) == "6d1UlFpnOc50iVKRaboDOK")
        #expect(pass.timestamp.timeIntervalSinceReferenceDate == Self.publishedTimestamp)
        #expect(
            CivilTime(unixSeconds: Int64(pass.timestamp.timeIntervalSince1970))
                == CivilTime(year: 2023, month: 7, day: 9, hour: 16, minute: 35, second: 58)
        )
    }

    @Test func intermediatesMatchTheIndependentComputation() throws {
        let merchant = try Self.demoMerchant()
        #expect(hex(merchant.passTypeHash) == "03b57cdb3eca0984ba9abdc2fb45d86626d87b39d33c5c6dbbc313a6347a3146")
        #expect(hex(try #require(merchant.keys.first).keyID) == "c0b77375")
        #expect(
            hex(VASCryptogram.sharedInfo(passTypeHash: merchant.passTypeHash))
                == "0d69642d6165733235362d47434d4170706c6550617920656e6372797074656420564153206461746103b57cdb3eca"
                + "0984ba9abdc2fb45d86626d87b39d33c5c6dbbc313a6347a3146"
        )
        let x = Array(bytes(Self.cryptogram)[4..<36])
        let z = try #require(merchant.keys.first).privateKey.sharedSecret(
            with: P256.PublicKey(compressedRepresentation: [0x02] + x)
        )
        #expect(hex(z) == "63813b5efcc1d744b0888ca05d52dad97b73731f4c3b3283655b6a3219263911")
        let k = try X963KDF.deriveKey(
            sharedSecret: z,
            sharedInfo: VASCryptogram.sharedInfo(passTypeHash: merchant.passTypeHash),
            outputByteCount: 32
        )
        #expect(hex(k) == "c5a7023fe339ea5a39f0b3fba2defdacd37b639e96028daf6dbd362c32b291bf")
    }

    @Test func traceSelectAnswerParses() throws {
        let info = try VASResponses.selectResponse(bytes(Self.selectAnswer))
        #expect(info.walletLabel == "ApplePay")
        #expect(info.version == [0x01, 0x00])
        #expect(info.deviceNonce == bytes("e9caede3"))
        #expect(info.capabilities == bytes("0000003e"))
        #expect(info.mayPerformVAS && info.mayPerformPayment)
    }

    @Test func commandCarriesTheTraceTLVsThenTheTerminalNonce() throws {
        let merchant = try Self.demoMerchant()
        let command = try VASResponses.getVASDataCommand(
            passTypeHash: merchant.passTypeHash,
            signupURL: "https://apple.com",
            mode: .vasOnly,
            moreFollow: false,
            terminalNonce: [0x11, 0x22, 0x33, 0x44]
        )
        #expect(hex(Array(command.bytes.prefix(4))) == "80ca0101")
        #expect(hex(command.data) == Self.traceCommandData + "9f280411223344")
        #expect(command.expectedLength == 256)
    }

    /// The whole trace replayed through the capability: SELECT, GET VAS DATA, decryption, age check.
    @Test func traceReplaysThroughTheCapability() async throws {
        let merchant = try Self.demoMerchant()
        let channel = ScriptedChannel(reader: "test/trace")
        channel.expect("00a404000a4f53452e5641532e303100", respond: Self.selectAnswer + "9000")
        channel.expect(
            "80ca010152" + Self.traceCommandData + "9f280400000000" + "00",
            respond: "70549f2a009f274e" + Self.cryptogram + "9000"
        )
        let capability = AppleVASCapability(
            settings: LoyaltySettings(merchants: [merchant], maxCryptogramAge: .seconds(300)),
            now: { Date(timeIntervalSinceReferenceDate: Self.publishedTimestamp + 30) },
            terminalNonces: { [0, 0, 0, 0] }
        )
        let outcome = try await capability.run(
            VASReadRequest(
                merchants: [
                    VASMerchantRequest(passTypeIdentifier: Self.passTypeIdentifier, signupURL: "https://apple.com")
                ],
                mode: .vasOnly
            ),
            on: channel,
            context: TapContext(lane: "lane-1", reader: "test/trace", tapID: 1)
        )
        try channel.finish()
        let entry = try #require(outcome.entries.first)
        #expect(outcome.entries.count == 1)
        #expect(entry.status == .success)
        #expect(entry.message.map { String(decoding: $0, as: UTF8.self) } == "6d1UlFpnOc50iVKRaboDOK")
        #expect(entry.mobileToken == nil)

        // The same trace a day later: refused by age alone (no reader nonce stops a replay).
        let later = AppleVASCapability(
            settings: LoyaltySettings(merchants: [merchant], maxCryptogramAge: .seconds(300)),
            now: { Date(timeIntervalSinceReferenceDate: Self.publishedTimestamp + 86_400) },
            terminalNonces: { [0, 0, 0, 0] }
        )
        let replay = ScriptedChannel(reader: "test/trace")
        replay.expect("00a404000a4f53452e5641532e303100", respond: Self.selectAnswer + "9000")
        replay.expect(
            "80ca010152" + Self.traceCommandData + "9f280400000000" + "00",
            respond: "70549f2a009f274e" + Self.cryptogram + "9000"
        )
        let error = await loyaltyError {
            _ = try await later.run(
                VASReadRequest(
                    merchants: [
                        VASMerchantRequest(passTypeIdentifier: Self.passTypeIdentifier, signupURL: "https://apple.com")
                    ],
                    mode: .vasOnly
                ),
                on: replay,
                context: TapContext(lane: "lane-1", reader: "test/trace", tapID: 2)
            )
        }
        #expect(error?.code == .staleCryptogram)
        #expect(error?.reader == "test/trace")
        #expect(error?.reason.contains("86400 s old") == true)
    }
}
