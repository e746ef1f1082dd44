import EMVCommon
import ProximaCardEmulator
import ProximaCore
import ProximaTestSupport
import Testing

@testable import PaymentCapability

let cbAID = bytes("A0000000421010")
let euro = 978

func euroPurchase(_ amount: Int64) -> EMVTransaction {
    EMVTransaction(amountAuthorised: amount, currencyCode: euro, date: transactionDate)
}

/// Entry Point pre-processing (EMV Book B §3.1.1): each indicator and TTQ bit at, below and above its limit.
@Suite struct PreProcessingTests {
    /// 50.00 contactless, 25.00 CVM required, 10.00 floor, in EUR.
    static let combination = TerminalApplication(
        identifier: visaAID,
        kernel: .visa,
        limits: [euro: ReaderLimits(contactlessTransaction: 5000, cvmRequired: 2500, floor: 1000)]
    )

    static func indicators(_ amount: Int64, _ combination: TerminalApplication = combination) -> EntryPointIndicators {
        combination.preProcessing(euroPurchase(amount), settings: TerminalSettings())
    }

    @Test(arguments: [(Int64(4999), false), (5000, true), (5001, true)])
    func contactlessTransactionLimitIsReachedAtTheLimit(_ amount: Int64, _ exceeded: Bool) {
        let result = Self.indicators(amount)
        #expect(result.contactlessTransactionLimitExceeded == exceeded)
        #expect(result.contactlessApplicationNotAllowed == exceeded)
    }

    @Test(arguments: [(Int64(2499), false), (2500, true), (2501, true)])
    func cvmRequiredLimitSetsTTQByte2Bit7AtTheLimit(_ amount: Int64, _ exceeded: Bool) {
        let result = Self.indicators(amount)
        #expect(result.cvmRequiredLimitExceeded == exceeded)
        #expect(result.terminalTransactionQualifiers[1] & 0x40 == (exceeded ? 0x40 : 0))
    }

    @Test(arguments: [(Int64(999), false), (1000, false), (1001, true)])
    func floorLimitSetsOnlineCryptogramRequiredAboveTheLimit(_ amount: Int64, _ exceeded: Bool) {
        let result = Self.indicators(amount)
        #expect(result.floorLimitExceeded == exceeded)
        #expect(result.terminalTransactionQualifiers[1] & 0x80 == (exceeded ? 0x80 : 0))
    }

    @Test func configuredTTQIsCopiedWithByte2Bits8And7Cleared() {
        var combination = Self.combination
        combination.terminalTransactionQualifiers = bytes("36C04000")
        // 5.00: below every limit, so nothing sets byte 2 again (§3.1.1.2).
        #expect(Self.indicators(500, combination).terminalTransactionQualifiers == bytes("36004000"))
        #expect(Self.indicators(3000, combination).terminalTransactionQualifiers == bytes("36C04000"))
    }

    @Test func zeroAmountAsksForAnOnlineCryptogramUnlessNotAllowed() {
        let zero = Self.indicators(0)
        #expect(zero.zeroAmount)
        #expect(zero.terminalTransactionQualifiers[1] & 0x80 == 0x80)
        #expect(!zero.contactlessApplicationNotAllowed)

        var refusing = Self.combination
        refusing.zeroAmountAllowed = false
        #expect(Self.indicators(0, refusing).contactlessApplicationNotAllowed)

        var offlineOnly = Self.combination
        offlineOnly.terminalTransactionQualifiers = bytes("28004000")  // byte 1 bit 4: offline-only reader
        #expect(Self.indicators(0, offlineOnly).contactlessApplicationNotAllowed)
    }

    @Test func statusCheckOnOneUnitOfTheCurrency() {
        var combination = Self.combination
        combination.statusCheckSupported = true
        let one = Self.indicators(100, combination)
        #expect(one.statusCheckRequested)
        #expect(one.terminalTransactionQualifiers[1] & 0x80 == 0x80)
        #expect(!Self.indicators(101, combination).statusCheckRequested)
        #expect(!Self.indicators(100).statusCheckRequested)
    }

    @Test func limitsOfAnotherCurrencyDoNotApply() {
        let dollars = Self.combination.preProcessing(purchase(6000), settings: TerminalSettings())
        #expect(!dollars.contactlessApplicationNotAllowed)
        #expect(!dollars.cvmRequiredLimitExceeded)
        // No reader floor limit in USD: the terminal floor limit (0, online only) applies.
        #expect(dollars.floorLimitExceeded)
    }
}

/// The reader limits and combinations through whole reads on virtual cards.
@Suite struct ConfiguredReadTests {
    static let limits = [euro: ReaderLimits(contactlessTransaction: 5000, cvmRequired: 2500, floor: 0)]

