import EMVCommon
import ProximaCardEmulator
import ProximaCore
import ProximaTestSupport
import Testing

@testable import PaymentCapability

/// Terminal action analysis (EMV Book 3 §10.7) for the GENERATE AC kernels (2, 4, 5): which cryptogram the
/// terminal asks for, and that an offline approval is reported only with CDA verified on the card's answer.
@Suite struct TerminalActionAnalysisTests {
    /// A terminal with a floor limit (minor units) in every currency, and `codes` on every combination.
    func settings(floor: Int64?, codes: TerminalActionCodes = .conservative, offlineOnly: Bool = false)
        -> TerminalSettings
    {
        var settings = TerminalSettings()
        settings.terminalFloorLimit = floor
        settings.supportedApplications = TerminalApplication.defaults.map {
            var combination = $0
            combination.actionCodes = codes
            return combination
        }
        if offlineOnly { settings.terminalTransactionQualifiers[0] |= 0x08 }
        return settings
    }

    func read(
        _ file: String,
        settings: TerminalSettings,
        keys: CertificationAuthorityKeys? = nil,
        amount: Int64 = 2999,
        card change: (inout EMVCard) -> Void = { _ in }
    ) async throws -> (outcome: EMVOutcome, generateAC: [UInt8]) {
        var card = try loadEMVCard(file)
        change(&card)
        let channel = hostedChannel(card)
        let capability = EMVPaymentCapability(
            settings: settings,
            unpredictableNumbers: Recorder().unpredictableNumbers,
            certificationAuthorities: try keys ?? testCertificationAuthorities()
        ) { _, _ in }
        let outcome = try await capability.run(purchase(amount), on: channel, context: tapContext)
        let generateAC = try #require(channel.commands.last { $0.count > 2 && $0[1] == 0xAE })
        return (outcome, generateAC)
    }

    func approvingOffline(_ card: inout EMVCard) { card.applications[0].decision = .tc }

    @Test func belowTheFloorLimitWithCDAKernel2ApprovesOffline() async throws {
        let read = try await read("pay-mastercard-cda-offline.json", settings: settings(floor: 5000))
        #expect(read.generateAC[2] == 0x50)  // TC | CDA signature requested
        #expect(read.outcome.status == .approved)
        #expect(read.outcome.reason == .cryptogram(.tc))
        #expect(read.outcome.cardData[0x9F27] == [0x40])
        #expect(read.outcome.cardData[0x9F26]?.count == 8)  // recovered from the CDA signature
        #expect(read.outcome.cardData[0x95] == bytes("0000000000"))
    }

    @Test func aboveTheFloorLimitTheConservativeCodesAskForAnARQC() async throws {
        let read = try await read("pay-mastercard-cda-offline.json", settings: settings(floor: 1000))
        #expect(read.generateAC[2] == 0x90)
        #expect(read.outcome.status == .onlineRequest)
        #expect(read.outcome.cardData[0x95] == bytes("0000008000"))  // transaction exceeds floor limit
    }

    @Test func withoutCDATheTerminalNeverAsksForATC() async throws {
        // No CA keys: offline data authentication not performed, a TVR bit every default code weighs.
        let online = try await read(
            "pay-mastercard-cda-offline.json",
            settings: settings(floor: 5000),
            keys: CertificationAuthorityKeys.none
        )
        #expect(online.generateAC[2] == 0x80)
        #expect(online.outcome.status == .onlineRequest)
        #expect(online.outcome.cardData[0x95] == bytes("8000000000"))
        // An offline-only reader declines instead (TAC-Default).
        let offlineOnly = try await read(
            "pay-mastercard-cda-offline.json",
            settings: settings(floor: 5000, offlineOnly: true),
            keys: CertificationAuthorityKeys.none
        )
        #expect(offlineOnly.generateAC[2] == 0x00)
        #expect(offlineOnly.outcome.status == .declined)
        #expect(offlineOnly.outcome.reason == .cryptogram(.aac))
    }

    @Test func aTVRBitInTheDenialCodeAsksForAnAAC() async throws {
        let denial = TerminalActionCodes(
            denial: bytes("8000000000"),
            online: bytes("0000000000"),
            defaultAction: bytes("0000000000")
        )
        let read = try await read(
            "pay-mastercard-cda-offline.json",
            settings: settings(floor: 5000, codes: denial),
            keys: CertificationAuthorityKeys.none
        )
        #expect(read.generateAC[2] == 0x00)
        #expect(read.outcome.status == .declined)
    }

    @Test func theIssuerActionCodesCountBesideTheTerminals() async throws {
        // An acquirer that never sends anything online: above the floor, the card's IAC-Online decides. This card's
        // IAC-Online leaves out the floor-limit bit, so the terminal asks for a TC; a card without IACs (absent
        // IAC-Online = all ones, §10.7) goes online.
        let permissive = TerminalActionCodes(
            denial: bytes("0000000000"),
            online: bytes("0000000000"),
            defaultAction: bytes("0000000000")
        )
        let withCodes = try await read(
            "pay-mastercard-cda-offline.json",
            settings: settings(floor: 1000, codes: permissive)
        )
        #expect(withCodes.generateAC[2] == 0x50)
        #expect(withCodes.outcome.status == .approved)
        let withoutCodes = try await read(
            "pay-mastercard-cda.json",
            settings: settings(floor: 1000, codes: permissive),
            card: approvingOffline
        )
        #expect(withoutCodes.generateAC[2] == 0x90)
        #expect(withoutCodes.outcome.status == .onlineRequest)
    }

    @Test func aTCWhoseCDASignatureFailsIsDeclined() async throws {
        let read = try await read(
            "pay-mastercard-cda-bad-signature.json",
            settings: settings(floor: 5000),
            card: approvingOffline
        )
        #expect(read.generateAC[2] == 0x50)
        #expect(read.outcome.cryptogramType == .tc)
        #expect(read.outcome.status == .declined)
        guard case .offlineDataAuthenticationFailed(let problem) = read.outcome.reason else {
            Issue.record("reason \(read.outcome.reason)")
            return
        }
        #expect(problem.hasPrefix("invalidSignature"))
    }

    @Test func kernels4And5ApproveOfflineBelowTheFloorLimitWithCDA() async throws {
        for file in ["pay-amex-expresspay.json", "pay-jcb-jspeedy.json"] {
            let below = try await read(file, settings: settings(floor: 5000), card: approvingOffline)
            #expect(below.generateAC[2] == 0x50, "\(file)")
            #expect(below.outcome.status == .approved, "\(file)")
            #expect(below.outcome.reason == .cryptogram(.tc), "\(file)")
            let above = try await read(file, settings: settings(floor: 1000), card: approvingOffline)
            #expect(above.generateAC[2] == 0x90, "\(file)")
            #expect(above.outcome.status == .onlineRequest, "\(file)")
        }
    }

    @Test func aZeroAmountAlwaysAsksForAnARQC() async throws {
        let read = try await read("pay-mastercard-cda-offline.json", settings: settings(floor: 5000), amount: 0)
        #expect(read.generateAC[2] == 0x90)
        #expect(read.outcome.status == .onlineRequest)
    }
}
