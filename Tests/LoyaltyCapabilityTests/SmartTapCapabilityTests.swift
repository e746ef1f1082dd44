import Foundation
import ProximaCardEmulator
import ProximaCore
import ProximaCrypto
import ProximaTestSupport
import Testing

@testable import LoyaltyCapability

/// The Smart Tap steps against the virtual Android phone: status words, refused sessions, altered MACs, chained
/// and compressed answers, and both wallets through one request.
@Suite struct SmartTapCapabilityTests {
    static var collectorKey: P256.PrivateKey { get throws { try TestKeys.privateKey("smarttap-test-private.pem") } }

    static func settings(collectorID: UInt32 = 20_180_608, keyVersion: UInt32 = 1) throws -> LoyaltySettings {
        var settings = try TestKeys.settings()
        settings.smartTap = try LoyaltySettings.SmartTap(
            collectorID: collectorID,
            keyVersion: keyVersion,
            privateKey: try collectorKey
        )
        return settings
    }

    static func android(
        value: String = "GOOGLE-42",
        collectorID: UInt32 = 20_180_608,
        keyVersion: UInt32 = 1,
        collectorKey: P256.PublicKey? = nil,
        status: StatusWord? = nil,
        compress: Bool = false,
        chunkSize: Int = 240,
        alterMAC: Bool = false,
        paymentCard: (any VirtualCard)? = nil
    ) throws -> SmartTapPhone {
        SmartTapPhone(
            name: "test Android phone",
            passes: [
                SmartTapPhone.Pass(
                    collectorID: collectorID,
                    keyVersion: keyVersion,
                    collectorKey: try collectorKey ?? Self.collectorKey.publicKey,
                    redemptionValue: Array(value.utf8),
                    compress: compress,
                    statusWord: status
                )
            ],
            paymentCard: paymentCard,
            chunkSize: chunkSize,
            alterMAC: alterMAC
        )
    }

    static func read(
        _ card: any VirtualCard,
        merchants: [String] = ["pass.com.example.loyalty"],
        mode: VASMode = .vasOnly,
        settings: LoyaltySettings? = nil
    ) async throws -> (VASOutcome, InProcessCardChannel) {
        try await readVAS(card, merchants: merchants, mode: mode, settings: settings ?? Self.settings())
    }

    @Test func anApplePassRequestReadsTheAndroidPassUnderTheCollectorID() async throws {
        let (outcome, channel) = try await Self.read(try Self.android(value: "GOOGLE-42"))
        #expect(outcome.entries.map(\.passTypeIdentifier) == ["pass.com.example.loyalty", "20180608"])
        #expect(outcome.entries.map(\.status) == [.vasDataNotFound, .success])
        #expect(outcome.entries.last?.message == Array("GOOGLE-42".utf8))
        #expect(outcome.application?.walletLabel == "AndroidPay")
        // SELECT OSE, SELECT Smart Tap 2, NEGOTIATE, GET DATA.
        #expect(channel.commands.map { hex(Array($0.prefix(2))) } == ["00a4", "00a4", "9053", "9050"])
    }

    @Test func theCollectorNamedInTheRequestTakesItsPlace() async throws {
        let (outcome, _) = try await Self.read(
            try Self.android(),
            merchants: ["20180608", "pass.com.example.loyalty"]
        )
        #expect(outcome.entries.map(\.passTypeIdentifier) == ["20180608", "pass.com.example.loyalty"])
        #expect(outcome.entries.map(\.status) == [.success, .vasDataNotFound])
    }

    @Test func anIPhoneGivesTheNamedCollectorNotFound() async throws {
        let (outcome, _) = try await Self.read(
            phone([try pass(message: "APPLE-1")]),
            merchants: ["pass.com.example.loyalty", "20180608"]
        )
        #expect(outcome.entries.map(\.status) == [.success, .vasDataNotFound])
        #expect(outcome.entries.first?.message == Array("APPLE-1".utf8))
    }

    @Test func chainedAndCompressedAnswersAreJoinedAndInflated() async throws {
        let value = String(repeating: "LONG-REDEMPTION-VALUE-", count: 20)
        let (outcome, channel) = try await Self.read(
            try Self.android(value: value, compress: true, chunkSize: 32),
            merchants: ["20180608"]
        )
        #expect(outcome.entries.first?.status == .success)
        #expect(outcome.entries.first?.message == Array(value.utf8))
        let moreData = channel.commands.filter { $0.count >= 2 && $0[0] == 0x90 && $0[1] == 0xC0 }
        #expect(moreData.count >= 2)
        #expect(channel.responses.last.map { hex(Array($0.suffix(2))) } == "9000")
    }

