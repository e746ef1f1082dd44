import EMVCommon
import ProximaCardEmulator
import ProximaCore
import Testing

@testable import PaymentCapability

/// Nothing the capability prints, throws or reports may contain a PAN: descriptions, debug descriptions,
/// `dump`, error messages, events.
@Suite struct MaskingTests {
    /// Every rendering of `value` a log line could use.
    func renderings(_ value: some Any) -> [String] {
        var dumped = ""
        dump(value, to: &dumped)
        return [String(describing: value), String(reflecting: value), "\(value)", dumped]
    }

    /// Fails when `text` holds a test PAN, or its first twelve digits.
    func expectNoPAN(_ text: String, _ what: String, sourceLocation: SourceLocation = #_sourceLocation) {
        for pan in testPANs {
            #expect(!text.contains(pan), "\(what) contains a PAN", sourceLocation: sourceLocation)
            #expect(
                !text.contains(String(pan.prefix(12))),
                "\(what) contains PAN digits",
                sourceLocation: sourceLocation
            )
        }
    }

    @Test(arguments: [
        "pay-visa-qvsdc.json", "pay-mastercard-mchip.json", "pay-multi-aid.json", "pay-online-pin.json",
        "pay-declined.json", "pay-malformed-record.json",
    ])
    func outcomesAndErrorsNeverShowThePAN(file: String) async throws {
        let card = try loadEMVCard(file)
        let channel = hostedChannel(card)
        let recorder = Recorder()
        var texts: [String] =
            renderings(card) + renderings(card.applications) + renderings(card.applications[0].records)
        #expect(String(describing: card).contains(card.name))
        do {
            let outcome = try await capability(recorder).run(purchase(), on: channel, context: tapContext)
            // The PAN is there for the processor …
            let pan = try #require(outcome.cardData[0x5A])
            #expect(testPANs.contains(pan.hexString.replacingOccurrences(of: "F", with: "")))
            // … and nowhere in what is printed.
            texts += renderings(outcome) + renderings(outcome.cardData) + renderings(outcome.reason)
            #expect(String(describing: outcome).contains("•••• \(outcome.lastFourDigits ?? "?")"))
        } catch {
            texts += renderings(error)
            if let error = error as? PaymentError { texts += [error.reason, error.step] }
        }
        texts += recorder.events.flatMap { renderings($0) }
        texts += renderings(channel.commands.map { try? CommandAPDU(bytes: $0) })
        texts += renderings(channel.responses.map { try? ResponseAPDU(bytes: $0) })
        for text in texts { expectNoPAN(text, file) }
    }

    @Test func cardDataDescriptionListsTagsOnly() async throws {
        let outcome = try await capability(Recorder())
            .run(purchase(), on: hostedChannel(try loadEMVCard("pay-visa-qvsdc.json")), context: tapContext)
        let text = outcome.cardData.description
        #expect(text.hasPrefix("EMVCardData("))
        #expect(text.contains("57 5A 5F24"))
        #expect(text.contains("values withheld"))
        #expect(outcome.description.contains("Visa A0000000031010"))
        #expect(outcome.description.contains("exp 12/28"))
    }

    @Test func cardReadErrorsNeverShowThePAN() async throws {
        // A track 2 without separator fails; the message names the tag, not its value.
        let channel = ScriptedChannel()
        channel.expect(selectPPSE, respond: ppseAnswer([("A0000000031010", "TEST VISA", 1, "03")]))
        channel.expect(selectCommand("A0000000031010"), respond: applicationFCI("A0000000031010", pdol: "9F6604"))
        let gpoAnswer = tlv(
            "77",
            tlv("82", "2000") + tlv("9F36", "0001") + tlv("9F26", "0102030405060708") + tlv("9F27", "80")
                + tlv("9F10", "06010A03A00000") + tlv("57", "4761739001010119F2812201")
        )
        channel.expect("80A800000683042680400000", respond: (gpoAnswer + [0x90, 0x00]).hexString)
        let error = await #expect(throws: PaymentError.self) {
            try await capability(Recorder()).run(purchase(), on: channel, context: tapContext)
        }
        try channel.finish()
        #expect(error?.reason == "Track 2 Equivalent Data (57) has no PAN, D separator and YYMM")
        for text in renderings(error as Any) { expectNoPAN(text, "error") }
    }
}
