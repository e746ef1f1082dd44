import Foundation
import ProximaCardEmulator
import ProximaCore
import ProximaCrypto
import ProximaTestSupport
import Testing

@testable import LoyaltyCapability

/// The VAS capability against the virtual iPhone (`VASPhone`) and scripted answers.
@Suite struct VASCapabilityTests {
    @Test func onePassDecryptsWithTheKeyItsIdNames() async throws {
        // The merchant's rotated key is listed first: only the key id can pick the right one.
        let (outcome, channel) = try await readVAS(phone([try pass(message: "LOYAL-42")]))
        let entry = try #require(outcome.entries.first)
        #expect(entry.status == .success)
        #expect(entry.message == Array("LOYAL-42".utf8))
        #expect(entry.cryptogramTime == fixedNow)
        #expect(outcome.application?.walletLabel == "ApplePay")
        #expect(channel.commands.count == 2)
        #expect(hex(Array(channel.commands[1].prefix(4))) == "80ca0101")
    }

    @Test func severalMerchantsInOneTapSetTheMoreBitOnAllButTheLast() async throws {
        var card = phone([
            try pass("pass.com.example.loyalty", message: "L-1"), try pass("pass.com.example.coffee", message: "C-2"),
        ])
        let channel = InProcessCardChannel(card: card, reader: "test/phone")
        let capability = AppleVASCapability(settings: try TestKeys.settings(), now: { fixedNow })
        let outcome = try await capability.run(
            VASReadRequest(
                merchants: [
                    VASMerchantRequest(passTypeIdentifier: "pass.com.example.loyalty"),
                    VASMerchantRequest(passTypeIdentifier: "pass.com.example.coffee"),
                ],
                mode: .vasAndPayment
            ),
            on: channel,
            context: tapContext
        )
        #expect(outcome.entries.map(\.status) == [.success, .success])
        #expect(outcome.entries.map(\.message) == [Array("L-1".utf8), Array("C-2".utf8)])
        // 9F26 of each GET VAS DATA, read back from the commands sent.
        let capabilities = try channel.commands.dropFirst().map { command -> [UInt8] in
            let objects = try TLV.decodeAll(try CommandAPDU(bytes: command).data)
            return try #require(objects.first { $0.tag == 0x9F26 }).value
        }
        #expect(capabilities.map(hex) == ["00800081", "00800001"])
        // The phone saw the same.
        _ = card.respond(to: bytes("00a404000a4f53452e5641532e303100"))
        #expect(card.terminalCapabilitiesSeen.isEmpty)
    }

    @Test(arguments: [
        VASEntryStatus.vasDataNotActivated, .userInterventionRequired, .incorrectData, .wrongCommandLength, .wrongP1P2,
        .unsupportedApplicationVersion, .vasDataNotFound,
    ])
    func eachStatusWordBecomesItsStatus(_ status: VASEntryStatus) async throws {
        let (outcome, _) = try await readVAS(phone([try pass(status: status.statusWord)]))
        #expect(outcome.entries.map(\.status) == [status])
        #expect(outcome.entries.first?.message == nil)
    }

    @Test func statusWordTable() {
        let table: [(UInt16, VASEntryStatus)] = [
            (0x9000, .success), (0x6A83, .vasDataNotFound), (0x6287, .vasDataNotActivated),
            (0x6984, .userInterventionRequired), (0x6A80, .incorrectData), (0x6700, .wrongCommandLength),
            (0x6B00, .wrongP1P2), (0x6340, .unsupportedApplicationVersion),
        ]
        for (word, status) in table {
            #expect(VASEntryStatus(statusWord: StatusWord(rawValue: word)) == status)
            #expect(status.statusWord.rawValue == word)
        }
        #expect(VASEntryStatus(statusWord: StatusWord(rawValue: 0x6A82)) == nil)
    }

    @Test func aPassTheMerchantLacksIsNotFound() async throws {
        let (outcome, _) = try await readVAS(phone([try pass("pass.com.example.other")]))
        #expect(outcome.entries.map(\.status) == [.vasDataNotFound])
    }

