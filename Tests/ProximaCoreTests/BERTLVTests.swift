import ProximaCore
import ProximaTestSupport
import Testing

/// Decodes and returns the error's reason, recording an issue when decoding succeeds or the code is not
/// `malformedData`.
private func decodingFailure(
    _ hex: String,
    maximumDepth: Int = TLV.defaultMaximumDepth,
    sourceLocation: SourceLocation = #_sourceLocation
) -> String {
    do {
        let objects = try TLV.decodeAll(bytes(hex), maximumDepth: maximumDepth)
        Issue.record("decoded \(objects) instead of failing", sourceLocation: sourceLocation)
        return ""
    } catch let error as ProximaError {
        #expect(error.code == .malformedData, sourceLocation: sourceLocation)
        return error.reason
    } catch {
        Issue.record("unexpected error \(error)", sourceLocation: sourceLocation)
        return ""
    }
}

@Suite("BER-TLV (ISO/IEC 7816-4 §5.2, EMV Book 3 Annex B)")
struct BERTLVTests {
    /// PPSE-style FCI from EMV Book 1 §11.3.4: 6F { 84 DF name, A5 { 88 SFI, 5F2D language } }.
    private let fci = bytes("6F1A 840E325041592E5359532E4444463031 A508 880102 5F2D02656E")

    @Test("decodes an FCI template with its children")
    func decodesFCI() throws {
        let objects = try TLV.decodeAll(fci)
        try #require(objects.count == 1)
        let template = objects[0]
        #expect(template.tag == 0x6F)
        #expect(template.isConstructed)
        #expect(template.value.count == 0x1A)
        #expect(template.children.map(\.tag) == [0x84, 0xA5])
        #expect(template.child(0x84)?.value == Array("2PAY.SYS.DDF01".utf8))
        #expect(template.child(0x84)?.children.isEmpty == true)
        let proprietary = try #require(template.child(0xA5))
        #expect(proprietary.children.map(\.tag) == [0x88, 0x5F2D])
        #expect(template.child(0x88) == nil, "child() does not search deeper")
    }

    @Test("finds objects by path and by recursive search")
    func lookups() throws {
        let objects = try TLV.decodeAll(fci)
        #expect(objects.find(path: [0x6F, 0xA5, 0x88])?.value == [0x02])
        #expect(objects.find(path: [0x6F, 0xA5, 0x5F2D])?.value == Array("en".utf8))
        #expect(objects.find(path: [0x6F, 0x88]) == nil, "a path goes one level per tag")
        #expect(objects.find(path: [0xA5]) == nil)
        #expect(objects.find(path: []) == nil)
        #expect(objects[0].find(path: [0xA5, 0x88])?.value == [0x02])
        #expect(objects.first(0x5F2D)?.value == Array("en".utf8))
        #expect(objects[0].first(0x88)?.value == [0x02])
        #expect(objects.first(0x9F38) == nil)
    }

    @Test("a path tries every child sharing a tag")
    func pathBacktracks() throws {
        // 70 { A5 { 50 }, A5 { 88 } }: the second A5 holds the 88.
        let objects = try TLV.decodeAll(bytes("700A A503500141 A503880102"))
        #expect(objects.find(path: [0x70, 0xA5, 0x88])?.value == [0x02])
        #expect(objects.all(0xA5).count == 2)
    }

    @Test("re-encodes a decoded FCI to the same bytes")
    func roundTrip() throws {
        let objects = try TLV.decodeAll(fci)
        #expect(objects.bytes == fci)
        #expect(try TLV.decode(fci).bytes == fci)
    }

    @Test(
        "reads tag class, construction and hex",
        arguments: [
            (0x6F, "6F", TLVTag.TagClass.application, true),
            (0x84, "84", .contextSpecific, false),
            (0x9F38, "9F38", .contextSpecific, false),
            (0x5F2D, "5F2D", .application, false),
            (0xBF0C, "BF0C", .contextSpecific, true),
            (0xDF811A, "DF811A", .private, false),
            (0x04, "04", .universal, false),
            (0x30, "30", .universal, true),
        ] as [(UInt32, String, TLVTag.TagClass, Bool)]
    )
    func tagProperties(raw: UInt32, hex: String, tagClass: TLVTag.TagClass, constructed: Bool) throws {
        let tag = try #require(TLVTag(rawValue: raw))
        #expect(tag.description == hex)
        #expect(tag.bytes == bytes(hex))
        #expect(tag.tagClass == tagClass)
        #expect(tag.isConstructed == constructed)
        #expect(TLVTag(bytes: bytes(hex)) == tag)
    }

