import ProximaCore
import ProximaCrypto
import ProximaTestSupport
import Testing

@testable import MobileDocumentCapability

/// Multipaz's static-handover Handover Select (openwallet-foundation/multipaz, Apache-2.0,
/// `multipaz/src/commonTest/kotlin/org/multipaz/mdoc/nfc/MdocNfcEngagementHelperTest.kt` testStaticHandover, commit
/// 0dc62772): Hs 1.5 with BLE and NFC alternative carriers, the DeviceEngagement, a BLE OOB record and the
/// `iso.org:18013:nfc` record.
let multipazStaticHandoverSelect = [
    "91021f487315910209616301013001046d646f6351020b616301036e666301046d646f631c1e580469736f2e6f72673a3138",
    "3031333a646576696365656e676167656d656e746d646f63a20063312e30018201d818584ba4010220012158207104f7e2c2e9",
    "5ca76482c0c963d454b7e5d053c5b59ce89d00ff7c7d7ab6ff7d225820f442821292c2453ec67c75233ea56e1734c211ae26b2",
    "59fdf232b5b3d82b1ba21a2015016170706c69636174696f6e2f766e642e626c7565746f6f74682e6c652e6f6f6230021c0311",
    "07b66eef55ee782ea2514bb6a1c42ad5b35c110a0369736f2e6f72673a31383031333a6e66636e6663010301ffff0402010000",
].joined()