    /// The issue's three applications: Visa and CB on Kernel 3, Mastercard on Kernel 2, with EUR limits.
    static func frenchTerminal(preferred: [[UInt8]] = []) -> TerminalSettings {
        var settings = TerminalSettings(countryCode: 250)
        settings.supportedApplications = [
            TerminalApplication(identifier: visaAID, kernel: .visa, limits: limits),
            TerminalApplication(identifier: cbAID, kernel: .visa, label: "CB", limits: limits),
            TerminalApplication(identifier: mastercardAID, kernel: .mastercard, limits: limits),
        ]
        settings.preferredApplications = preferred
        return settings
    }

    @Test func amountAtTheContactlessLimitOfEveryCombinationIsTryAnotherInterface() async throws {
        let channel = hostedChannel(try loadEMVCard("pay-visa-qvsdc.json"))
        let outcome = try await capability(Recorder(), settings: Self.frenchTerminal())
            .run(euroPurchase(5000), on: channel, context: tapContext)
        #expect(outcome.status == .tryAnotherInterface)
        guard case .contactlessNotAllowed(let lines) = outcome.reason else {
            Issue.record("unexpected reason \(outcome.reason)")
            return
        }
        #expect(lines.count == 3)
        #expect(outcome.reason.description.contains("contactless transaction limit exceeded"))
        #expect(channel.commands.isEmpty)  // Book B §3.1.1.13: before any command

        let below = try await capability(Recorder(), settings: Self.frenchTerminal())
            .run(euroPurchase(4999), on: hostedChannel(try loadEMVCard("pay-visa-qvsdc.json")), context: tapContext)
        #expect(below.status == .onlineRequest)
    }

    @Test(arguments: [(Int64(2499), "26804000"), (2500, "26C04000"), (2501, "26C04000")])
    func kernel3SendsTheTTQOfTheLimits(_ amount: Int64, _ ttq: String) async throws {
        let outcome = try await capability(Recorder(), settings: Self.frenchTerminal())
            .run(euroPurchase(amount), on: hostedChannel(try loadEMVCard("pay-visa-qvsdc.json")), context: tapContext)
        #expect(outcome.cardData[0x9F66] == bytes(ttq))
        // CTQ 0000: no CVM the card asks for; at the limit the reader requires one it cannot get.
        #expect(outcome.cvm == (amount >= 2500 ? .failed : .noCVM))
    }

    /// Book C-2 CVM selection: the CVM List `42 03 1E 03 1F 03` with the "no CVM required" capability at or below
    /// the limit (C-2 compares with "greater than") and the terminal's methods above it.
    @Test(arguments: [(Int64(2499), "1F0302"), (2500, "1F0302"), (2501, "420300")])
    func kernel2ProcessesTheCVMListWithTheCVMRequiredLimit(_ amount: Int64, _ results: String) async throws {
        let card = try loadEMVCard("pay-mastercard-mchip.json")  // CVM List 0000000000000000 42031E031F03
        let outcome = try await capability(Recorder(), settings: Self.frenchTerminal())
            .run(euroPurchase(amount), on: hostedChannel(card), context: tapContext)
        #expect(outcome.cardData[0x9F34] == bytes(results))
        #expect(outcome.cvm == (amount > 2500 ? .onlinePIN : .noCVM))
        // TVR byte 3 bit 3: online PIN entered.
        #expect((outcome.cardData[0x95]?[2] ?? 0) & 0x04 == (amount > 2500 ? 0x04 : 0))
    }

    @Test func magStripeOnlyCardEndsBeforeAnyRecordOrGenerateAC() async throws {
        let channel = hostedChannel(try loadEMVCard("pay-mastercard-magstripe.json"))
        let outcome = try await capability(Recorder()).run(purchase(), on: channel, context: tapContext)
        #expect(outcome.status == .endApplication)
        #expect(outcome.reason == .magStripeModeNotSupported(aip: [0x00, 0x00]))
        #expect(outcome.isCardNotSupported)
        #expect(outcome.reason.description.contains("mag-stripe mode not supported"))
        #expect(!outcome.reason.description.contains("again"))
        let instructions = channel.commands.compactMap { $0.count > 1 ? $0[1] : nil }
        #expect(instructions == [0xA4, 0xA4, 0xA8])  // SELECT PPSE, SELECT AID, GPO; no B2, no AE
    }

    // MARK: Co-badged CB/Visa

