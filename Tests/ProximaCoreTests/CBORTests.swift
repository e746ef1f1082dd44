import ProximaCore
import ProximaTestSupport
import Testing

/// Hostile input: each row must fail with this kind at this offset, never trap, hang or allocate from the length.
struct HostileCBOR: Sendable, CustomTestStringConvertible {
    let hex: String
    let kind: CBORError.Kind
    let offset: Int
    let why: String
    init(_ hex: String, _ kind: CBORError.Kind, at offset: Int, _ why: String) {
        self.hex = hex
        self.kind = kind
        self.offset = offset
        self.why = why
    }
    var testDescription: String { why }
}

let hostileCBOR: [HostileCBOR] = [
    HostileCBOR("", .truncated, at: 0, "empty input"),
    HostileCBOR("18", .truncated, at: 0, "one-byte argument missing"),
    HostileCBOR("1b000000", .truncated, at: 0, "eight-byte argument cut short"),
    HostileCBOR("5bffffffffffffffff00", .tooLong, at: 0, "byte string claiming 2^64-1 bytes"),
    HostileCBOR("5a7fffffff0102", .tooLong, at: 0, "byte string claiming 2 GiB with 2 bytes present"),
    HostileCBOR("7a00010000616263", .tooLong, at: 0, "text string longer than the input"),
    HostileCBOR("9bffffffffffffffff", .tooLong, at: 0, "array claiming 2^64-1 items"),
    HostileCBOR("9a0001000001", .tooLong, at: 0, "array of 65536 items in one byte"),
    HostileCBOR("bb7fffffffffffffff0102", .tooLong, at: 0, "map claiming 2^63 entries"),
    HostileCBOR("a2010203", .tooLong, at: 0, "map of two entries with three bytes left"),
    HostileCBOR("820102ff", .trailingBytes, at: 3, "a break code after a complete item"),
    HostileCBOR("0000", .trailingBytes, at: 1, "two top-level items"),
    HostileCBOR("1c", .reservedEncoding, at: 0, "additional information 28"),
    HostileCBOR("830102fe", .reservedEncoding, at: 3, "additional information 30 inside an array"),
    HostileCBOR("f801", .reservedEncoding, at: 0, "two-byte simple value below 32"),
    HostileCBOR("ff", .invalidIndefinite, at: 0, "a lone break code"),
    HostileCBOR("1f", .invalidIndefinite, at: 0, "an indefinite unsigned integer"),
    HostileCBOR("df00", .invalidIndefinite, at: 0, "an indefinite tag"),
    HostileCBOR("5f6161ff", .invalidIndefinite, at: 1, "a text chunk in an indefinite byte string"),
    HostileCBOR("5f5f4101ffff", .invalidIndefinite, at: 1, "a nested indefinite chunk"),
    HostileCBOR("9f0102", .truncated, at: 3, "an indefinite array without its break code"),
    HostileCBOR("bf01", .truncated, at: 2, "an indefinite map ending after a key"),
    HostileCBOR("62c328", .invalidUTF8, at: 0, "an invalid UTF-8 sequence"),
    HostileCBOR("63eda080", .invalidUTF8, at: 0, "an encoded surrogate"),
    HostileCBOR("a201020103", .duplicateMapKey, at: 3, "the key 1 twice"),
    HostileCBOR("a2616101616102", .duplicateMapKey, at: 4, "the key \"a\" twice"),
    HostileCBOR(String(repeating: "81", count: 65) + "00", .tooDeep, at: 65, "arrays nested 66 deep"),
    HostileCBOR(String(repeating: "d818", count: 70) + "00", .tooDeep, at: 130, "tags nested 71 deep"),
    HostileCBOR("d818", .truncated, at: 2, "a tag without content"),
]

@Suite("CBOR decoder and encoder")
struct CBORTests {
    @Test("hostile input is refused with its kind and offset", arguments: hostileCBOR)
    func hostile(_ row: HostileCBOR) {
        #expect(throws: CBORError(row.kind, at: row.offset, "")) { try CBORDecoder.decode(bytes(row.hex)) }
    }

    @Test(
        "stepping over an item (for its bytes as received) refuses hostile input as decoding does",
        // Trailing bytes are the caller's business when stepping through items one at a time.
        arguments: hostileCBOR.filter { $0.kind != .trailingBytes }
    )
    func hostileSkipped(_ row: HostileCBOR) {
        var decoder = CBORDecoder(bytes(row.hex))
        #expect(throws: CBORError(row.kind, at: row.offset, "")) { try decoder.nextEncodedItem() }
    }

