import EMVCommon
import ProximaCardEmulator
import ProximaCore
import ProximaTestSupport
import Testing

@testable import PaymentCapability

/// End-to-end reads of every virtual payment card profile in `Config/cards` through a hosted channel.
@Suite struct VirtualCardReadTests {
    struct Expectation: Sendable, CustomTestStringConvertible {
        var file: String
        var status: EMVOutcome.Status
        var aid: [UInt8]
        var lastFour: String
        var expiry: CardExpiry
        var cvm: CardholderVerification
        var cid: UInt8
        /// The ATC the first read gets.
        var atc: [UInt8]
        var testDescription: String { file }
    }

    static let expectations: [Expectation] = [
        Expectation(
            file: "pay-visa-qvsdc.json",
            status: .onlineRequest,
            aid: visaAID,
            lastFour: "0119",
            expiry: CardExpiry(year: 2028, month: 12),
            cvm: .noCVM,
            cid: 0x80,
            atc: [0x00, 0x01]
        ),
        Expectation(
            file: "pay-mastercard-mchip.json",
            status: .onlineRequest,
            aid: mastercardAID,
            lastFour: "0012",
            expiry: CardExpiry(year: 2029, month: 11),
            cvm: .noCVM,
            cid: 0x80,
            atc: [0x00, 0x2A]
        ),
        Expectation(
            file: "pay-multi-aid.json",
            status: .onlineRequest,
            aid: maestroAID,
            lastFour: "0020",
            expiry: CardExpiry(year: 2029, month: 11),
            cvm: .noCVM,
            cid: 0x80,
            atc: [0x00, 0x2A]
        ),
        Expectation(
            file: "pay-online-pin.json",
            status: .onlineRequest,
            aid: visaAID,
            lastFour: "0010",
            expiry: CardExpiry(year: 2028, month: 12),
            cvm: .onlinePIN,
            cid: 0x80,
            atc: [0x00, 0x01]
        ),
        Expectation(
            file: "pay-declined.json",
            status: .declined,
            aid: mastercardAID,
            lastFour: "0038",
            expiry: CardExpiry(year: 2029, month: 11),
            cvm: .noCVM,
            cid: 0x00,
            atc: [0x00, 0x2A]
        ),
    ]

    @Test(arguments: expectations)
    func readsProfile(_ expected: Expectation) async throws {
        let card = try loadEMVCard(expected.file)
        let channel = hostedChannel(card)
        let recorder = Recorder()
        let outcome = try await capability(recorder).run(purchase(2999), on: channel, context: tapContext)

        #expect(outcome.status == expected.status)
        #expect(outcome.selectedApplicationIdentifier == expected.aid)
        #expect(outcome.lastFourDigits == expected.lastFour)
        #expect(outcome.expiry == expected.expiry)
        #expect(outcome.cvm == expected.cvm)
        #expect(outcome.attempts.isEmpty)
        let data = outcome.cardData
        #expect(data[0x9F26]?.count == 8)
        #expect(data[0x9F27] == [expected.cid])
        #expect(data[0x9F36] == expected.atc)
        #expect(data[0x9F02] == bytes("000000002999"))
        #expect(data[0x9F03] == bytes("000000000000"))
        #expect(data[0x5F2A] == bytes("0840"))
        #expect(data[0x9F1A] == bytes("0840"))
        #expect(data[0x9A] == bytes("260314"))
        #expect(data[0x9C] == [0x00])
        #expect(data[0x84] == expected.aid)
        #expect(data[0x82]?.count == 2)
        #expect(data[0x9F10] != nil)
        #expect(data[0x9F34]?.count == 3)
        #expect(data[0x5A] != nil)
        #expect(data[0x57] != nil)
        #expect(data[0x5F24] != nil)
        // 9F37 is what the injected generator produced, once per transaction.
        #expect(recorder.issuedNumbers.count == 1)
        #expect(data[0x9F37] == recorder.lastNumberBytes)
        // The cryptogram is the documented scheme over the DOL data the terminal sent.
        let isMChip = data[0x9F66] == nil
        let dolData =
            isMChip
            ? try channel.lastData(ofInstruction: 0xAE)
            : try TLV.decode(channel.lastData(ofInstruction: 0xA8)).value
        let atc = UInt16(expected.atc[0]) << 8 | UInt16(expected.atc[1])
        let recomputed = EMVCard.applicationCryptogram(
            issuerTestKey: card.issuerTestKey,
            dolData: dolData,
            atc: atc,
            cid: expected.cid
        )
        #expect(data[0x9F26] == recomputed)
        // Events: selected, read completed, and PIN entry only for the online PIN card.
        let selected = try #require(outcome.application)
        var events: [EMVPaymentEvent] = [.applicationSelected(selected), .cardReadCompleted]
        if expected.cvm == .onlinePIN { events.append(.pinEntryRequested) }
        #expect(recorder.events == events)
    }