    @Test func coBadgedCardReadsOnCBWhenCBIsConfigured() async throws {
        let outcome = try await capability(Recorder(), settings: Self.frenchTerminal())
            .run(euroPurchase(1500), on: hostedChannel(try loadEMVCard("pay-cb-visa.json")), context: tapContext)
        #expect(outcome.selectedApplicationIdentifier == cbAID)
        #expect(outcome.brand == .cartesBancaires)
        #expect(outcome.application?.kernel == .visa)
        #expect(outcome.cardData[0x9F36] == bytes("0008"))  // CB: ATC 7, this transaction 8
        #expect(outcome.status == .onlineRequest)
    }

    @Test func coBadgedCardReadsOnVisaWhenCBIsNotConfigured() async throws {
        // The default combinations: every implemented kernel on its scheme's AIDs; CB has no default kernel.
        let outcome = try await capability(Recorder())
            .run(purchase(1500), on: hostedChannel(try loadEMVCard("pay-cb-visa.json")), context: tapContext)
        #expect(outcome.selectedApplicationIdentifier == visaAID)
        #expect(outcome.cardData[0x9F36] == bytes("0001"))  // Visa: ATC 0, this transaction 1
    }

    @Test func preferredAIDsGoAheadOfTheCardsPriority() async throws {
        let settings = Self.frenchTerminal(preferred: [visaAID])
        let outcome = try await capability(Recorder(), settings: settings)
            .run(euroPurchase(1500), on: hostedChannel(try loadEMVCard("pay-cb-visa.json")), context: tapContext)
        #expect(outcome.selectedApplicationIdentifier == visaAID)

        // A preference for what the card already puts first changes nothing; a prefix preference works too.
        let cbFirst = try await capability(Recorder(), settings: Self.frenchTerminal(preferred: [cbAID]))
            .run(euroPurchase(1500), on: hostedChannel(try loadEMVCard("pay-cb-visa.json")), context: tapContext)
        #expect(cbFirst.selectedApplicationIdentifier == cbAID)
        let byRID = try await capability(Recorder(), settings: Self.frenchTerminal(preferred: [bytes("A000000003")]))
            .run(euroPurchase(1500), on: hostedChannel(try loadEMVCard("pay-cb-visa.json")), context: tapContext)
        #expect(byRID.selectedApplicationIdentifier == visaAID)
    }

    @Test func exactAIDWithoutPartialSelectionDoesNotMatchLongerAIDs() {
        let exact = TerminalApplication(identifier: bytes("A000000003"), kernel: .visa, partialSelection: false)
        #expect(!exact.matches(visaAID))
        #expect(exact.matches(bytes("A000000003")))
        #expect(TerminalApplication(identifier: bytes("A000000003"), kernel: .visa).matches(visaAID))
    }

    // MARK: Card not supported

    @Test func cardNotSupportedListsWhatWasTriedAndWhy() async throws {
        var card = try loadEMVCard("pay-visa-qvsdc.json")
        // Interac: no kernel of this build runs it (Kernels 2 to 7 do run Amex, JCB, Discover and UnionPay).
        var interac = card.applications[0]
        interac.identifier = bytes("A0000002771010")
        interac.label = "TEST INTERAC"
        interac.kernelIdentifier = [0x01]
        card.applications[0].selectStatus = 0x6A82
        card.applications.append(interac)
        let outcome = try await capability(Recorder()).run(purchase(), on: hostedChannel(card), context: tapContext)
        #expect(outcome.isCardNotSupported)
        guard case .noSupportedApplication(let unsupported, let tried) = outcome.reason else {
            Issue.record("unexpected reason \(outcome.reason)")
            return
        }
        #expect(tried.map(\.application.identifier) == [visaAID])
        #expect(tried.first?.step == "SELECT A0000000031010")
        #expect(tried.first?.problem == "status 6A82")
        #expect(unsupported.map(\.application.identifier) == [bytes("A0000002771010")])
        let text = outcome.reason.description
        #expect(text.contains("A0000000031010 (Visa): SELECT A0000000031010: status 6A82"), "\(text)")
        #expect(text.contains("A0000002771010 (Interac): combination selection"), "\(text)")
        for pan in testPANs { #expect(!text.contains(pan)) }
    }

    @Test func aidConfiguredForAnotherKernelSaysSo() async throws {
        let channel = ScriptedChannel()
        channel.expect(selectPPSE, respond: ppseAnswer([("A0000000421010", "CB", 1, "02")]))
        let outcome = try await capability(Recorder(), settings: Self.frenchTerminal())
            .run(euroPurchase(100), on: channel, context: tapContext)
        try channel.finish()
        #expect(
            outcome.reason.description.contains(
                "the card asks for Kernel 2 (Mastercard M/Chip); this AID is configured for Kernel 3 (Visa qVSDC)"
            ),
            "\(outcome.reason)"
        )
    }
}