    @Test func steppingOverAnItemAgreesWithDecodingItOnMutatedInput() throws {
        // A valid item with every major type, indefinite strings and containers, a tag and UTF-8 text; each mutation
        // must give the same outcome (end offset, or error kind and offset) from both paths.
        let seed = bytes(
            "a56161820120626e6f7f62c3a96161ff5f420102ff9f01a1616202fff5d8184ea2646e616d65637a6f65f4f9fbff"
                + "fa3f800000fb3ff199999999999a"
        )
        _ = try CBORDecoder.decode(seed)
        var random = SplitMix64(seed: 0x18013_5)
        var disagreements: [String] = []
        for round in 0..<20_000 {
            var input = seed
            for _ in 0...(round % 3) {
                let position = Int(random.next() % UInt64(input.count))
                switch random.next() % 3 {
                case 0: input[position] = UInt8(truncatingIfNeeded: random.next())
                case 1: input.remove(at: position)
                default: input.insert(UInt8(truncatingIfNeeded: random.next()), at: position)
                }
                if input.isEmpty { input = [0] }
            }
            var decoding = CBORDecoder(input)
            var stepping = CBORDecoder(input)
            let decoded = Result { _ = try decoding.decodeNext() }.map { decoding.offset }
            let stepped = Result { _ = try stepping.nextEncodedItem() }.map { stepping.offset }
            switch (decoded, stepped) {
            case (.success(let a), .success(let b)) where a == b: continue
            case (.failure(let a as CBORError), .failure(let b as CBORError)) where a == b: continue
            default: disagreements.append("round \(round): decode \(decoded), step \(stepped)")
            }
        }
        #expect(disagreements.isEmpty, "\(disagreements.prefix(5))")
    }

    @Test func decodingAnEmbeddedItemInPlaceAgreesWithDecodingThenUnwrapping() throws {
        // #6.24(bstr) around the item above, definite and as two indefinite chunks, inside a larger buffer (so the
        // slice does not start at index 0); every mutation must give the same value or the same error (kind and
        // offset) from `decodeEmbedded(slice)` as from decoding a copy and then `decodeEmbedded()`.
        let inner = bytes(
            "a56161820120626e6f7f62c3a96161ff5f420102ff9f01a1616202fff5d8184ea2646e616d65637a6f65f4f9fbff"
                + "fa3f800000fb3ff199999999999a"
        )
        let definite: [UInt8] = [0xD8, 0x18, 0x58, UInt8(inner.count)] + inner
        let chunked: [UInt8] =
            [0xD8, 0x18, 0x5F, 0x45] + inner[..<5] + [0x58, UInt8(inner.count - 5)] + inner[5...]
            + [0xFF]
        var random = SplitMix64(seed: 0x24)
        var disagreements: [String] = []
        for (seedIndex, seed) in [definite, chunked].enumerated() {
            #expect(try CBORDecoder.decodeEmbedded(seed[...]) == CBORDecoder.decode(inner))
            for round in 0..<10_000 {
                var item = seed
                for _ in 0...(round % 3) {
                    let position = Int(random.next() % UInt64(item.count))
                    switch random.next() % 3 {
                    case 0: item[position] = UInt8(truncatingIfNeeded: random.next())
                    case 1: item.remove(at: position)
                    default: item.insert(UInt8(truncatingIfNeeded: random.next()), at: position)
                    }
                    if item.isEmpty { item = [0] }
                }
                let buffer = [0x82, 0x01] + item + [0xF6]
                let slice = buffer[2..<(buffer.count - 1)]
                let copied = Result { try CBORDecoder.decode(Array(slice)).decodeEmbedded() }
                let inPlace = Result { try CBORDecoder.decodeEmbedded(slice) }
                switch (copied, inPlace) {
                // Compared encoded: a mutated float may be a NaN, which is not equal to itself.
                case (.success(let a), .success(let b)) where a.encoded == b.encoded: continue
                case (.failure(let a as CBORError), .failure(let b as CBORError)) where a == b: continue
                default: disagreements.append("seed \(seedIndex) round \(round): copy \(copied), in place \(inPlace)")
                }
            }
        }
        #expect(disagreements.isEmpty, "\(disagreements.prefix(5))")
    }

