import ProximaCore
import Testing

@testable import PCSCTransport

private func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

@Suite("Parsing what pcscd and readers hand over: reader multi-strings and (pseudo-)ATRs")
struct PCSCParsingTests {
    // MARK: SCardListReaders multi-strings

    @Test(
        "multi-strings: NUL separated, ended by a double NUL",
        arguments: [
            (bytes("Virtual PCD 00 00\0Virtual PCD 00 01\0\0"), ["Virtual PCD 00 00", "Virtual PCD 00 01"]),
            (bytes("only\0\0"), ["only"]),
            ([], []),
            ([0], []),
            ([0, 0], []),
            // Stops at the first empty name; what follows is ignored.
            (bytes("a\0\0b\0\0"), ["a"]),
            // No final double NUL: every terminated name counts.
            (bytes("a\0b\0"), ["a", "b"]),
            // A name without its NUL (truncated buffer) is dropped.
            (bytes("a\0trunc"), ["a"]),
            (bytes("trunc"), []),
            // Duplicates are kept once, in first-seen order.
            (bytes("b\0a\0b\0\0"), ["b", "a"]),
            // Not UTF-8: skipped, the next name still counts.
            ([0xFF, 0xFE, 0] + bytes("ok\0\0"), ["ok"]),
            ([0xC3, 0] + bytes("ok\0\0"), ["ok"]),
            (bytes("Lecteur é 00 00\0\0"), ["Lecteur é 00 00"]),
        ] as [([UInt8], [String])]
    )
    func multiStrings(input: [UInt8], names: [String]) {
        #expect(PCSCMultiString.parse(input) == names)
    }

    @Test("names longer than MAX_READERNAME (128 bytes) are skipped; 128 bytes is fine")
    func longNames() {
        let longest = String(repeating: "x", count: 128)
        let tooLong = String(repeating: "y", count: 129)
        let input = bytes(tooLong + "\0" + longest + "\0\0")
        #expect(PCSCMultiString.parse(input) == [longest])
    }

    @Test("at most 64 names come back from a flood")
    func flood() {
        var input: [UInt8] = []
        for index in 0..<10_000 { input += bytes("reader \(index)\0") }
        input.append(0)
        let names = PCSCMultiString.parse(input)
        #expect(names.count == PCSCMultiString.maximumNames)
        #expect(names.first == "reader 0")
        #expect(names.last == "reader 63")
    }

    @Test("a slice that does not start at index 0 parses the same")
    func slices() {
        let buffer = bytes("garbage\0a\0b\0\0")
        #expect(PCSCMultiString.parse(buffer[8...]) == ["a", "b"])
    }

    @Test("random bytes never trap and only give valid, short, distinct names")
    func randomBytes() {
        var generator = SplitMix64(seed: 0x5EED)
        for _ in 0..<2_000 {
            let count = Int(generator.next() % 600)
            let input = (0..<count).map { _ -> UInt8 in
                let byte = UInt8(truncatingIfNeeded: generator.next())
                return byte < 40 ? 0 : byte
            }
            let names = PCSCMultiString.parse(input)
            #expect(names.count <= PCSCMultiString.maximumNames)
            #expect(Set(names).count == names.count)
            #expect(names.allSatisfy { !$0.isEmpty && $0.utf8.count <= PCSCMultiString.maximumNameLength })
        }
    }

    // MARK: ATR → technology

    @Test(
        "PC/SC Part 3 pseudo-ATRs and contact ATRs",
        arguments: [
            // Storage cards: 3B 8F 80 01 80 4F 0C A0 00 00 03 06 SS NN NN 00 00 00 00 TCK.
            ("3B8F8001804F0CA000000306030001000000006A", CardTechnology.iso14443A),  // MIFARE Classic 1K
            ("3B8F8001804F0CA0000003060300030000000068", .iso14443A),  // MIFARE Ultralight
            ("3B8F8001804F0CA000000306070000000000006C", .iso14443B),
            ("3B8F8001804F0CA0000003061100000000000078", .felica),
            ("3B8F8001804F0CA00000030611000000000000", .felica),  // TCK missing: still read
            ("3B8F8001804F0CA0000003060B00000000000060", .unknown),  // ISO/IEC 15693 part 3
            // ISO/IEC 14443-4 Type A: the ATS historical bytes.
            ("3B8080010101", .iso14443A),  // no historical bytes, as phones answer
            ("3B8A800100318065B0850100110F83009000", .iso14443A),
            ("3B8E800180318066B1840C016E0183009000", .iso14443A),
            // Type B: ATQB application data, protocol info, MBLI in a byte ending in 0.
            ("3B88800100000000007181006D", .iso14443B),
            ("3B8880011A2B3C4D0070850046", .iso14443B),
            // Eight historical bytes that are not ATQB-shaped stay Type A.
            ("3B8880010102030405060708", .iso14443A),
            // Contact cards.
            ("3B6E00008031806686B0841201016E0183009000", .contact),
            ("3BFF1300FF8131FE45656311086602560013", .contact),
            ("3F6525082204689000", .contact),
            // Not an ATR, or cut short.
            ("", .unknown),
            ("0011", .unknown),
            ("3B8F8001804F", .unknown),
            ("3B", .contact),
        ]
    )
    func technologies(atr hex: String, technology: CardTechnology) throws {
        let atr = try #require([UInt8](hex: hex))
        #expect(PseudoATR.technology(forATR: atr) == technology)
    }

    @Test("random ATRs never trap")
    func randomATRs() {
        var generator = SplitMix64(seed: 7)
        for _ in 0..<5_000 {
            let count = Int(generator.next() % 40)
            var atr = (0..<count).map { _ in UInt8(truncatingIfNeeded: generator.next()) }
            if count >= 4 && generator.next() % 2 == 0 {
                atr.replaceSubrange(0..<4, with: [0x3B, 0x80 | atr[1], 0x80, 0x01])
            }
            _ = PseudoATR.technology(forATR: atr)
        }
    }
}