    @Test(
        "rejects malformed tag bytes",
        arguments: ["", "9F", "9F81", "8401", "FF", "00", "0084", "1F818181 01", "DF8181818101"]
    )
    func rejectsBadTags(hex: String) {
        #expect(TLVTag(bytes: bytes(hex)) == nil)
    }

    @Test("rejects malformed packed tags", arguments: [0, 0x9F, 0x849F, 0x9F0101, 0xFF, 0xFF01] as [UInt32])
    func rejectsBadRawTags(raw: UInt32) {
        #expect(TLVTag(rawValue: raw) == nil)
    }

    @Test("decodes two-, three- and four-byte tags")
    func multiByteTags() throws {
        let objects = try TLV.decodeAll(bytes("9F3803 9F6604 DF811A02 0102 DF818203 00"))
        #expect(objects.map(\.tag.rawValue) == [0x9F38, 0xDF811A, 0xDF8182_03])
        #expect(objects[0].value == bytes("9F6604"))
        #expect(objects[1].value == bytes("0102"))
        #expect(objects[2].value.isEmpty)
    }

    @Test(
        "reads long lengths 81, 82 and 83",
        arguments: [
            ("81 80", 128),
            ("81 FF", 255),
            ("82 0100", 256),
            ("82 FFFF", 65_535),
            ("83 010000", 65_536),
        ]
    )
    func longLengths(lengthHex: String, length: Int) throws {
        let encoded = bytes("5A") + bytes(lengthHex) + counting(length)
        let object = try TLV.decode(encoded, maximumSize: 70_000)
        #expect(object.value == counting(length))
        #expect(object.bytes == encoded, "the minimal length field is the one decoded")
    }

    @Test(
        "encodes the minimal length field",
        arguments: [
            (0, "00"), (1, "01"), (127, "7F"), (128, "8180"), (255, "81FF"), (256, "820100"), (65_535, "82FFFF"),
            (65_536, "83010000"),
        ]
    )
    func encodesLength(length: Int, lengthHex: String) {
        let object = TLV(tag: 0xC1, value: counting(length))
        #expect(object.bytes.prefix(1 + lengthHex.count / 2) == ArraySlice(bytes("C1" + lengthHex)))
        #expect(object.bytes.count == 1 + lengthHex.count / 2 + length)
    }

    @Test("accepts non-minimal long lengths and re-encodes them minimally")
    func nonMinimalLength() throws {
        let object = try TLV.decode(bytes("5A 8102 1122"))
        #expect(object.value == bytes("1122"))
        #expect(object.bytes == bytes("5A02 1122"))
    }

    @Test("skips 00 and FF padding before, between, after and inside objects")
    func skipsPadding() throws {
        let objects = try TLV.decodeAll(bytes("0000 5A0111 FF00 7007 00 9F020122 FFFF 00 FF"))
        #expect(objects.map(\.tag) == [0x5A, 0x70])
        #expect(objects[0].value == [0x11])
        #expect(objects[1].children.map(\.tag) == [0x9F02])
        #expect(objects[1].children.first?.value == [0x22])
        #expect(try TLV.decodeAll(bytes("00FF00")).isEmpty)
        #expect(try TLV.decodeAll([]).isEmpty)
    }

    @Test("builds constructed objects from children")
    func buildsConstructed() throws {
        let record = TLV(
            tag: 0x70,
            children: [
                TLV(tag: 0x5F24, value: bytes("291231")),
                TLV(tag: 0x5F34, value: [0x01]),
            ]
        )
        #expect(record.bytes == bytes("700A 5F2403291231 5F340101"))
        #expect(try TLV.decode(record.bytes) == record)
    }