    @Test func qVSDCSendsOneGPOAndReadsTheAFL() async throws {
        let channel = hostedChannel(try loadEMVCard("pay-visa-qvsdc.json"))
        let recorder = Recorder()
        let outcome = try await capability(recorder).run(purchase(2999), on: channel, context: tapContext)
        let un = recorder.lastNumberBytes.hexString
        // PDOL 9F66 4, 9F02 6, 9F03 6, 9F1A 2, 95 5, 5F2A 2, 9A 3, 9C 1, 9F37 4 = 33 bytes, filled per Book 3 §5.4.
        let gpo =
            "80A8000023" + "8321" + "26804000" + "000000002999" + "000000000000" + "0840" + "0000000000" + "0840"
            + "260314" + "00" + un + "00"
        #expect(
            channel.commands.map(\.hexString) == [
                selectPPSE, selectCommand("A0000000031010"), gpo, "00B2010C00", "00B2011400",
            ]
        )
        #expect(outcome.cardData.offlineAuthenticationRecordCount == 1)
        #expect(outcome.cardData.offlineAuthenticationData.isEmpty == false)
        #expect(outcome.cardData[0x9F66] == bytes("26804000"))
        #expect(outcome.cardData[0x9F6E] == bytes("20700000"))
        #expect(outcome.cardData[0x9F6C] == bytes("0000"))
        #expect(outcome.cardData[0x9F34] == bytes("1F0002"))
    }

    @Test func mChipAsksForAnARQCWithCDOL1() async throws {
        let channel = hostedChannel(try loadEMVCard("pay-mastercard-mchip.json"))
        let recorder = Recorder()
        let outcome = try await capability(recorder).run(purchase(2999), on: channel, context: tapContext)
        let commands = channel.commands.map(\.hexString)
        // No PDOL: GPO carries an empty 83 template.
        #expect(commands[2] == "80A80000028300" + "00")
        #expect(commands[3...5] == ["00B2010C00", "00B2011400", "00B2021400"])
        let un = recorder.lastNumberBytes.hexString
        // CDOL1: 9F02 9F03 9F1A 95 5F2A 9A 9C 9F37 9F35 9F45 9F4C 9F34 9F21 9F7C = 66 bytes; unknown tags zero-filled.
        // TVR: ODA not performed (byte 1 bit 8), above the floor limit of an online-only terminal (byte 4 bit 8).
        // CVM Results: the CVM List 42 03 1E 03 1F 03 below any CVM required limit chooses 1F 03 (no CVM, successful).
        let cdol =
            "000000002999" + "000000000000" + "0840" + "8000008000" + "0840" + "260314" + "00" + un + "21"
            + "0000" + "0000000000000000" + "1F0302" + "092653" + String(repeating: "00", count: 20)
        #expect(commands[6] == "80AE800042" + cdol + "00")
        #expect(commands.count == 7)
        #expect(outcome.cardData[0x95] == bytes("8000008000"))
        #expect(outcome.cardData[0x9F66] == nil)
        #expect(outcome.cardData.offlineAuthenticationRecordCount == 1)
    }

    @Test(arguments: ["pay-visa-qvsdc.json", "pay-mastercard-mchip.json"])
    func atcIncrementsAcrossReadsAndTaps(file: String) async throws {
        let card = try loadEMVCard(file)
        let channel = hostedChannel(card)
        let recorder = Recorder()
        let payment = capability(recorder)
        let first = try await payment.run(purchase(100), on: channel, context: tapContext)
        let second = try await payment.run(purchase(200), on: channel, context: tapContext)
        // A new tap hosts a fresh copy of the same card: the ATC is the card's memory and keeps counting.
        let third = try await payment.run(purchase(300), on: hostedChannel(card), context: tapContext)
        func atc(_ outcome: EMVOutcome) throws -> Int {
            let bytes = try #require(outcome.cardData[0x9F36])
            return Int(bytes[0]) << 8 | Int(bytes[1])
        }
        #expect(try atc(second) == atc(first) + 1)
        #expect(try atc(third) == atc(second) + 1)
        #expect(first.cardData[0x9F26] != second.cardData[0x9F26])
        #expect(recorder.issuedNumbers.count == 3)
        #expect(
            card.transactionCounter(of: try #require(first.selectedApplicationIdentifier)) == UInt16(try atc(third))
        )
    }

    @Test func malformedRecordFailsNamingTheRecord() async throws {
        let channel = hostedChannel(try loadEMVCard("pay-malformed-record.json"))
        let recorder = Recorder()
        let error = await #expect(throws: PaymentError.self) {
            try await capability(recorder).run(purchase(), on: channel, context: tapContext)
        }
        #expect(error?.code == .cardReadFailed)
        #expect(error?.step == "READ RECORD SFI 2 record 3")
        #expect(error?.reason == "TLV length at offset 9 exceeds data (needs 40, has 2)")
        #expect(error?.reader == "test/hosted")
        let text = String(describing: try #require(error))
        #expect(text.contains("READ RECORD SFI 2 record 3: TLV length at offset 9 exceeds data"))
        #expect(recorder.events.contains(.cardReadCompleted) == false)
    }

    @Test func preferredApplicationIsSelectedFirst() async throws {
        let channel = hostedChannel(try loadEMVCard("pay-multi-aid.json"))
        let outcome = try await capability(Recorder())
            .run(purchase(preferred: visaAID), on: channel, context: tapContext)
        #expect(outcome.selectedApplicationIdentifier == visaAID)
        #expect(outcome.brand == .visa)
        #expect(outcome.lastFourDigits == "0119")
        #expect(outcome.status == .onlineRequest)
    }

    @Test func mChipOnlinePINAboveTheCVMRequiredLimit() async throws {
        let settings = TerminalSettings(cvmRequiredLimit: 1000)
        let recorder = Recorder()
        let outcome = try await capability(recorder, settings: settings)
            .run(
                purchase(2999),
                on: hostedChannel(try loadEMVCard("pay-mastercard-mchip.json")),
                context: tapContext
            )
        #expect(outcome.cvm == .onlinePIN)
        #expect(outcome.cardData[0x9F34] == bytes("420300"))
        #expect(recorder.events.last == .pinEntryRequested)

        let below = try await capability(Recorder(), settings: settings)
            .run(
                purchase(999),
                on: hostedChannel(try loadEMVCard("pay-mastercard-mchip.json")),
                context: tapContext
            )
        // Book C-2: the CVM List is processed below the limit too, with "no CVM required" as the only method:
        // 42 03 and 1E 03 do not apply, 1F 03 does (CVM Results 1F 03 02, not 3F 00 00).
        #expect(below.cvm == .noCVM)
        #expect(below.cardData[0x9F34] == bytes("1F0302"))
    }

    @Test func qVSDCCVMRequiredByAmountSetsTheTTQ() async throws {
        let settings = TerminalSettings(cvmRequiredLimit: 1000)
        let channel = hostedChannel(try loadEMVCard("pay-visa-qvsdc.json"))
        let outcome = try await capability(Recorder(), settings: settings).run(
            purchase(1000),
            on: channel,
            context: tapContext
        )
        #expect(outcome.cardData[0x9F66] == bytes("26C04000"))
        // CTQ 0000 names no CVM the reader supports although one is required.
        #expect(outcome.cvm == .failed)
    }

    @Test func declinedQVSDCCard() async throws {
        var card = try loadEMVCard("pay-visa-qvsdc.json")
        card.applications[0].decision = .aac
        let outcome = try await capability(Recorder()).run(
            purchase(),
            on: hostedChannel(card),
            context: tapContext
        )
        #expect(outcome.status == .declined)
        #expect(outcome.reason == .cryptogram(.aac))
        #expect(outcome.cardData[0x9F27] == [0x00])
    }

    @Test func cardLoadsAllProfileKinds() {
        let names = CardProfiles.kinds.map(\.name)
        #expect(names.contains("emv-qvsdc"))
        #expect(names.contains("emv-mchip"))
        #expect(names.contains("scripted"))
    }

    @Test func profileErrorsNameTheJSONPath() throws {
        let text = """
            { "profile": "emv-mchip", "name": "test bad card", "uid": "08000001",
              "issuerTestKey": "00112233445566778899AABBCCDDEEFF",
              "applications": [ { "aid": "A0000000041010", "aip": "1980", "cdol1": "9F0206",
                "issuerApplicationData": "0110", "pan": "5413330089010012", "expiry": "291130",
                "records": [ { "sfi": 1, "record": 1, "tags": ["9F59"] } ] } ] }
            """
        let json = try JSONValue.parse(text)
        let error = #expect(throws: ProximaError.self) { try CardProfiles.parse(json, source: "bad.json") }
        #expect(error?.code == .malformedData)
        #expect(error?.reason.hasPrefix("bad.json: applications[0].records[0].tags[0]: tag 9F59 has no value") == true)
    }
}
