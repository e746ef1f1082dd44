import EMVCommon
import ProximaCardEmulator
import ProximaCore
import ProximaTestSupport
import Testing

@testable import PaymentCapability

/// Reads of the ODA and Kernel 4–7 card profiles through a hosted channel: fDDA and CDA with the TEST CA keys,
/// each failure, and the flows of Kernels 4, 5, 6 and 7.
@Suite struct KernelODAReadTests {
    func read(
        _ file: String,
        keys: CertificationAuthorityKeys? = nil,
        settings: TerminalSettings = TerminalSettings(),
        amount: Int64 = 2999
    ) async throws -> (outcome: EMVOutcome, channel: InProcessCardChannel, card: EMVCard, recorder: Recorder) {
        let card = try loadEMVCard(file)
        let channel = hostedChannel(card)
        let recorder = Recorder()
        let capability = EMVPaymentCapability(
            settings: settings,
            unpredictableNumbers: recorder.unpredictableNumbers,
            certificationAuthorities: try keys ?? testCertificationAuthorities()
        ) { _, _ in }
        let outcome = try await capability.run(purchase(amount), on: channel, context: tapContext)
        return (outcome, channel, card, recorder)
    }

    /// The ODA failure code named by an outcome's reason, if any.
    func failureCode(_ outcome: EMVOutcome) -> String? {
        guard case .offlineDataAuthenticationFailed(let problem) = outcome.reason else { return nil }
        return problem.components(separatedBy: ":").first
    }

    // MARK: fDDA (Kernel 3)

    @Test func fastDDAApprovesAnOfflineTC() async throws {
        let read = try await read("pay-visa-fdda.json")
        #expect(read.outcome.status == .approved)
        #expect(read.outcome.reason == .cryptogram(.tc))
        #expect(read.outcome.cardData[0x9F27] == [0x40])
        // TVR byte 1: ODA performed (bit 8 clear), DDA not failed (bit 4 clear).
        #expect(read.outcome.cardData[0x95] == bytes("0000000000"))
    }

    @Test func fastDDAWithABadSignatureDeclines() async throws {
        let read = try await read("pay-visa-fdda-bad-signature.json")
        #expect(read.outcome.status == .declined)
        #expect(failureCode(read.outcome) == "invalidSignature")
        #expect(read.outcome.cardData[0x95] == bytes("0800000000"))
    }

    @Test func fastDDAWithAnExpiredIssuerCertificateGoesOnlineAsTheCTQAsks() async throws {
        let read = try await read("pay-visa-fdda-expired.json")
        #expect(read.outcome.status == .onlineRequest)
        #expect(failureCode(read.outcome) == "expiredCertificate")
        #expect(read.outcome.cardData[0x95]?.first == 0x08)
    }

    @Test func fastDDAWithAnUnknownCAIndexDeclines() async throws {
        let read = try await read("pay-visa-fdda-unknown-ca.json")
        #expect(read.outcome.status == .declined)
        #expect(failureCode(read.outcome) == "unknownCertificationAuthority")
    }

    @Test func anOfflineTCWithoutCAKeysIsNeverApproved() async throws {
        for file in ["pay-visa-fdda.json", "pay-unionpay-quics.json"] {
            let read = try await read(file, keys: CertificationAuthorityKeys.none)
            #expect(read.outcome.status == .declined, "\(file)")
            #expect(read.outcome.cryptogramType == .tc, "\(file)")
            #expect(failureCode(read.outcome) == "unknownCertificationAuthority", "\(file)")
        }
    }

    @Test func anOnlineRequestNeedsNoFastDDA() async throws {
        // The plain qVSDC card has no certificates: an ARQC goes online untouched, TVR all zero.
        let read = try await read("pay-visa-qvsdc.json")
        #expect(read.outcome.status == .onlineRequest)
        #expect(read.outcome.reason == .cryptogram(.arqc))
    }

    // MARK: CDA (Kernel 2)

    @Test func cdaRequestsTheSignatureAndTakesTheCryptogramFromIt() async throws {
        let read = try await read("pay-mastercard-cda.json")
        #expect(read.outcome.status == .onlineRequest)
        #expect(read.outcome.reason == .cryptogram(.arqc))
        let generateAC = try #require(read.channel.commands.last { $0.count > 2 && $0[1] == 0xAE })
        #expect(generateAC[2] == 0x90)  // ARQC | CDA signature requested
        let cdol1Data = try read.channel.lastData(ofInstruction: 0xAE)
        let atc = try #require(read.outcome.cardData[0x9F36])
        let expected = EMVCard.applicationCryptogram(
            issuerTestKey: read.card.issuerTestKey,
            dolData: cdol1Data,
            atc: UInt16(atc[0]) << 8 | UInt16(atc[1]),
            cid: 0x80
        )
        #expect(read.outcome.cardData[0x9F26] == expected)
        // TVR byte 1: ODA performed, CDA not failed; the TVR sent in CDOL1 said the same.
        #expect(read.outcome.cardData[0x95]?.first == 0x00)
    }