    @Test func aSliceIsReadInPlaceWithOffsetsFromItsStart() throws {
        let buffer = bytes("0000" + "62c080" + "6161" + "00")
        #expect(throws: CBORError(.invalidUTF8, at: 0, "")) { try CBORDecoder.decode(buffer[2..<5]) }
        #expect(throws: CBORError(.trailingBytes, at: 2, "")) { try CBORDecoder.decode(buffer[5...]) }
        #expect(try CBORDecoder.decode(buffer[5..<7]) == "a")
        let nested = bytes("ff" + "a1616182f6d8184101" + "ff")
        let found = try #require(try CBORDecoder.encodedItem(in: nested[1..<10], at: [.key("a"), .index(1)]))
        #expect(found.startIndex == 6)
        #expect(Array(found) == bytes("d8184101"))
        #expect(try CBORDecoder.decodeEmbedded(found) == .unsigned(1))
    }

    @Test("text is checked as UTF-8 when stepped over", arguments: ["62c080", "64f4908080", "62e282", "61ff", "61bf"])
    func invalidUTF8Skipped(_ hex: String) {
        var decoder = CBORDecoder(bytes(hex))
        #expect(throws: CBORError(.invalidUTF8, at: 0, "")) { try decoder.nextEncodedItem() }
        #expect(throws: CBORError(.invalidUTF8, at: 0, "")) { try CBORDecoder.decode(bytes(hex)) }
    }

    @Test func textIsAcceptedExactlyWhenStringValidatingAcceptsIt() throws {
        // Short byte runs weighted towards lead and continuation bytes, as a definite and an indefinite text string.
        var random = SplitMix64(seed: 0x7F8)
        let pool: [UInt8] =
            [0x00, 0x41, 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0, 0xC1, 0xC2, 0xDF, 0xE0, 0xED, 0xEF]
            + [0xF0, 0xF4, 0xF5, 0xFF]
        for _ in 0..<20_000 {
            let raw = (0..<Int(random.next() % 7)).map { _ in pool[Int(random.next() % UInt64(pool.count))] }
            let expected = String(validating: raw, as: UTF8.self)
            for encoded in [[0x60 | UInt8(raw.count)] + raw, [0x7F, 0x60 | UInt8(raw.count)] + raw + [0xFF]] {
                let decoded = try? CBORDecoder.decode(encoded)
                #expect(decoded == expected.map { .textString($0) }, "\(raw)")
                var stepping = CBORDecoder(encoded)
                #expect(((try? stepping.nextEncodedItem()) != nil) == (expected != nil), "\(raw)")
            }
        }
    }