    @Test("builds objects whose tag is known only at run time")
    func buildsFromEncodedValue() throws {
        let record = try TLV(tag: 0x70, encodedValue: bytes("5F2403291231 00 5F340101"))
        #expect(record.children.map(\.tag) == [0x5F24, 0x5F34])
        #expect(record.bytes == bytes("700B 5F2403291231 00 5F340101"))
        let pan = try TLV(tag: 0x5A, encodedValue: bytes("4761739001010119"))
        #expect(pan.value == bytes("4761739001010119"))
        let error = #expect(throws: ProximaError.self) { try TLV(tag: 0x77, encodedValue: bytes("9F2705")) }
        #expect(error?.reason == "TLV length at offset 2 exceeds data (needs 5, has 0)")
    }

    @Test("descriptions show tags and lengths, never values")
    func descriptionHidesValues() throws {
        let object = try TLV.decode(fci)
        #expect(object.description == "6F (26 bytes) {84 (14 bytes), A5 (8 bytes) {88 (1 byte), 5F2D (2 bytes)}}")
    }

    @Test("enforces the nesting depth")
    func depthLimit() throws {
        // 17 nested 70 templates around one primitive object: depth 18.
        var nested = bytes("5A0111")
        for _ in 0..<17 { nested = [0x70, UInt8(nested.count)] + nested }
        let reason = decodingFailure(nested.hexString)
        #expect(reason == "TLV at offset 32 nests deeper than the maximum depth of 16")
        #expect(try TLV.decodeAll(nested, maximumDepth: 18).count == 1)

        #expect(
            decodingFailure(fci.hexString, maximumDepth: 2)
                == "TLV at offset 20 nests deeper than the maximum depth of 2"
        )
        #expect(try TLV.decodeAll(fci, maximumDepth: 3).count == 1)
    }

    @Test("a depth of 16 is accepted by default")
    func depthSixteen() throws {
        var nested = bytes("5A0111")
        for _ in 0..<15 { nested = [0x70, UInt8(nested.count)] + nested }
        let outer = try TLV.decode(nested)
        var depth = 1
        var current = outer
        while let child = current.children.first {
            depth += 1
            current = child
        }
        #expect(depth == 16)
        #expect(current.value == [0x11])
    }

    @Test(
        "reports what is wrong and where",
        arguments: [
            ("5A0A 1122", "TLV length at offset 1 exceeds data (needs 10, has 2)"),
            ("6F05 5A08112233", "TLV length at offset 3 exceeds data (needs 8, has 3)"),
            ("9F", "TLV tag at offset 0 is truncated by the end of data"),
            ("9F81", "TLV tag at offset 0 is truncated by the end of data"),
            ("5A0111 9F", "TLV tag at offset 3 is truncated by the end of data"),
            ("DF81818101 00", "TLV tag at offset 0 is longer than 4 bytes"),
            ("5A", "TLV length at offset 1 is missing: data ends after the tag"),
            (
                "7080 5A0111 0000",
                "TLV length at offset 1 is indefinite (80), which ISO/IEC 7816-4 and EMV do not allow"
            ),
            ("5A85 0100000000", "TLV length at offset 1 announces 5 length bytes (85); at most 4"),
            ("5AFF 01", "TLV length at offset 1 announces 127 length bytes (FF); at most 4"),
            ("5A84 FFFFFFFF 01", "TLV length at offset 1 exceeds data (needs 4294967295, has 1)"),
            ("5A84 FFFFFF", "TLV length at offset 1 is truncated (needs 4 length bytes, has 3)"),
            ("5A82 01", "TLV length at offset 1 is truncated (needs 2 length bytes, has 1)"),
            ("7003 5A0511 00", "TLV length at offset 3 exceeds data (needs 5, has 1)"),
        ]
    )
    func errors(hex: String, reason: String) {
        #expect(decodingFailure(hex) == reason)
    }

    @Test("rejects input over the size limit")
    func sizeLimit() {
        let big = bytes("5A 83010000") + counting(65_536)
        let error = #expect(throws: ProximaError.self) { try TLV.decodeAll(big) }
        #expect(error?.code == .malformedData)
        #expect(error?.reason == "TLV input of 65541 bytes exceeds the maximum of 65536")
        #expect(throws: ProximaError(.malformedData)) { try TLV.decodeAll(self.fci, maximumSize: 10) }
    }

    @Test("decode wants exactly one object")
    func decodeOne() {
        #expect(throws: ProximaError(.malformedData)) { try TLV.decode(bytes("5A0111 5A0122")) }
        #expect(throws: ProximaError(.malformedData)) { try TLV.decode(bytes("0000")) }
    }
}