    @Test func aPaymentCardWithoutVASGivesNotFoundForEveryMerchant() async throws {
        let card = try CardProfiles.load(contentsOf: PackageFiles.cardsDirectory + "/pay-visa-qvsdc.json")
        let (outcome, channel) = try await readVAS(
            card,
            merchants: ["pass.com.example.loyalty", "pass.com.example.coffee"]
        )
        #expect(outcome.application == nil)
        #expect(outcome.entries.map(\.status) == [.vasDataNotFound, .vasDataNotFound])
        #expect(channel.commands.count == 1)
    }

    @Test func anotherVASVersionIsUnsupported() async throws {
        var card = phone([try pass()])
        card.applicationVersion = [0x02, 0x00]
        let (outcome, channel) = try await readVAS(card)
        #expect(outcome.entries.map(\.status) == [.unsupportedApplicationVersion])
        #expect(channel.commands.count == 1)
    }

    @Test func paymentOnlySendsNothing() async throws {
        let (outcome, channel) = try await readVAS(phone([try pass()]), mode: .paymentOnly)
        #expect(outcome.entries.isEmpty)
        #expect(channel.commands.isEmpty)
    }

    @Test func alteredTagIsRejected() async throws {
        let error = await loyaltyError { _ = try await readVAS(phone([try pass(alterTag: true)])) }
        #expect(error?.code == .cryptogramRejected)
        #expect(error?.step == "DECRYPT 9F27 pass.com.example.loyalty")
        #expect(error?.reader == "test/phone")
    }

    @Test func wrongKeyIDIsRefusedBeforeECDH() async throws {
        let error = await loyaltyError { _ = try await readVAS(phone([try pass(keyID: [0xDE, 0xAD, 0xBE, 0xEF])])) }
        #expect(error?.code == .unknownKey)
        #expect(error?.reason.lowercased().contains("deadbeef") == true)
    }

    @Test func aPassForAnotherKeyIsRefused() async throws {
        var other = try pass()
        other.merchantKey = try P256.PrivateKey().publicKey
        let error = await loyaltyError { _ = try await readVAS(phone([other])) }
        #expect(error?.code == .unknownKey)
    }

    @Test(arguments: [-301, 301, -86_400])
    func timestampsBeyondTheAgeAreStale(_ offset: Int64) async throws {
        let error = await loyaltyError { _ = try await readVAS(phone([try pass(offset: offset)])) }
        #expect(error?.code == .staleCryptogram)
        #expect(error?.reason.contains("\(abs(offset)) s") == true)
    }

    @Test func timestampsWithinTheAgeAreAccepted() async throws {
        let (outcome, _) = try await readVAS(phone([try pass(offset: -299)]))
        #expect(outcome.entries.map(\.status) == [.success])
    }

    @Test func truncatedAnswersFailNamingTheStep() async throws {
        let fci = "6f1d50084170706c655061799f210201009f2404e9caede39f23040000003e"
        for answer in ["70549f2a009f274e" + String(repeating: "00", count: 20), "7003", "6f00", "9f2700", "70039f2a00"]
        {
            let channel = ScriptedChannel(reader: "test/scripted")
            channel.expect("00a404000a4f53452e5641532e303100", respond: fci + "9000")
            channel.expect(
                try VASResponses.getVASDataCommand(
                    passTypeHash: SHA256.hash(Array("pass.com.example.loyalty".utf8)),
                    signupURL: nil,
                    mode: .vasOnly,
                    moreFollow: false,
                    terminalNonce: [0xA1, 0xA2, 0xA3, 0xA4]
                ).bytes,
                respond: ResponseAPDU(data: bytes(answer), status: .success)
            )
            let capability = AppleVASCapability(
                settings: try TestKeys.settings(),
                now: { fixedNow },
                terminalNonces: { [0xA1, 0xA2, 0xA3, 0xA4] }
            )
            let error = await loyaltyError {
                _ = try await capability.run(
                    VASReadRequest(
                        merchants: [VASMerchantRequest(passTypeIdentifier: "pass.com.example.loyalty")],
                        mode: .vasOnly
                    ),
                    on: channel,
                    context: tapContext
                )
            }
            #expect(error?.code == .cardReadFailed, "answer \(answer)")
            #expect(error?.step == "GET VAS DATA pass.com.example.loyalty", "answer \(answer)")
        }
    }

