import ProximaCore
import ProximaTestSupport
import Testing

@Suite("Data object lists (EMV Book 3 §5.4)")
struct DataObjectListTests {
    /// A qVSDC-style PDOL: TTQ, amounts, country, TVR, currency, date, type, unpredictable number.
    private let pdol = bytes("9F6604 9F0206 9F0306 9F1A02 9505 5F2A02 9A03 9C01 9F3704")

    @Test("parses tags and lengths")
    func parses() throws {
        let list = try DataObjectList(bytes: pdol)
        #expect(list.entries.map(\.tag) == [0x9F66, 0x9F02, 0x9F03, 0x9F1A, 0x95, 0x5F2A, 0x9A, 0x9C, 0x9F37])
        #expect(list.entries.map(\.length) == [4, 6, 6, 2, 5, 2, 3, 1, 4])
        #expect(list.totalLength == 33)
        #expect(list.bytes == pdol)
        #expect(list.description == "9F66 4, 9F02 6, 9F03 6, 9F1A 2, 95 5, 5F2A 2, 9A 3, 9C 1, 9F37 4")
    }

    @Test("fills in list order, zero-filling what the terminal does not have")
    func fills() throws {
        let list = try DataObjectList(bytes: pdol)
        let values: [TLVTag: [UInt8]] = [
            0x9F66: bytes("36004000"),
            0x9F02: bytes("000000001000"),
            0x9F03: bytes("000000000000"),
            0x9F1A: bytes("0826"),
            0x5F2A: bytes("0826"),
            0x9A: bytes("250131"),
            0x9C: bytes("00"),
            0x9F37: bytes("A1B2C3D4"),
            // 95 (TVR) deliberately absent: zeros.
        ]
        let data = list.fill(with: values)
        #expect(
            data
                == bytes("36004000 000000001000 000000000000 0826 0000000000 0826 250131 00 A1B2C3D4")
        )
        #expect(data.count == list.totalLength)
    }

    @Test(
        "pads and truncates by format",
        arguments: [
            // Numeric: leading zeros, truncated on the left.
            ("9F0206", "1000", "000000001000"),
            ("9F0206", "01000000001000", "000000001000"),
            ("9A03", "00250131", "250131"),
            // Binary and other formats: trailing zeros, truncated on the right.
            ("9F6604", "3600", "36000000"),
            ("9F6604", "3600400080", "36004000"),
            // Compressed numeric (PAN): trailing FF. Not a virtual card's PAN: Swift Testing prints arguments, and
            // `make test` fails when a test PAN appears in its output.
            ("5A0A", "1122334455667788", "1122334455667788FFFF"),
            ("5A04", "1122334455667788", "11223344"),
            // Exact length: as is.
            ("9C01", "09", "09"),
        ]
    )
    func formats(dolHex: String, valueHex: String, expectedHex: String) throws {
        let list = try DataObjectList(bytes: bytes(dolHex))
        let tag = try #require(list.entries.first?.tag)
        #expect(list.fill(with: [tag: bytes(valueHex)]) == bytes(expectedHex))
    }

    @Test("unknown and constructed tags are zero-filled")
    func unknownAndConstructed() throws {
        let list = try DataObjectList(bytes: bytes("DF811A03 7002 9F3702"))
        let data = list.fill(with: [0x70: bytes("5A00"), 0x9F37: bytes("ABCD")])
        #expect(data == bytes("000000 0000 ABCD"))
    }

    @Test("formats can be overridden per tag")
    func customFormats() throws {
        let list = try DataObjectList(bytes: bytes("9F0206 DF0103"))
        let data = list.fill(
            with: [0x9F02: bytes("1000"), 0xDF01: bytes("12")],
            formats: [0xDF01: .numeric]
        )
        // 9F02 is no longer numeric in this table: trailing zeros.
        #expect(data == bytes("100000000000 000012"))
    }

    @Test("a zero-length entry contributes nothing")
    func zeroLength() throws {
        let list = try DataObjectList(bytes: bytes("9F3700 9C01"))
        #expect(list.fill(with: [0x9F37: bytes("AABB"), 0x9C: [0x20]]) == [0x20])
    }

    @Test(
        "rejects malformed lists with the offset",
        arguments: [
            ("9F", "DOL tag at offset 0 is truncated by the end of data"),
            ("9F0206 9F02", "DOL length at offset 5 is missing: data ends after the tag"),
            ("00 9F0206", "DOL tag at offset 0 starts with 00"),
            ("9F0206 FF01", "DOL tag at offset 3 starts with FF"),
            ("9F0280", "DOL length at offset 2 is indefinite (80), which ISO/IEC 7816-4 and EMV do not allow"),
            ("9F0284FFFFFFFF", "DOL entry 9F02 at offset 0 asks for 4294967295 bytes; the list would exceed 65536"),
            ("9F0282FFFF 9F0382FFFF", "DOL entry 9F03 at offset 5 asks for 65535 bytes; the list would exceed 65536"),
        ]
    )
    func errors(hex: String, reason: String) {
        let error = #expect(throws: ProximaError.self) { try DataObjectList(bytes: bytes(hex)) }
        #expect(error?.code == .malformedData)
        #expect(error?.reason == reason)
    }

    @Test("the total length bound is a parameter")
    func totalLengthBound() throws {
        #expect(throws: ProximaError(.malformedData)) {
            try DataObjectList(bytes: self.pdol, maximumTotalLength: 32)
        }
        #expect(try DataObjectList(bytes: pdol, maximumTotalLength: 33).totalLength == 33)
    }
}
