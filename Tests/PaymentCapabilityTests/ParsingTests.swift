import EMVCommon
import ProximaCore
import ProximaTestSupport
import Testing

@testable import PaymentCapability

/// GET PROCESSING OPTIONS, AFL, GENERATE AC and CVM List parsing on hand-built answers.
@Suite struct ParsingTests {
    // MARK: AFL (EMV Book 3 §10.2)

    @Test func parsesAFLEntries() throws {
        let afl = try ApplicationFileLocator(bytes: bytes("08010101" + "10010302" + "18040400"))
        #expect(afl.entries.count == 3)
        #expect(
            afl.entries[0]
                == .init(shortFileIdentifier: 1, firstRecord: 1, lastRecord: 1, offlineAuthenticationRecordCount: 1)
        )
        #expect(
            afl.entries[1]
                == .init(shortFileIdentifier: 2, firstRecord: 1, lastRecord: 3, offlineAuthenticationRecordCount: 2)
        )
        #expect(afl.entries[2].records == 4...4)
        #expect(afl.recordCount == 5)
        #expect(afl.offlineAuthenticationRecordCount == 3)
        #expect(afl.entries[1].isForOfflineAuthentication(2))
        #expect(afl.entries[1].isForOfflineAuthentication(3) == false)
        #expect(try ApplicationFileLocator(bytes: []).recordCount == 0)
    }

    struct InvalidAFL: Sendable, CustomTestStringConvertible {
        var hex: String
        var reason: String
        var testDescription: String { reason }
    }

    @Test(arguments: [
        InvalidAFL(hex: "080101", reason: "AFL (94) of 3 bytes is not a multiple of 4"),
        InvalidAFL(hex: "0801010010", reason: "AFL (94) of 5 bytes is not a multiple of 4"),
        InvalidAFL(hex: "00010100", reason: "AFL entry 1 byte 1 00 names no SFI 1-30 (SFI 0)"),
        InvalidAFL(hex: "08010100F8010100", reason: "AFL entry 2 byte 1 F8 names no SFI 1-30 (SFI 31)"),
        InvalidAFL(hex: "09010100", reason: "AFL entry 1 byte 1 09 names no SFI 1-30 (SFI 1)"),
        InvalidAFL(hex: "08000100", reason: "AFL entry 1 (SFI 1) starts at record 0"),
        InvalidAFL(hex: "08030200", reason: "AFL entry 1 (SFI 1) has first record 3 after last record 2"),
        InvalidAFL(
            hex: "08010203",
            reason: "AFL entry 1 (SFI 1) flags 3 records for offline data authentication but lists 2"
        ),
    ])
    func rejectsInvalidAFL(_ invalid: InvalidAFL) {
        let error = #expect(throws: PaymentError.self) { try ApplicationFileLocator(bytes: bytes(invalid.hex)) }
        #expect(error?.code == .cardReadFailed)
        #expect(error?.step == "GET PROCESSING OPTIONS")
        #expect(error?.reason == invalid.reason)
    }

    // MARK: GET PROCESSING OPTIONS (EMV Book 3 §6.5.8.4)

    @Test func parsesFormat1() throws {
        let options = try ProcessingOptions(responseData: bytes("800A" + "1980" + "08010100" + "10010201"))
        #expect(options.format == .format1)
        #expect(options.applicationInterchangeProfile == bytes("1980"))
        #expect(options.applicationFileLocator.recordCount == 3)
        #expect(options.applicationFileLocator.offlineAuthenticationRecordCount == 1)
        #expect(options.dataObjects.isEmpty)
    }

    @Test func parsesFormat1WithoutAFL() throws {
        let options = try ProcessingOptions(responseData: bytes("80022000"))
        #expect(options.applicationFileLocator.entries.isEmpty)
    }

    @Test func parsesFormat2() throws {
        let body =
            tlv("82", "2000") + tlv("94", "08010101") + tlv("9F36", "0001") + tlv("9F26", "0102030405060708")
            + tlv("9F27", "80") + tlv("9F10", "06010A03A00000") + tlv("9F6C", "8000")
        let options = try ProcessingOptions(responseData: tlv("77", body))
        #expect(options.format == .format2)
        #expect(options.applicationInterchangeProfile == bytes("2000"))
        #expect(options.applicationFileLocator.entries.count == 1)
        #expect(options.dataObjects.map(\.tag) == [0x9F36, 0x9F26, 0x9F27, 0x9F10, 0x9F6C])
    }

    @Test func parsesFormat2WithoutAFL() throws {
        let options = try ProcessingOptions(responseData: tlv("77", tlv("82", "2000") + tlv("9F36", "0001")))
        #expect(options.applicationFileLocator.recordCount == 0)
    }

    @Test(arguments: [
        ("8001 20", "format 1 response of 1 bytes has no 2-byte AIP"),
        ("7708 8202 2000 9F36 02 00", "TLV length at offset 8 exceeds data (needs 2, has 1)"),
        ("7720 8202 2000", "TLV length at offset 1 exceeds data (needs 32, has 4)"),
        ("7704 9F36 0100", "format 2 response has no AIP (82)"),
        ("7703 8201 20", "AIP (82) has 1 bytes, expected 2"),
        ("7005 8202 2000 00", "response: template 80 or 77 expected, found 70"),
        ("8002 2000 9F36 02 0001", "response: 1 data objects follow the 80 template"),
        ("8005 2000 080101", "AFL (94) of 3 bytes is not a multiple of 4"),
        ("0000", "response is empty (2 bytes of padding)"),
    ])
    func rejectsMalformedProcessingOptions(hexText: String, reason: String) {
        let error = #expect(throws: PaymentError.self) { try ProcessingOptions(responseData: bytes(hexText)) }
        #expect(error?.code == .cardReadFailed)
        #expect(error?.step == "GET PROCESSING OPTIONS")
        #expect(error?.reason == reason)
    }

    // MARK: GENERATE AC (EMV Book 3 §6.5.5.4)

    @Test func parsesGenerateACFormat1And2() throws {
        let format1 = try GenerateACResponse(
            responseData: bytes("8011" + "80" + "002A" + "1122334455667788" + "06010A03A000")
        )
        #expect(format1.cryptogramType == .arqc)
        #expect(format1.applicationTransactionCounter == bytes("002A"))
        #expect(format1.applicationCryptogram == bytes("1122334455667788"))
        #expect(format1.issuerApplicationData == bytes("06010A03A000"))

        let format2 = try GenerateACResponse(
            responseData: tlv("77", tlv("9F27", "00") + tlv("9F36", "0003") + tlv("9F26", "8877665544332211"))
        )
        #expect(format2.cryptogramType == .aac)
        #expect(format2.cryptogramInformationData == 0x00)
        #expect(format2.issuerApplicationData.isEmpty)
    }

    @Test(arguments: [
        ("800A 80 002A 11223344556677", "format 1 response of 10 bytes is shorter than CID, ATC and cryptogram (11)"),
        ("7710 9F2701C0 9F36020001 9F2604 11223344", "CID (9F27) C0 names no cryptogram type"),
        ("770C 9F270180 9F2605 1122334455", "format 2 response has no ATC (9F36)"),
        ("7710 9F270180 9F36020001 9F2604 11223344", "Application Cryptogram (9F26) has 4 bytes, expected 8"),
        ("7708 9F270180 9F360200", "TLV length at offset 8 exceeds data (needs 2, has 1)"),
    ])
    func rejectsMalformedGenerateAC(hexText: String, reason: String) {
        let error = #expect(throws: PaymentError.self) { try GenerateACResponse(responseData: bytes(hexText)) }
        #expect(error?.step == "GENERATE AC")
        #expect(error?.reason == reason)
    }

    // MARK: CVM List (EMV Book 3 §10.5)

    @Test func parsesCVMList() throws {
        let list = try CVMList(
            bytes: bytes("000003E8" + "00002710" + "4203" + "1E03" + "1F00"),
            step: "READ RECORD SFI 2 record 2"
        )
        #expect(list.amountX == 1000)
        #expect(list.amountY == 10_000)
        #expect(list.rules.map(\.code) == [0x02, 0x1E, 0x1F])
        #expect(list.rules[0].appliesNextRuleIfUnsuccessful)
        #expect(list.rules[2].appliesNextRuleIfUnsuccessful == false)

        let error = #expect(throws: PaymentError.self) {
            try CVMList(bytes: bytes("00000000000000004203 1E"), step: "READ RECORD SFI 2 record 2")
        }
        #expect(error?.step == "READ RECORD SFI 2 record 2")
    }

    @Test func statusWordsMapToBookAOutcomes() {
        #expect(EMVOutcome.Status.processingOptions(StatusWord(rawValue: 0x9000)) == nil)
        #expect(EMVOutcome.Status.processingOptions(StatusWord(rawValue: 0x6984)) == .tryAnotherInterface)
        #expect(EMVOutcome.Status.processingOptions(StatusWord(rawValue: 0x6985)) == .selectNext)
        #expect(EMVOutcome.Status.processingOptions(StatusWord(rawValue: 0x6986)) == .tryAgain)
        #expect(EMVOutcome.Status.processingOptions(StatusWord(rawValue: 0x6A81)) == .endApplication)
        #expect(EMVOutcome.Status.processingOptions(StatusWord(rawValue: 0x6D00)) == .endApplication)
    }

    @Test func brandsFromAID() {
        #expect(PaymentBrand(applicationIdentifier: bytes("A0000000031010")) == .visa)
        #expect(PaymentBrand(applicationIdentifier: bytes("A0000000041010")) == .mastercard)
        #expect(PaymentBrand(applicationIdentifier: bytes("A0000000043060")) == .maestro)
        #expect(PaymentBrand(applicationIdentifier: bytes("A000000025010801")) == .americanExpress)
        #expect(PaymentBrand(applicationIdentifier: bytes("A0000001523010")) == .discover)
        #expect(PaymentBrand(applicationIdentifier: bytes("A0000000651010")) == .jcb)
        #expect(PaymentBrand(applicationIdentifier: bytes("A000000333010101")) == .unionPay)
        #expect(PaymentBrand(applicationIdentifier: bytes("A0000009999999")) == .unknown)
    }

    @Test func systemUnpredictableNumbersDiffer() {
        // Four bytes from the OS CSPRNG: 16 draws all equal would be a broken source (probability 2^-480).
        let source = UnpredictableNumberSource.system
        let draws = (0..<16).map { _ in source.next() }
        #expect(draws.allSatisfy { $0.count == 4 })
        #expect(Set(draws).count > 1)
    }

    @Test func capabilityDeclaresItsAIDs() {
        let capability = EMVPaymentCapability()
        #expect(capability.identifier == "payment.emv")
        #expect(
            Set(capability.requirements.applicationIdentifiers)
                == Set(
                    ["A000000003", "A000000004", "A000000025", "A000000065", "A000000152", "A000000324", "A000000333"]
                        .map { bytes($0) }
                )
        )
    }
}
