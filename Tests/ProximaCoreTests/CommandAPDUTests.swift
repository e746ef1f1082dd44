import ProximaCore
import ProximaTestSupport
import Testing

/// One encoding vector: the APDU's parts and the bytes ISO/IEC 7816-4 §5.1 gives for them.
struct APDUVector: Sendable, CustomTestStringConvertible {
    var name: String
    var cla: UInt8 = 0x00
    var ins: UInt8
    var p1: UInt8 = 0x00
    var p2: UInt8 = 0x00
    var data: [UInt8] = []
    var expectedLength: Int?
    var encoded: [UInt8]
    var isoCase: Int
    var isExtended: Bool

    var testDescription: String { name }
}

private let ppse = Array("2PAY.SYS.DDF01".utf8)

private let vectors: [APDUVector] = [
    APDUVector(
        name: "case 1",
        ins: 0xA4,
        p1: 0x04,
        encoded: bytes("00A40400"),
        isoCase: 1,
        isExtended: false
    ),
    APDUVector(
        name: "case 2 short, Le 16",
        ins: 0xB2,
        p1: 0x01,
        p2: 0x0C,
        expectedLength: 16,
        encoded: bytes("00B2010C10"),
        isoCase: 2,
        isExtended: false
    ),
    APDUVector(
        name: "case 2 short, Le 256 is 00",
        ins: 0xB0,
        expectedLength: 256,
        encoded: bytes("00B0000000"),
        isoCase: 2,
        isExtended: false
    ),
    APDUVector(
        name: "case 3 short, SELECT PPSE without Le",
        ins: 0xA4,
        p1: 0x04,
        data: ppse,
        encoded: bytes("00A404000E 325041592E5359532E4444463031"),
        isoCase: 3,
        isExtended: false
    ),
    APDUVector(
        name: "case 4 short, SELECT PPSE Le 256",
        ins: 0xA4,
        p1: 0x04,
        data: ppse,
        expectedLength: 256,
        encoded: bytes("00A404000E 325041592E5359532E4444463031 00"),
        isoCase: 4,
        isExtended: false
    ),
    APDUVector(
        name: "case 4 short, 255 data bytes",
        cla: 0x80,
        ins: 0xAE,
        p1: 0x80,
        data: counting(255),
        expectedLength: 1,
        encoded: bytes("80AE8000FF") + counting(255) + [0x01],
        isoCase: 4,
        isExtended: false
    ),
    APDUVector(
        name: "case 2 extended, Le 65536 is 000000",
        ins: 0xB0,
        expectedLength: 65_536,
        encoded: bytes("00B00000 000000"),
        isoCase: 2,
        isExtended: true
    ),
    APDUVector(
        name: "case 2 extended, Le 257",
        ins: 0xB0,
        expectedLength: 257,
        encoded: bytes("00B00000 000101"),
        isoCase: 2,
        isExtended: true
    ),
    APDUVector(
        name: "case 3 extended, 300 data bytes",
        ins: 0xD6,
        data: counting(300),
        encoded: bytes("00D60000 00012C") + counting(300),
        isoCase: 3,
        isExtended: true
    ),
    APDUVector(
        name: "case 4 extended, 300 data bytes, Le 65536 is 0000",
        ins: 0xC3,
        data: counting(300),
        expectedLength: 65_536,
        encoded: bytes("00C30000 00012C") + counting(300) + bytes("0000"),
        isoCase: 4,
        isExtended: true
    ),
    APDUVector(
        name: "case 4 extended, 300 data bytes, Le 256 is 0100",
        ins: 0xC3,
        data: counting(300),
        expectedLength: 256,
        encoded: bytes("00C30000 00012C") + counting(300) + bytes("0100"),
        isoCase: 4,
        isExtended: true
    ),
    APDUVector(
        name: "case 4 extended by Le alone, 5 data bytes, Le 1000",
        ins: 0xB1,
        data: counting(5),
        expectedLength: 1000,
        encoded: bytes("00B10000 000005") + counting(5) + bytes("03E8"),
        isoCase: 4,
        isExtended: true
    ),
]

@Suite("CommandAPDU encoding and parsing")
struct CommandAPDUTests {
    @Test("encodes to the ISO/IEC 7816-4 bytes", arguments: vectors)
    func encodes(_ vector: APDUVector) throws {
        let command = try CommandAPDU(
            cla: vector.cla,
            ins: vector.ins,
            p1: vector.p1,
            p2: vector.p2,
            data: vector.data,
            expectedLength: vector.expectedLength
        )
        #expect(command.bytes == vector.encoded)
        #expect(command.isoCase == vector.isoCase)
        #expect(command.isExtended == vector.isExtended)
    }