    @Test(arguments: [
        ("9001", VASEntryStatus.vasDataNotFound), ("9102", .vasDataNotFound), ("9302", .userInterventionRequired),
        ("9300", .userInterventionRequired),
    ])
    func getDataStatusWordsBecomeStatuses(_ word: String, _ status: VASEntryStatus) async throws {
        let sw = bytes(word)
        let (outcome, _) = try await Self.read(
            try Self.android(status: StatusWord(sw[0], sw[1])),
            merchants: ["20180608"]
        )
        #expect(outcome.entries.map(\.status) == [status])
        #expect(outcome.entries.first?.message == nil)
    }

    /// Every status word Google's status-words page (as proxmark3 names its values) lists outside success, plus one
    /// undefined family: the error code and the words of its reason.
    @Test(arguments: [
        ("9200", LoyaltyError.Code.cardReadFailed, "transient failure"), ("9201", .cardReadFailed, "transient crypto"),
        ("9203", .cardReadFailed, "transient execution"),
        ("9400", .commandRejected, "does not know this terminal command"),
        ("9402", .commandRejected, "could not parse"), ("9403", .commandRejected, "crypto input"),
        ("9404", .commandRejected, "GET MORE DATA does not apply"), ("9405", .commandRejected, "no more data"),
        ("9406", .commandRejected, "too many requests"), ("9407", .commandRejected, "no merchant set"),
        ("9408", .commandRejected, "pushback URI"), ("94ff", .commandRejected, "rejects the terminal's command"),
        ("9500", .sessionRefused, "could not authenticate the terminal"), ("9502", .sessionRefused, "version"),
        ("95ff", .sessionRefused, "refuses permanently"), ("6a80", .cardReadFailed, "not a Smart Tap status word"),
    ])
    func failingStatusWordsAreClearErrors(_ word: String, _ code: LoyaltyError.Code, _ says: String) async throws {
        let sw = bytes(word)
        let card = try Self.android(status: StatusWord(sw[0], sw[1]))
        let error = await loyaltyError { _ = try await Self.read(card, merchants: ["20180608"]) }
        #expect(error?.code == code)
        #expect(error?.step == "GET DATA 20180608")
        #expect(error?.reason.lowercased().contains(word) == true)
        #expect(error?.reason.contains(says) == true)
        #expect(error?.reader == "test/phone")
    }

    /// SW1 decides the family; SW2 values nobody lists fall into their family.
    @Test(arguments: [
        (0x9000, SmartTapStatus.success), (0x9002, .success), (0x9101, .success), (0x9100, .moreData),
        (0x9001, .noPass), (0x9102, .noPass), (0x9200, .transient), (0x92AB, .transient), (0x9300, .userAction),
        (0x9302, .userAction), (0x9400, .commandRejected), (0x9406, .commandRejected), (0x94AB, .commandRejected),
        (0x9500, .refused), (0x9502, .refused), (0x95AB, .refused), (0x6A80, .undefined), (0x9600, .undefined),
    ])
    func statusWordFamilies(_ word: Int, _ status: SmartTapStatus) {
        #expect(SmartTapStatus(StatusWord(rawValue: UInt16(word))) == status)
    }

    @Test func aPhoneWithoutThisCollectorsPassRefusesTheSession() async throws {
        let error = await loyaltyError {
            _ = try await Self.read(try Self.android(collectorID: 13_380_028), merchants: ["20180608"])
        }
        #expect(error?.code == .sessionRefused)
        #expect(error?.step == "NEGOTIATE SECURE CHANNEL 20180608")
        #expect(error?.reason.contains("9500") == true)
        #expect(error?.reason.contains("collector 20180608, key version 1") == true)
    }

    @Test func anotherKeyVersionIsRefused() async throws {
        let error = await loyaltyError {
            _ = try await Self.read(
                try Self.android(),
                merchants: ["20180608"],
                settings: try Self.settings(keyVersion: 2)
            )
        }
        #expect(error?.code == .sessionRefused)
        #expect(error?.reason.contains("key version 2") == true)
    }