    @Test func cdaWithABadSignatureDeclinesAndKeepsNoCryptogram() async throws {
        let read = try await read("pay-mastercard-cda-bad-signature.json")
        #expect(read.outcome.status == .declined)
        #expect(failureCode(read.outcome) == "invalidSignature")
        #expect(read.outcome.cardData[0x9F26] == nil)
        #expect(read.outcome.cardData[0x95]?.first == 0x04)
    }

    @Test func cdaIsNotRequestedWithoutCAKeys() async throws {
        let read = try await read("pay-mastercard-cda.json", keys: CertificationAuthorityKeys.none)
        #expect(read.outcome.status == .onlineRequest)
        let generateAC = try #require(read.channel.commands.last { $0.count > 2 && $0[1] == 0xAE })
        #expect(generateAC[2] == 0x80)
        #expect(read.outcome.cardData[0x9F26]?.count == 8)
    }

    // MARK: Kernels 4–7

    @Test func kernel4ExpressPaySendsReaderCapabilitiesAndUsesCDA() async throws {
        let read = try await read("pay-amex-expresspay.json")
        #expect(read.outcome.status == .onlineRequest)
        #expect(read.outcome.application?.kernel == .americanExpress)
        #expect(read.outcome.selectedApplicationIdentifier == bytes("A00000002501"))
        #expect(read.outcome.lastFourDigits == "0126")
        // PDOL 9F35 1, 9F6E 4, …: terminal type 21, then the Enhanced Contactless Reader Capabilities.
        let pdolData = try TLV.decode(read.channel.lastData(ofInstruction: 0xA8)).value
        #expect(Array(pdolData.prefix(5)) == bytes("2138E00003"))
        let generateAC = try #require(read.channel.commands.last { $0.count > 2 && $0[1] == 0xAE })
        #expect(generateAC[2] == 0x90)
        #expect(read.outcome.cardData[0x9F26]?.count == 8)
        #expect(read.outcome.cardData[0x9F6E] == bytes("38E00003"))
        #expect(read.outcome.cvm == .noCVM)
    }

    @Test func kernel4ProcessesTheCVMListAtTheLimit() async throws {
        // CVM List 42 03 (online PIN if supported, else next), 1E 03, 1F 03: the terminal supports online PIN.
        let settings = TerminalSettings(cvmRequiredLimit: 2999)
        let atLimit = try await read("pay-amex-expresspay.json", settings: settings)
        #expect(atLimit.outcome.cvm == .onlinePIN)
        #expect(atLimit.outcome.cardData[0x9F34] == bytes("420300"))
        let below = try await read("pay-amex-expresspay.json", settings: settings, amount: 2998)
        #expect(below.outcome.cvm == .noCVM)
        #expect(below.outcome.cardData[0x9F34] == bytes("3F0000"))
    }

    @Test func kernel5JSpeedySendsItsTerminalProfileAndUsesCDA() async throws {
        let read = try await read("pay-jcb-jspeedy.json")
        #expect(read.outcome.status == .onlineRequest)
        #expect(read.outcome.application?.kernel == .jcb)
        #expect(read.outcome.lastFourDigits == "0505")
        // PDOL 9F52 1, 9F53 3: EMV mode only; signature, online PIN and on-device CVM supported, online capable.
        let pdolData = try TLV.decode(read.channel.lastData(ofInstruction: 0xA8)).value
        #expect(Array(pdolData.prefix(4)) == bytes("02708000"))
        let generateAC = try #require(read.channel.commands.last { $0.count > 2 && $0[1] == 0xAE })
        #expect(generateAC[2] == 0x90)
        #expect(read.outcome.cardData[0x9F26]?.count == 8)
    }

    @Test func kernel6DPASTakesTheGPOCryptogramAndItsCVMRequirements() async throws {
        let read = try await read("pay-discover-dpas.json")
        #expect(read.outcome.status == .onlineRequest)
        #expect(read.outcome.application?.kernel == .discover)
        #expect(read.outcome.lastFourDigits == "9424")
        #expect(read.outcome.cvm == .onlinePIN)
        #expect(read.outcome.cardData[0x9F71] == bytes("8000"))
        #expect(read.outcome.cardData[0x9F66] != nil)
        // No GENERATE AC: the cryptogram came with GPO.
        #expect(!read.channel.commands.contains { $0.count > 1 && $0[1] == 0xAE })
    }

    @Test func kernel7QUICSApprovesOfflineWithFastDDA() async throws {
        let read = try await read("pay-unionpay-quics.json")
        #expect(read.outcome.status == .approved)
        #expect(read.outcome.application?.kernel == .unionPay)
        #expect(read.outcome.lastFourDigits == "8599")
        #expect(read.outcome.cardData[0x9F27] == [0x40])
        #expect(read.outcome.cardData[0x95] == bytes("0000000000"))
    }

    @Test func noTestPANLeaksIntoTheOutcome() async throws {
        let pans = [
            "4761739001010119", "5413330089010012", "374245455400126", "3566002020360505", "6011000990139424",
            "6250941006528599",
        ]
        for file in ["pay-amex-expresspay.json", "pay-visa-fdda-bad-signature.json", "pay-discover-dpas.json"] {
            let read = try await read(file)
            let text = "\(read.outcome) \(read.outcome.reason) \(String(reflecting: read.outcome))"
            for pan in pans { #expect(!text.contains(pan), "\(file)") }
        }
    }
}