    @Test func theItemLimitStopsAWideFlatArray() {
        let limits = CBORDecoder.Limits(maximumItemCount: 100)
        let wide = [0x98, 0xC8] + [UInt8](repeating: 0, count: 200)
        #expect(throws: CBORError(.tooManyItems, at: 0, "")) { try CBORDecoder.decode(wide, limits: limits) }
        #expect(throws: CBORError(.tooManyItems, at: 100, "")) {
            try CBORDecoder.decode([0x9F] + [UInt8](repeating: 0, count: 200) + [0xFF], limits: limits)
        }
    }

    @Test func theInputLimitIsCheckedFirst() {
        let limits = CBORDecoder.Limits(maximumInputSize: 4)
        #expect(throws: CBORError(.tooLong, at: 0, "")) { try CBORDecoder.decode(bytes("4401020304"), limits: limits) }
    }

    @Test func mapKeysAreSortedByTheirEncodedBytes() {
        // RFC 8949 §4.2.1: 10, 100, -1, "z", "aa", [100], [-1], false: bytewise order of the encodings.
        let value: CBORValue = [
            false: 8, "aa": 5, [-1]: 7, -1: 3, 100: 2, "z": 4, [100]: 6, 10: 1,
        ]
        #expect(
            value.encoded
                == bytes("a8 0a01 186402 2003 617a04 62616105 81186406 812007 f408")
        )
    }

    @Test func integersAndHeadsAreShortest() {
        #expect(CBORValue(23).encoded == [0x17])
        #expect(CBORValue(24).encoded == [0x18, 0x18])
        #expect(CBORValue(255).encoded == [0x18, 0xFF])
        #expect(CBORValue(256).encoded == [0x19, 0x01, 0x00])
        #expect(CBORValue(65536).encoded == bytes("1a00010000"))
        #expect(CBORValue(-25).encoded == [0x38, 0x18])
        #expect(CBORValue(Int.min).encoded == bytes("3b7fffffffffffffff"))
        #expect(CBORValue.byteString([UInt8](repeating: 7, count: 24)).encoded.prefix(2) == [0x58, 0x18])
        #expect(CBORValue.float(0.5).encoded == bytes("f93800"))
        #expect(CBORValue.float(Double.nan).encoded == bytes("f97e00"))
        #expect(CBORValue.float(-0x1p-24).encoded == bytes("f98001"))
    }

    @Test func integerAccessorsCoverBothSigns() throws {
        #expect(try CBORDecoder.decode(bytes("3903e7")).intValue == -1000)
        #expect(try CBORDecoder.decode(bytes("1bffffffffffffffff")).intValue == nil)
        #expect(try CBORDecoder.decode(bytes("3b7fffffffffffffff")).intValue == Int.min)
    }

    @Test func embeddedCBORKeepsTheBytesAsReceived() throws {
        // A map whose key is encoded with a non-shortest head: tag 24 keeps it, so hashes see the holder's bytes.
        let inner = bytes("a1 1800 01")
        let value = try CBORDecoder.decode([0xD8, 0x18, 0x44] + inner)
        #expect(value.embeddedBytes == inner)
        #expect(try value.decodeEmbedded() == [0: 1])
        #expect(CBORValue.embedded([0: 1]).encoded == bytes("d818 43 a10001"))
        #expect(throws: CBORError(.unexpectedType, at: 0, "")) { try CBORValue.textString("x").decodeEmbedded() }
    }

    @Test func datesReadBothTagsAndOffsets() throws {
        let signed = try CBORDecoder.decode(bytes("c074323032302d31302d30315431333a33303a30325a"))
        #expect(signed.dateTimeValue == CivilTime(year: 2020, month: 10, day: 1, hour: 13, minute: 30, second: 2))
        let fraction = CBORValue.tagged(0, "2020-10-01T13:30:02.25+01:00")
        #expect(fraction.dateTimeValue == CivilTime(year: 2020, month: 10, day: 1, hour: 12, minute: 30, second: 2))
        #expect(CBORValue.tagged(0, "2020-10-01 13:30:02Z").dateTimeValue == nil)
        #expect(CBORValue.tagged(0, "2020-10-01T13:30:02").dateTimeValue == nil)
        let birth = try CBORDecoder.decode(bytes("d903ec6a313939302d30312d3031"))
        #expect(birth.fullDateValue?.year == 1990)
        #expect(CBORValue.fullDate(year: 1990, month: 1, day: 1) == birth)
        #expect(CBORValue.dateTime(CivilTime(year: 2024, month: 2, day: 29)).encoded.prefix(2) == [0xC0, 0x74])
        #expect(CBORValue.tagged(1004, "1990-02-30").fullDateValue == nil)
    }

    @Test func encodedItemReturnsTheBytesAtAPath() throws {
        // {"a": [1, 24(h'00'), {"k": 1000}]} with the 1000 in a non-shortest head.
        let input = bytes("a1 6161 83 01 d8184100 a1 616b 1a000003e8")
        let item = try CBORDecoder.encodedItem(in: input, at: [.key("a"), .index(2), .key("k")])
        #expect(item.map(Array.init) == bytes("1a000003e8"))
        let tagged = try CBORDecoder.encodedItem(in: input, at: [.key("a"), .index(1)])
        #expect(tagged.map(Array.init) == bytes("d8184100"))
        #expect(try CBORDecoder.encodedItem(in: input, at: [.key("b")]) == nil)
        #expect(try CBORDecoder.encodedItem(in: input, at: [.key("a"), .index(3)]) == nil)
        let indefinite = bytes("9f 01 02 ff")
        #expect(try CBORDecoder.encodedItem(in: indefinite, at: [.index(1)]).map(Array.init) == [0x02])
    }

    @Test func descriptionsHideValues() throws {
        let value: CBORValue = ["family_name": "Mustermann", "portrait": .byteString([1, 2, 3])]
        #expect(value.description == "map(2)")
        #expect(!"\(value)".contains("Mustermann"))
        #expect(CBORError(.truncated, at: 7, "x").description == "CBOR truncated at offset 7: x")
    }
}
