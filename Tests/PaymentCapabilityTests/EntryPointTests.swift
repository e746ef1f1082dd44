import EMVCommon
import ProximaCardEmulator
import ProximaCore
import ProximaTestSupport
import Testing

@testable import PaymentCapability

/// Entry Point (EMV Book B §3.3) and kernel status-word handling, with scripted and virtual cards.
@Suite struct EntryPointTests {
    let visaPDOL = "9F66049F02069F03069F1A0295055F2A029A039C019F3704"

    @Test func noPaymentDirectoryEndsTheApplication() async throws {
        let channel = ScriptedChannel()
        channel.expect(selectPPSE, respond: "6A82")
        let outcome = try await capability(Recorder()).run(purchase(), on: channel, context: tapContext)
        try channel.finish()
        #expect(outcome.status == .endApplication)
        #expect(outcome.reason == .noPaymentDirectory(StatusWord(rawValue: 0x6A82)))
        #expect(outcome.isCardNotSupported)
        #expect(outcome.application == nil)
        #expect(outcome.cardData.tags.isEmpty)
    }

    @Test func unsupportedKernelIsCardNotSupported() async throws {
        let channel = ScriptedChannel()
        // Interac has no default kernel here, and the card asks for none: nothing the terminal can run.
        channel.expect(selectPPSE, respond: ppseAnswer([("A0000002771010", "TEST INTERAC", 1, "01")]))
        let outcome = try await capability(Recorder()).run(purchase(), on: channel, context: tapContext)
        try channel.finish()  // no SELECT of the AID
        #expect(outcome.status == .endApplication)
        #expect(outcome.isCardNotSupported)
        guard case .noSupportedApplication(let unsupported, let tried) = outcome.reason else {
            Issue.record("unexpected reason \(outcome.reason)")
            return
        }
        #expect(tried.isEmpty)
        #expect(unsupported.map(\.application.identifier) == [bytes("A0000002771010")])
        #expect(unsupported.first?.application.brand == .interac)
        #expect(unsupported.first?.application.kernel == .kernel1)
        #expect(
            outcome.reason.description.contains(
                "A0000002771010 (Interac): combination selection: no configured application matches this AID"
            ),
            "\(outcome.reason)"
        )
    }

    @Test func unsupportedApplicationsAreSkippedForSupportedOnes() async throws {
        var card = try loadEMVCard("pay-visa-qvsdc.json")
        // An Interac application (no kernel here) with higher priority than the Visa one: never selected.
        var jcb = card.applications[0]
        jcb.identifier = bytes("A0000002771010")
        jcb.label = "TEST INTERAC"
        jcb.priority = 1
        jcb.kernelIdentifier = [0x01]
        card.applications[0].priority = 2
        card.applications.insert(jcb, at: 0)
        let hosted = hostedChannel(card)
        let outcome = try await capability(Recorder()).run(purchase(), on: hosted, context: tapContext)
        #expect(outcome.selectedApplicationIdentifier == visaAID)
        #expect(hosted.commands.map(\.hexString).contains(selectCommand("A0000002771010")) == false)
    }

    @Test func requestedKernelMustMatchTheTerminals() async throws {
        // A Visa AID whose directory entry asks for Kernel 2: no combination supports it.
        let channel = ScriptedChannel()
        channel.expect(selectPPSE, respond: ppseAnswer([("A0000000031010", "TEST VISA", 1, "02")]))
        let outcome = try await capability(Recorder()).run(purchase(), on: channel, context: tapContext)
        try channel.finish()
        #expect(outcome.isCardNotSupported)
    }

    @Test(arguments: [0x6A82, 0x6A81, 0x6283] as [UInt16])
    func selectErrorSelectsTheNextCandidate(status: UInt16) async throws {
        var card = try loadEMVCard("pay-multi-aid.json")
        // Maestro has priority 1: its SELECT fails, so Mastercard (priority 2) is next.
        let maestro = try #require(card.applications.firstIndex { $0.identifier == maestroAID })
        card.applications[maestro].selectStatus = status
        let channel = hostedChannel(card)
        let outcome = try await capability(Recorder()).run(purchase(), on: channel, context: tapContext)
        #expect(outcome.status == .onlineRequest)
        #expect(outcome.selectedApplicationIdentifier == mastercardAID)
        #expect(outcome.attempts.count == 1)
        #expect(outcome.attempts.first?.application.identifier == maestroAID)
        #expect(outcome.attempts.first?.step == "SELECT A0000000043060")
        #expect(outcome.attempts.first?.problem == "status \(StatusWord(rawValue: status))")
    }

    @Test func malformedFCISelectsTheNextCandidate() async throws {
        let channel = ScriptedChannel()
        channel.expect(
            selectPPSE,
            respond: ppseAnswer([("A0000000031010", "TEST VISA", 1, nil), ("A0000000041010", "TEST MC", 2, nil)])
        )
        // The FCI claims 32 bytes but carries 5.
        channel.expect(selectCommand("A0000000031010"), respond: "6F20840700000000039000")
        channel.expect(selectCommand("A0000000041010"), respond: "6A82")
        let outcome = try await capability(Recorder()).run(purchase(), on: channel, context: tapContext)
        try channel.finish()
        #expect(outcome.status == .endApplication)
        #expect(outcome.isCardNotSupported)
        #expect(outcome.attempts.map(\.step) == ["SELECT A0000000031010", "SELECT A0000000041010"])
        #expect(outcome.attempts[0].problem == "TLV length at offset 1 exceeds data (needs 32, has 7)")
        #expect(outcome.attempts[1].problem == "status 6A82")
    }

    @Test func visaWithoutTTQInThePDOLNeedsKernel1() async throws {
        var card = try loadEMVCard("pay-visa-qvsdc.json")
        card.applications[0].processingOptionsDOL = bytes("9F02069F3704")
        let outcome = try await capability(Recorder()).run(
            purchase(),
            on: hostedChannel(card),
            context: tapContext
        )
        #expect(outcome.status == .endApplication)
        #expect(outcome.isCardNotSupported)
        #expect(outcome.attempts.first?.problem.contains("Kernel 1") == true)
    }

    struct StatusCase: Sendable, CustomTestStringConvertible {
        var status: UInt16
        var outcome: EMVOutcome.Status
        var testDescription: String { "\(StatusWord(rawValue: status)) → \(outcome)" }
    }

    @Test(arguments: [
        StatusCase(status: 0x6984, outcome: .tryAnotherInterface),
        StatusCase(status: 0x6986, outcome: .tryAgain),
        StatusCase(status: 0x6A81, outcome: .endApplication),
        StatusCase(status: 0x6F00, outcome: .endApplication),
    ])
    func processingOptionsStatusEndsWithItsOutcome(_ statusCase: StatusCase) async throws {
        for file in ["pay-visa-qvsdc.json", "pay-mastercard-mchip.json"] {
            var card = try loadEMVCard(file)
            card.applications[0].processingOptionsStatus = statusCase.status
            let channel = hostedChannel(card)
            let outcome = try await capability(Recorder()).run(purchase(), on: channel, context: tapContext)
            #expect(outcome.status == statusCase.outcome, "\(file)")
            let sw = StatusWord(rawValue: statusCase.status)
            #expect(outcome.reason == .cardStatus(step: "GET PROCESSING OPTIONS", status: sw))
            #expect(outcome.application?.identifier == card.applications[0].identifier)
            #expect(outcome.isCardNotSupported == false)
            #expect(outcome.cardData.tags.isEmpty)
            #expect(channel.commands.count == 3)  // PPSE, SELECT, GPO: nothing after
        }
    }

    @Test func selectNextOnGPOTriesTheNextCandidate() async throws {
        var card = try loadEMVCard("pay-multi-aid.json")
        let maestro = try #require(card.applications.firstIndex { $0.identifier == maestroAID })
        card.applications[maestro].processingOptionsStatus = 0x6985
        let channel = hostedChannel(card)
        let outcome = try await capability(Recorder()).run(purchase(), on: channel, context: tapContext)
        #expect(outcome.selectedApplicationIdentifier == mastercardAID)
        #expect(outcome.status == .onlineRequest)
        #expect(outcome.attempts.map(\.step) == ["GET PROCESSING OPTIONS"])
        #expect(outcome.attempts.first?.problem == "status 6985: select next")

        var single = try loadEMVCard("pay-visa-qvsdc.json")
        single.applications[0].processingOptionsStatus = 0x6985
        let last = try await capability(Recorder()).run(
            purchase(),
            on: hostedChannel(single),
            context: tapContext
        )
        #expect(last.status == .endApplication)
        #expect(last.reason == .noSupportedApplication(unsupported: [], tried: last.attempts))
        #expect(last.attempts.count == 1)
    }

    // MARK: Scripted kernels

    /// PPSE, SELECT and an M/Chip GPO (format 1) with one record, as a script; the record holds `record` data.
    func scriptMChip(_ channel: ScriptedChannel, afl: String = "08010100", record: [UInt8]) {
        channel.expect(selectPPSE, respond: ppseAnswer([("A0000000041010", "TEST MC", 1, "02")]))
        channel.expect(selectCommand("A0000000041010"), respond: applicationFCI("A0000000041010", pdol: ""))
        channel.expect("80A80000028300" + "00", respond: (tlv("80", "1980" + afl) + [0x90, 0x00]).hexString)
        if !record.isEmpty { channel.expect("00B2010C00", respond: (record + [0x90, 0x00]).hexString) }
    }

    let mChipRecord = tlv(
        "70",
        tlv("5A", "5413330089010012") + tlv("5F24", "291130") + tlv("8C", "9F02069F3704") + tlv("5F34", "00")
    )

    @Test func mChipTCToAnARQCRequestFails() async throws {
        let channel = ScriptedChannel()
        scriptMChip(channel, record: mChipRecord)
        // A fresh recorder draws the same first number as the one the capability gets.
        let un = Recorder().unpredictableNumbers.next().hexString
        channel.expect(
            "80AE80000A" + "000000002999" + un + "00",
            respond: (tlv("77", tlv("9F27", "40") + tlv("9F36", "0001") + tlv("9F26", "0102030405060708"))
                + [0x90, 0x00]).hexString
        )
        let error = await #expect(throws: PaymentError.self) {
            try await capability(Recorder()).run(purchase(), on: channel, context: tapContext)
        }
        try channel.finish()
        #expect(error?.step == "GENERATE AC")
        #expect(error?.reason.contains("TC to a request for an ARQC") == true)
    }

    @Test func mChipGenerateACStatusEndsTheApplication() async throws {
        let channel = ScriptedChannel()
        scriptMChip(channel, record: mChipRecord)
        let un = Recorder().unpredictableNumbers.next().hexString
        channel.expect("80AE80000A" + "000000002999" + un + "00", respond: "6985")
        let outcome = try await capability(Recorder()).run(purchase(), on: channel, context: tapContext)
        try channel.finish()
        #expect(outcome.status == .endApplication)
        #expect(outcome.reason == .cardStatus(step: "GENERATE AC", status: .conditionsNotSatisfied))
    }

    @Test func mChipWithoutCDOL1Fails() async throws {
        let channel = ScriptedChannel()
        scriptMChip(channel, record: tlv("70", tlv("5A", "5413330089010012")))
        let error = await #expect(throws: PaymentError.self) {
            try await capability(Recorder()).run(purchase(), on: channel, context: tapContext)
        }
        try channel.finish()
        #expect(error?.step == "GENERATE AC")
        #expect(error?.reason == "card has no CDOL1 (8C)")
    }

    @Test func invalidAFLInTheGPOAnswerFails() async throws {
        let channel = ScriptedChannel()
        scriptMChip(channel, afl: "08020100", record: [])
        let error = await #expect(throws: PaymentError.self) {
            try await capability(Recorder()).run(purchase(), on: channel, context: tapContext)
        }
        try channel.finish()
        #expect(error?.code == .cardReadFailed)
        #expect(error?.step == "GET PROCESSING OPTIONS")
        #expect(error?.reason == "AFL entry 1 (SFI 1) has first record 2 after last record 1")
    }

    @Test func readRecordStatusFails() async throws {
        let channel = ScriptedChannel()
        channel.expect(selectPPSE, respond: ppseAnswer([("A0000000041010", "TEST MC", 1, "02")]))
        channel.expect(selectCommand("A0000000041010"), respond: applicationFCI("A0000000041010", pdol: ""))
        channel.expect("80A8000002830000", respond: (tlv("80", "1980" + "10030300") + [0x90, 0x00]).hexString)
        channel.expect("00B2031400", respond: "6A83")
        let error = await #expect(throws: PaymentError.self) {
            try await capability(Recorder()).run(purchase(), on: channel, context: tapContext)
        }
        try channel.finish()
        #expect(error?.step == "READ RECORD SFI 2 record 3")
        #expect(error?.reason == "card answered 6A83")
    }

    @Test func qVSDCWithoutCIDUsesTheIAD() async throws {
        let channel = ScriptedChannel()
        channel.expect(selectPPSE, respond: ppseAnswer([("A0000000031010", "TEST VISA", 1, "03")]))
        channel.expect(selectCommand("A0000000031010"), respond: applicationFCI("A0000000031010", pdol: "9F6604"))
        let gpoAnswer = tlv(
            "77",
            tlv("82", "2000") + tlv("9F36", "0007") + tlv("9F26", "0102030405060708") + tlv("9F10", "06010A03900000")
                + tlv("57", "4761739001010119D28122010000000000000F")
        )
        channel.expect("80A800000683042680400000", respond: (gpoAnswer + [0x90, 0x00]).hexString)
        let outcome = try await capability(Recorder()).run(purchase(), on: channel, context: tapContext)
        try channel.finish()
        // IAD byte 5 = 90: bits 6-5 = 01, a TC; without fDDA (no CA keys, no certificates) never approved.
        #expect(outcome.cryptogramType == .tc)
        #expect(outcome.status == .declined)
        #expect(outcome.reason.description.hasPrefix("offline data authentication failed"))
        #expect(outcome.lastFourDigits == "0119")
        #expect(outcome.expiry == CardExpiry(year: 2028, month: 12))
    }

    @Test func pdolFillZeroFillsUnknownTagsAndPadsByFormat() async throws {
        // 9F66 4, 9F02 6 (n: left-padded), DF01 3 (unknown: zeros), 9F4E 8 (ans: right-padded), 9F1A 1 (n:
        // truncated on the left), 9C 1, 9F37 4, 5F2A 3 (n: padded).
        let pdol = "9F6604" + "9F0206" + "DF0103" + "9F4E08" + "9F1A01" + "9C01" + "9F3704" + "5F2A03"
        let channel = ScriptedChannel()
        channel.expect(selectPPSE, respond: ppseAnswer([("A0000000031010", "TEST VISA", 1, "03")]))
        channel.expect(selectCommand("A0000000031010"), respond: applicationFCI("A0000000031010", pdol: pdol))
        let un = Recorder().unpredictableNumbers.next().hexString
        let data = "26804000" + "000000012345" + "000000" + "53484F5000000000" + "40" + "20" + un + "000840"
        channel.expect("80A8000020831E" + data + "00", respond: "6986")
        let settings = TerminalSettings(merchantNameAndLocation: "SHOP")
        let outcome = try await capability(Recorder(), settings: settings)
            .run(purchase(12345, type: .refund), on: channel, context: tapContext)
        try channel.finish()
        #expect(outcome.status == .tryAgain)
    }

    @Test func transportErrorsKeepTheirCodeAndNameTheStep() async throws {
        let channel = ScriptedChannel()
        channel.expect(bytes(selectPPSE), fail: ProximaError(.cardRemoved, "card left the field"))
        let error = await #expect(throws: ProximaError.self) {
            try await capability(Recorder()).run(purchase(), on: channel, context: tapContext)
        }
        #expect(error?.code == .cardRemoved)
        #expect(error?.reason == "SELECT PPSE: card left the field")
        #expect(error?.lane == "lane-1")
    }

    @Test(arguments: [1_000_000_000_000, -1] as [Int64])
    func amountsThatDoNotFitAreRefusedBeforeAnyAPDU(amount: Int64) async throws {
        let channel = ScriptedChannel()
        let error = await #expect(throws: PaymentError.self) {
            try await capability(Recorder()).run(purchase(amount), on: channel, context: tapContext)
        }
        try channel.finish()
        #expect(error?.code == .invalidTransaction)
    }
}