@Suite("NFC engagement and data transfer")
struct NFCTests {
    @Test func staticHandoverReadsMultipazsTagByteForByte() async throws {
        // The reader's APDUs of Multipaz's loopback transcript, answered as the Multipaz wallet answered them.
        let channel = ScriptedChannel()
        channel.expect("00a4040007d2760000850101", respond: "9000")
        channel.expect("00a4000c02e103", respond: "9000")
        channel.expect("00b000000f", respond: "000f207fff7fff0406e1047fff00ff9000")
        channel.expect("00a4000c02e104", respond: "9000")
        channel.expect("00b0000002", respond: "00fe9000")
        channel.expect("00b00002fe", respond: multipazStaticHandoverSelect + "9000")
        let select = try await NFCEngagement.readHandoverSelect(on: channel)
        try channel.finish()
        #expect(select.message == bytes(multipazStaticHandoverSelect))
        #expect(select.offersNFC)
        #expect(select.maximumCommandDataLength == 65_535)
        #expect(select.maximumResponseDataLength == 65_536)
        #expect(
            select.engagement.deviceKey.x == bytes("7104f7e2c2e95ca76482c0c963d454b7e5d053c5b59ce89d00ff7c7d7ab6ff7d")
        )
        #expect(select.staticHandover == [.byteString(bytes(multipazStaticHandoverSelect)), .null])
    }

    @Test func aLockedWalletIsNotAnMdoc() async throws {
        let channel = ScriptedChannel()
        channel.expect("00a4040007d2760000850101", respond: "6a82")
        await #expect(throws: MobileDocumentError(.notAnMdoc, "")) {
            _ = try await NFCEngagement.readHandoverSelect(on: channel)
        }
        try channel.finish()
    }

    @Test func aTNEPOnlyTagIsReportedAsUnsupported() async throws {
        // Multipaz's negotiated-handover initial NDEF: a Service Parameter record for urn:nfc:sn:handover.
        let tp = "d1021a5470101375726e3a6e66633a736e3a68616e646f76657200000fffff"
        let channel = ScriptedChannel(supportsExtendedLength: false)
        channel.expect("00a4040007d2760000850101", respond: "9000")
        channel.expect("00a4000c02e103", respond: "9000")
        channel.expect("00b000000f", respond: "000f207fff7fff0406e1047fff00ff9000")
        channel.expect("00a4000c02e104", respond: "9000")
        channel.expect("00b0000002", respond: "001f9000")
        channel.expect("00b000021f", respond: tp + "9000")
        await #expect(throws: MobileDocumentError(.unsupportedEngagement, "")) {
            _ = try await NFCEngagement.readHandoverSelect(on: channel)
        }
        try channel.finish()
    }

    @Test func theAnnexDHandoverSelectParses() throws {
        let select = try HandoverSelect(message: bytes(AnnexD.handoverSelect))
        #expect(select.engagement.encoded == bytes(AnnexD.deviceEngagement))
        #expect(!select.offersNFC)  // Annex D's holder picked BLE
    }

    @Test func ndefRecordsRoundTripAndHostileMessagesFail() throws {
        let records = try NDEF.parse(bytes(AnnexD.handoverRequest))
        #expect(records.first?.typeName == "Hr")
        #expect(NDEF.encode(records) == bytes(AnnexD.handoverRequest))
        let hostile = ["", "d1", "d10205", "d1020554", "910100", "5101005101", "d1010000ff", "f10100", "d1ff00"]
        for message in hostile {
            #expect(throws: MobileDocumentError(.malformedEngagement, ""), "\(message)") {
                try NDEF.parse(bytes(message))
            }
        }
    }

    @Test func do53WrapsEveryLengthForm() throws {
        for count in [0, 1, 127, 128, 255, 256, 65_535, 65_536] {
            let message = [UInt8](repeating: 0xAB, count: count)
            let wrapped = NFCDataTransfer.wrap(message)
            #expect(try NFCDataTransfer.unwrap(wrapped) == message)
        }
        #expect(NFCDataTransfer.wrap([1]) == [0x53, 0x01, 0x01])
        #expect(NFCDataTransfer.wrap([UInt8](repeating: 0, count: 200)).prefix(3) == [0x53, 0x81, 0xC8])
        #expect(NFCDataTransfer.wrap([UInt8](repeating: 0, count: 834)).prefix(4) == [0x53, 0x82, 0x03, 0x42])
        for bad in ["", "54 00", "53 02 00", "53 84 00000001 00", "53 81", "53 80"] {
            #expect(throws: MobileDocumentError(.transferFailed, ""), "\(bad)") {
                try NFCDataTransfer.unwrap(bytes(bad))
            }
        }
    }

    @Test func shortReadersChainEnvelopesAndCollectGetResponses() async throws {
        let message = [UInt8]((0..<300).map { UInt8(truncatingIfNeeded: $0) })
        let wrapped = NFCDataTransfer.wrap(message)  // 304 bytes: 255 in a chained ENVELOPE, 49 in the last
        let answer = NFCDataTransfer.wrap([UInt8](repeating: 0x5A, count: 400))  // 404 bytes
        let channel = ScriptedChannel(supportsExtendedLength: false)
        channel.expect([0x10, 0xC3, 0x00, 0x00, 0xFF] + wrapped[0..<255], respond: ResponseAPDU(status: .success))
        channel.expect(
            [0x00, 0xC3, 0x00, 0x00, 0x31] + wrapped[255...] + [0x00],
            respond: ResponseAPDU(data: Array(answer[0..<256]), status: StatusWord(0x61, 0x94))
        )
        channel.expect(
            [0x00, 0xC0, 0x00, 0x00, 0x94],
            respond: ResponseAPDU(data: Array(answer[256...]), status: .success)
        )
        let transfer = NFCDataTransfer(channel: channel)
        #expect(try await transfer.exchange(message) == [UInt8](repeating: 0x5A, count: 400))
        try channel.finish()
    }

    @Test func extendedReadersSendOneEnvelope() async throws {
        let message = [UInt8](repeating: 7, count: 834)
        let wrapped = NFCDataTransfer.wrap(message)
        let channel = ScriptedChannel(supportsExtendedLength: true)
        channel.expect(
            [0x00, 0xC3, 0x00, 0x00, 0x00, 0x03, 0x46] + wrapped + [0x00, 0x00],
            respond: ResponseAPDU(data: NFCDataTransfer.wrap([1, 2, 3]), status: .success)
        )
        #expect(try await NFCDataTransfer(channel: channel).exchange(message) == [1, 2, 3])
        try channel.finish()
    }

    @Test func errorStatusesAndSilenceAreNamed() async throws {
        let channel = ScriptedChannel(supportsExtendedLength: false)
        channel.expect("00a4040c07a0000002480400", respond: "9000")
        channel.expect("00c30000035301aa00", respond: "6f00")
        channel.expect([0x00, 0xC3, 0x00, 0x00, 0x03, 0x53, 0x01, 0xAA, 0x00], fail: ProximaError(.cardTimeout))
        let transfer = NFCDataTransfer(channel: channel)
        try await transfer.select()
        await #expect(throws: MobileDocumentError(.transferFailed, "")) { _ = try await transfer.exchange([0xAA]) }
        await #expect(throws: MobileDocumentError(.holderSilent, "")) { _ = try await transfer.exchange([0xAA]) }
        try channel.finish()
    }
}