    @Test func aSignatureByAnotherKeyIsRefused() async throws {
        // The phone knows collector 20180608 with another public key: the reader's signature cannot verify.
        let card = try Self.android(collectorKey: try TestKeys.merchantKey.publicKey)
        let error = await loyaltyError { _ = try await Self.read(card, merchants: ["20180608"]) }
        #expect(error?.code == .sessionRefused)
        #expect(error?.reason.contains("9500") == true)
        #expect(error?.reason.contains("signature") == true)
    }

    @Test func anAlteredMACIsRejectedBeforeDecryption() async throws {
        let error = await loyaltyError {
            _ = try await Self.read(try Self.android(alterMAC: true), merchants: ["20180608"])
        }
        #expect(error?.code == .cryptogramRejected)
        #expect(error?.reason.contains("HMAC") == true)
    }

    @Test func withoutSmartTapSettingsAnAndroidPhoneHasNoPass() async throws {
        let (outcome, channel) = try await readVAS(try Self.android())
        #expect(outcome.entries.map(\.status) == [.vasDataNotFound])
        #expect(channel.commands.count == 1)
    }

    @Test func aPaymentCardAnswersAfterThePassInTheSameTap() async throws {
        let visa = try CardProfiles.load(contentsOf: PackageFiles.configDirectory + "/cards/pay-visa-qvsdc.json")
        let card = try Self.android(paymentCard: visa)
        let channel = InProcessCardChannel(card: card, reader: "test/phone")
        let capability = AppleVASCapability(settings: try Self.settings(), now: { fixedNow })
        let outcome = try await capability.run(
            VASReadRequest(merchants: [VASMerchantRequest(passTypeIdentifier: "20180608")], mode: .vasAndPayment),
            on: channel,
            context: tapContext
        )
        #expect(outcome.hasSuccess)
        let getData = try #require(channel.commands.first { $0.count > 2 && $0[1] == 0x50 })
        #expect(Array(getData.suffix(6).prefix(5)) == [0x41, 0x00, 0x00, 0x00, 0x04])  // pcr: pass and payment
        let ppse = try await channel.transmit(
            try CommandAPDU(cla: 0, ins: 0xA4, p1: 4, p2: 0, data: Array("2PAY.SYS.DDF01".utf8), expectedLength: 256)
        )
        #expect(ppse.status == .success)
    }

    @Test func profilesLoadAndReadThroughTheProfileKind() async throws {
        let card = try CardProfiles.load(
            contentsOf: PackageFiles.configDirectory + "/cards/smarttap-android-loyalty-visa.json"
        )
        #expect(card is SmartTapPhone)
        let (outcome, _) = try await Self.read(card, merchants: ["20180608"], mode: .vasAndPayment)
        #expect(outcome.entries.first?.message == Array("PROXIMA-GOOGLE-0002".utf8))
        let choose = try CardProfiles.load(
            contentsOf: PackageFiles.configDirectory + "/cards/smarttap-android-choose.json"
        )
        #expect(
            try await Self.read(choose, merchants: ["20180608"]).0.entries.map(\.status) == [.userInterventionRequired]
        )
    }
}

/// The Smart Tap parsers on hostile bytes: errors naming what and where, never a trap.
@Suite struct SmartTapParserTests {
    @Test func ndefRoundTripsShortLongAndIDRecords() throws {
        let records = [
            NDEFRecord(type: "ses", payload: [1, 2, 3]),
            NDEFRecord(
                tnf: NDEFRecord.wellKnown,
                type: "n",
                id: Array("n".utf8),
                payload: [UInt8](repeating: 7, count: 300)
            ),
        ]
        let encoded = NDEF.encode(records)
        #expect(encoded[0] == 0x94)  // MB | SR | TNF 4
        #expect(try NDEF.decode(encoded, step: "t") == records)
    }

    @Test(arguments: [
        "", "d4", "d403", "d40305736573", "94030173657301d4030173657301", "d403057365730102030405ff",
        "1403017365730100", "f4030173657301",
    ])
    func malformedNDEFIsACardReadFailure(_ input: String) {
        #expect(throws: LoyaltyError(.cardReadFailed, step: "", "")) { try NDEF.decode(bytes(input), step: "t") }
    }