    @Test("parses its encoding back", arguments: vectors)
    func parses(_ vector: APDUVector) throws {
        let command = try CommandAPDU(bytes: vector.encoded)
        #expect(command.cla == vector.cla)
        #expect(command.ins == vector.ins)
        #expect(command.p1 == vector.p1)
        #expect(command.p2 == vector.p2)
        #expect(command.data == vector.data)
        #expect(command.expectedLength == vector.expectedLength)
        #expect(command.bytes == vector.encoded)
    }

    @Test("an extended encoding of a short-sized APDU parses to the same APDU")
    func parsesNonCanonicalExtended() throws {
        let extended = try CommandAPDU(bytes: bytes("00B00000 000010"))
        #expect(extended.expectedLength == 16)
        #expect(extended.bytes == bytes("00B0000010"))
    }

    @Test(
        "rejects bytes whose lengths do not add up",
        arguments: [
            ("00A404", "shorter than its header"),
            ("00A40400 05 0102", "Lc 5 does not match its 7 bytes"),
            ("00A40400 01 AA 00 00", "Lc 1 does not match its 8 bytes"),
            ("00A40400 00 01", "extended command APDU of 6 bytes is truncated"),
            ("00A40400 00 0000 01", "extended command APDU has Lc 0"),
            ("00A40400 00 0003 0102", "extended command APDU Lc 3 does not match its 9 bytes"),
            ("00A40400 00 0001 AA 00", "extended command APDU Lc 1 does not match its 9 bytes"),
        ]
    )
    func rejectsBadLengths(hex: String, reason: String) throws {
        let error = #expect(throws: ProximaError.self) { try CommandAPDU(bytes: bytes(hex)) }
        #expect(error?.code == .malformedData)
        #expect(error?.reason.contains(reason) == true, "reason was: \(error?.reason ?? "-")")
    }

    @Test("refuses to build APDUs no encoding can carry")
    func rejectsOutOfRange() {
        #expect(throws: ProximaError(.invalidArgument)) {
            try CommandAPDU(cla: 0, ins: 0xD6, p1: 0, p2: 0, data: counting(65_536))
        }
        #expect(throws: ProximaError(.invalidArgument)) {
            try CommandAPDU(cla: 0, ins: 0xB0, p1: 0, p2: 0, expectedLength: 0)
        }
        #expect(throws: ProximaError(.invalidArgument)) {
            try CommandAPDU(cla: 0, ins: 0xB0, p1: 0, p2: 0, expectedLength: 65_537)
        }
    }

    @Test("the description shows header and lengths, never data")
    func descriptionHidesData() throws {
        let command = try CommandAPDU(cla: 0x00, ins: 0xA4, p1: 0x04, p2: 0x00, data: ppse, expectedLength: 256)
        #expect(command.description == "00A40400 Lc=14 Le=256")
    }
}

@Suite("ResponseAPDU and StatusWord")
struct ResponseAPDUTests {
    @Test(
        "splits data and status word",
        arguments: [
            ("9000", "", 0x9000 as UInt16),
            ("6A82", "", 0x6A82),
            ("0102039000", "010203", 0x9000),
            ("AA6110", "AA", 0x6110),
        ]
    )
    func parses(hex: String, data: String, status: UInt16) throws {
        let response = try ResponseAPDU(bytes: bytes(hex))
        #expect(response.data == bytes(data))
        #expect(response.status == StatusWord(rawValue: status))
        #expect(response.bytes == bytes(hex))
    }

    @Test("rejects fewer than two bytes", arguments: ["", "90"])
    func rejectsShort(hex: String) {
        #expect(throws: ProximaError(.malformedData)) { try ResponseAPDU(bytes: bytes(hex)) }
    }

    @Test("reads 61xx and 6Cxx counts, 00 meaning 256")
    func statusCounts() {
        #expect(StatusWord(0x61, 0x10).bytesRemaining == 16)
        #expect(StatusWord(0x61, 0x00).bytesRemaining == 256)
        #expect(StatusWord(0x90, 0x00).bytesRemaining == nil)
        #expect(StatusWord(0x6C, 0x1A).correctLength == 26)
        #expect(StatusWord(0x6C, 0x00).correctLength == 256)
        #expect(StatusWord(0x67, 0x00).correctLength == nil)
    }
}