/// Multipaz's negotiated-handover Handover Select (same file, testNegotiatedHandover): the wallet picked BLE.
let multipazNegotiatedHandoverSelect = [
    "91020f487315d10209616301013001046d646f631c1e580469736f2e6f72673a31383031333a646576696365656e67616765",
    "6d656e746d646f63a20063312e30018201d818584ba4010220012158207104f7e2c2e95ca76482c0c963d454b7e5d053c5b5",
    "9ce89d00ff7c7d7ab6ff7d225820f442821292c2453ec67c75233ea56e1734c211ae26b259fdf232b5b3d82b1ba25a200301",
    "6170706c69636174696f6e2f766e642e626c7565746f6f74682e6c652e6f6f6230021c01",
].joined()

@Suite("NFC negotiated handover (TNEP)")
struct NegotiatedHandoverTests {
    @Test func theReaderSelectsTheHandoverServiceAndWritesItsRequest() async throws {
        let tp = "d1021a5470101375726e3a6e66633a736e3a68616e646f76657200000fffff"
        let request = NFCEngagement.handoverRequest()
        let hs = bytes(multipazNegotiatedHandoverSelect)
        let channel = ScriptedChannel(supportsExtendedLength: false)
        channel.expect("00a4040007d2760000850101", respond: "9000")
        channel.expect("00a4000c02e103", respond: "9000")
        channel.expect("00b000000f", respond: "000f207fff7fff0406e1047fff00ff9000")
        channel.expect("00a4000c02e104", respond: "9000")
        channel.expect("00b0000002", respond: "001f9000")
        channel.expect("00b000021f", respond: tp + "9000")
        // Service Select, byte for byte what Multipaz's reader writes.
        channel.expect("00d600001b0019d1021454731375726e3a6e66633a736e3a68616e646f766572", respond: "9000")
        channel.expect("00b0000002", respond: "00069000")
        channel.expect("00b0000206", respond: "d102015465009000")
        channel.expect(
            [0x00, 0xD6, 0x00, 0x00, UInt8(request.count + 2), 0x00, UInt8(request.count)] + request,
            respond: ResponseAPDU(status: .success)
        )
        // The holder is not ready once: the reader waits one waiting time and reads again.
        channel.expect("00b0000002", respond: "00009000")
        channel.expect(
            [0x00, 0xB0, 0x00, 0x00, 0x02],
            respond: ResponseAPDU(data: [0x00, UInt8(hs.count)], status: .success)
        )
        channel.expect([0x00, 0xB0, 0x00, 0x02, UInt8(hs.count)], respond: ResponseAPDU(data: hs, status: .success))
        let result = try await NFCEngagement.engage(on: channel)
        try channel.finish()
        #expect(result.handover == [.byteString(hs), .byteString(request)])
        #expect(
            result.handoverSelect.engagement.deviceKey.x
                == bytes("7104f7e2c2e95ca76482c0c963d454b7e5d053c5b59ce89d00ff7c7d7ab6ff7d")
        )
        #expect(!result.handoverSelect.offersNFC)
        let records = try NDEF.parse(request)
        #expect(records.map(\.typeName) == ["Hr", "iso.org:18013:readerengagement", "iso.org:18013:nfc"])
        #expect(try CBORDecoder.decode(records[1].payload) == [0: "1.0"])
    }

    @Test func aFailedTNEPStatusIsNamed() async throws {
        let channel = ScriptedChannel(supportsExtendedLength: false)
        channel.expect("00a4040007d2760000850101", respond: "9000")
        channel.expect("00a4000c02e103", respond: "9000")
        channel.expect("00b000000f", respond: "000f207fff7fff0406e1047fff00ff9000")
        channel.expect("00a4000c02e104", respond: "9000")
        channel.expect("00b0000002", respond: "001f9000")
        channel.expect("00b000021f", respond: "d1021a5470101375726e3a6e66633a736e3a68616e646f76657200000fffff9000")
        channel.expect("00d600001b0019d1021454731375726e3a6e66633a736e3a68616e646f766572", respond: "9000")
        channel.expect("00b0000002", respond: "00069000")
        channel.expect("00b0000206", respond: "d102015465ff9000")
        await #expect(throws: MobileDocumentError(.malformedEngagement, "")) {
            _ = try await NFCEngagement.engage(on: channel)
        }
        try channel.finish()
    }
}