    @Test func malformedFCIFails() {
        for answer in ["6f", "6f05500841", "6f049f2101", "6f089f2102010050015a", "7000"] {
            #expect(throws: LoyaltyError.self, "answer \(answer)") { try VASResponses.selectResponse(bytes(answer)) }
        }
        // An FCI without 9F21 (an Android phone's) is no Apple VAS application, not an error.
        #expect((try? VASResponses.selectResponse(bytes("6f0c500a416e64726f6964506179")))?.version == [])
    }

    @Test func shortCryptogramsAreRefused() throws {
        let merchant = try TestKeys.merchant("pass.com.example.loyalty", keys: [try TestKeys.merchantKey])
        for count in [0, 4, 36, 55] {
            #expect(throws: LoyaltyError(.cardReadFailed, step: "", "")) {
                try VASCryptogram.decrypt([UInt8](repeating: 0x42, count: count), merchant: merchant)
            }
        }
    }

    @Test func anUndefinedStatusWordFails() async throws {
        let channel = ScriptedChannel(reader: "test/scripted")
        channel.expect(
            "00a404000a4f53452e5641532e303100",
            respond: "6f1d50084170706c655061799f210201009f2404e9caede39f23040000003e9000"
        )
        channel.expect(
            try VASResponses.getVASDataCommand(
                passTypeHash: SHA256.hash(Array("pass.com.example.loyalty".utf8)),
                signupURL: nil,
                mode: .vasOnly,
                moreFollow: false,
                terminalNonce: [0xA1, 0xA2, 0xA3, 0xA4]
            ).bytes,
            respond: ResponseAPDU(status: StatusWord(rawValue: 0x6A82))
        )
        let capability = AppleVASCapability(
            settings: try TestKeys.settings(),
            now: { fixedNow },
            terminalNonces: { [0xA1, 0xA2, 0xA3, 0xA4] }
        )
        let error = await loyaltyError {
            _ = try await capability.run(
                VASReadRequest(
                    merchants: [VASMerchantRequest(passTypeIdentifier: "pass.com.example.loyalty")],
                    mode: .vasOnly
                ),
                on: channel,
                context: tapContext
            )
        }
        #expect(error?.code == .cardReadFailed)
        #expect(error?.reason.contains("6A82") == true)
    }

    @Test func anUnconfiguredMerchantIsRefusedBeforeAnyAPDU() async throws {
        let card = phone([try pass()])
        let channel = InProcessCardChannel(card: card, reader: "test/phone")
        let capability = AppleVASCapability(settings: try TestKeys.settings(), now: { fixedNow })
        let error = await loyaltyError {
            _ = try await capability.run(
                VASReadRequest(merchants: [VASMerchantRequest(passTypeIdentifier: "pass.com.unknown")], mode: .vasOnly),
                on: channel,
                context: tapContext
            )
        }
        #expect(error?.code == .invalidRequest)
        #expect(error?.reason.contains("pass.com.unknown") == true)
        #expect(channel.commands.isEmpty)
    }

    @Test func thePhoneAnswersThePaymentCardAfterThePass() async throws {
        let visa = try CardProfiles.load(contentsOf: PackageFiles.cardsDirectory + "/pay-visa-qvsdc.json")
        let (outcome, channel) = try await readVAS(phone([try pass()], paymentCard: visa))
        #expect(outcome.entries.map(\.status) == [.success])
        let ppse = try await channel.transmit(
            CommandAPDU(cla: 0, ins: 0xA4, p1: 4, p2: 0, data: Array("2PAY.SYS.DDF01".utf8), expectedLength: 256)
        )
        #expect(ppse.status == .success)
        #expect(hex(ppse.data).contains("a0000000031010"))
    }

    @Test func everyVASPhoneProfileLoads() throws {
        let names = try FileManager.default.contentsOfDirectory(atPath: PackageFiles.cardsDirectory)
            .filter { $0.hasPrefix("vas-") }.sorted()
        #expect(names.count == 6)
        for name in names {
            let card = try CardProfiles.load(contentsOf: PackageFiles.cardsDirectory + "/" + name)
            #expect(card is VASPhone, "\(name)")
        }
    }
}