    @Test func aTruncatedSelectAnswerOrNoncePrefixIsRefused() {
        #expect(throws: LoyaltyError(.cardReadFailed, step: "", "")) {
            try VASSession.parseSmartTapSelection(bytes("00000001dc0321036d646e6d646e04"))
        }
        #expect(throws: LoyaltyError(.cardReadFailed, step: "", "")) {
            try VASSession.parseSelectResponse(bytes("6f0a500a416e64726f6964506179"))
        }
        // kormax's published OSE answer of an Android phone parses, with its nonce and key.
        let published = bytes(
            "6f8184500a416e64726f6964506179c0020001c108cc00000000008080c22056d2ec8f857f0049aa54f1ca1de2791b5693a701"
                + "4e6e4565d5644b1c2a305136c32103dfee38dbdb68a607383ad622640b180cc7e27d796b4e788c40e5d994291c71fca523bf"
                + "0c20611e4f09a000000476d0000111870101730edf6d020000df4d020001df620103"
        )
        let info = try? VASSession.parseSelectResponse(published)
        #expect(info?.version.isEmpty == true)
        #expect(info?.smartTap?.offersSmartTap2 == true)
        #expect(
            info?.smartTap?.deviceNonce.map(hex) == "56d2ec8f857f0049aa54f1ca1de2791b5693a7014e6e4565d5644b1c2a305136"
        )
        // And kormax's SELECT Smart Tap 2 answer gives the same nonce.
        let selection = try? VASSession.parseSmartTapSelection(
            bytes("00000001dc0321036d646e6d646e0456d2ec8f857f0049aa54f1ca1de2791b5693a7014e6e4565d5644b1c2a305136")
        )
        #expect(selection?.deviceNonce == info?.smartTap?.deviceNonce)
    }

    @Test func kormaxsPublishedNegotiateAnswerParses() throws {
        let sent = SmartTapSessionRecord(sessionID: bytes("6b159a80fc8283fd"), sequence: 0)
        let (session, key) = try VASSession.parseNegotiateResponse(
            bytes(
                "d403376e727394030a7365736b159a80fc8283fd010154032164706b03dfee38dbdb68a607383ad622640b180cc7e27d796b"
                    + "4e788c40e5d994291c71fc"
            ),
            sent: sent,
            step: "t"
        )
        #expect(session.sequence == 1)
        #expect(hex(key) == "03dfee38dbdb68a607383ad622640b180cc7e27d796b4e788c40e5d994291c71fc")
        // Another session id is refused.
        let other = SmartTapSessionRecord(sessionID: [UInt8](repeating: 0, count: 8), sequence: 0)
        #expect(throws: LoyaltyError(.cardReadFailed, step: "", "")) {
            try VASSession.parseNegotiateResponse(
                bytes(
                    "d403376e727394030a7365736b159a80fc8283fd010154032164706b03dfee38dbdb68a607383ad622640b180cc7e27d"
                        + "796b4e788c40e5d994291c71fc"
                ),
                sent: other,
                step: "t"
            )
        }
    }

    @Test func aBundleWithoutARedemptionValueOrWithBadZlibIsRefused() throws {
        let keys = SmartTapCrypto.SessionKeys(
            encryption: [UInt8](repeating: 1, count: 16),
            authentication: [UInt8](repeating: 2, count: 32)
        )
        let noValue = NDEF.encode([
            NDEFRecord(
                type: "asv",
                payload: NDEF.encode([
                    NDEFRecord(type: "ly", payload: NDEF.encode([NDEFRecord(type: "i", payload: [4])]))
                ])
            )
        ])
        let sealed = try SmartTapCrypto.sealBundle(noValue, iv: [UInt8](repeating: 3, count: 12), keys: keys)
        #expect(throws: LoyaltyError(.cardReadFailed, step: "", "")) {
            try VASSession.openSmartTapPass(sealed, keys: keys, collector: "1")
        }
        let badZlib = try SmartTapCrypto.sealBundle(
            [0x78, 0x9C, 0xFF, 0xFF],
            iv: [UInt8](repeating: 3, count: 12),
            keys: keys,
            flags: 0x03
        )
        #expect(throws: LoyaltyError(.cardReadFailed, step: "", "")) {
            try VASSession.openSmartTapPass(badZlib, keys: keys, collector: "1")
        }
    }

    @Test func zlibRefusesABombBeyondItsLimit() throws {
        let bomb = try Zlib.deflate([UInt8](repeating: 0, count: 200_000))
        #expect(throws: ProximaError(.malformedData)) { try Zlib.inflate(bomb, maximumOutput: 65_536) }
        #expect(try Zlib.inflate(bomb, maximumOutput: 200_000).count == 200_000)
        #expect(throws: ProximaError(.malformedData)) {
            try Zlib.inflate(Array(bomb.dropLast(3)), maximumOutput: 300_000)
        }
    }
}
