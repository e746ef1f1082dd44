import ProximaCore
import ProximaTestSupport
import Testing

/// One RFC 8949 Appendix A example.
///
/// Source: RFC 8949 Appendix A (Copyright (c) 2020 IETF Trust and the persons identified as the document authors,
/// Simplified BSD License), in the machine-readable form of github.com/cbor/test-vectors `appendix_a.json`
/// (commit 3f5ec87a0f4ee8a5d22d816e8d0d1eda88e1ee93). The expected notation is upstream's `diagnostic`, or its
/// `decoded` JSON written in diagnostic notation; indefinite-length items are written as the definite items they
/// decode to, and the two bignums as their tags, because the decoder keeps tags 2 and 3 as tags. `roundTrips` is
/// upstream's flag (whether the bytes are the preferred encoding), false also for the two indefinite strings.
/// Upstream still lists `f818` as simple(24), from RFC 7049; RFC 8949 §3.3 made two-byte simple values below 32
/// not well-formed (and dropped the example), so the decoder must refuse it.
struct AppendixAVector: Sendable, CustomTestStringConvertible {
    let hex: String
    let roundTrips: Bool
    let diagnostic: String
    init(_ hex: String, roundTrips: Bool, _ diagnostic: String) {
        self.hex = hex
        self.roundTrips = roundTrips
        self.diagnostic = diagnostic
    }
    var testDescription: String { hex }
}

let appendixA: [AppendixAVector] = [
    AppendixAVector("00", roundTrips: true, "0"),
    AppendixAVector("01", roundTrips: true, "1"),
    AppendixAVector("0a", roundTrips: true, "10"),
    AppendixAVector("17", roundTrips: true, "23"),
    AppendixAVector("1818", roundTrips: true, "24"),
    AppendixAVector("1819", roundTrips: true, "25"),
    AppendixAVector("1864", roundTrips: true, "100"),
    AppendixAVector("1903e8", roundTrips: true, "1000"),
    AppendixAVector("1a000f4240", roundTrips: true, "1000000"),
    AppendixAVector("1b000000e8d4a51000", roundTrips: true, "1000000000000"),
    AppendixAVector("1bffffffffffffffff", roundTrips: true, "18446744073709551615"),
    AppendixAVector("c249010000000000000000", roundTrips: true, "2(h'010000000000000000')"),
    AppendixAVector("3bffffffffffffffff", roundTrips: true, "-18446744073709551616"),
    AppendixAVector("c349010000000000000000", roundTrips: true, "3(h'010000000000000000')"),
    AppendixAVector("20", roundTrips: true, "-1"),
    AppendixAVector("29", roundTrips: true, "-10"),
    AppendixAVector("3863", roundTrips: true, "-100"),
    AppendixAVector("3903e7", roundTrips: true, "-1000"),
    AppendixAVector("f90000", roundTrips: true, "0.0"),
    AppendixAVector("f98000", roundTrips: true, "-0.0"),
    AppendixAVector("f93c00", roundTrips: true, "1.0"),
    AppendixAVector("fb3ff199999999999a", roundTrips: true, "1.1"),
    AppendixAVector("f93e00", roundTrips: true, "1.5"),
    AppendixAVector("f97bff", roundTrips: true, "65504.0"),
    AppendixAVector("fa47c35000", roundTrips: true, "100000.0"),
    AppendixAVector("fa7f7fffff", roundTrips: true, "3.4028234663852886e+38"),
    AppendixAVector("fb7e37e43c8800759c", roundTrips: true, "1e+300"),
    AppendixAVector("f90001", roundTrips: true, "5.960464477539063e-08"),
    AppendixAVector("f90400", roundTrips: true, "6.103515625e-05"),
    AppendixAVector("f9c400", roundTrips: true, "-4.0"),
    AppendixAVector("fbc010666666666666", roundTrips: true, "-4.1"),
    AppendixAVector("f97c00", roundTrips: true, "Infinity"),
    AppendixAVector("f97e00", roundTrips: true, "NaN"),
    AppendixAVector("f9fc00", roundTrips: true, "-Infinity"),
    AppendixAVector("fa7f800000", roundTrips: false, "Infinity"),
    AppendixAVector("fa7fc00000", roundTrips: false, "NaN"),
    AppendixAVector("faff800000", roundTrips: false, "-Infinity"),
    AppendixAVector("fb7ff0000000000000", roundTrips: false, "Infinity"),
    AppendixAVector("fb7ff8000000000000", roundTrips: false, "NaN"),
    AppendixAVector("fbfff0000000000000", roundTrips: false, "-Infinity"),
    AppendixAVector("f4", roundTrips: true, "false"),
    AppendixAVector("f5", roundTrips: true, "true"),
    AppendixAVector("f6", roundTrips: true, "null"),
    AppendixAVector("f7", roundTrips: true, "undefined"),
    AppendixAVector("f0", roundTrips: true, "simple(16)"),
    AppendixAVector("f818", roundTrips: true, "simple(24)"),
    AppendixAVector("f8ff", roundTrips: true, "simple(255)"),
    AppendixAVector("c074323031332d30332d32315432303a30343a30305a", roundTrips: true, "0(\"2013-03-21T20:04:00Z\")"),
    AppendixAVector("c11a514b67b0", roundTrips: true, "1(1363896240)"),
    AppendixAVector("c1fb41d452d9ec200000", roundTrips: true, "1(1363896240.5)"),
    AppendixAVector("d74401020304", roundTrips: true, "23(h'01020304')"),
    AppendixAVector("d818456449455446", roundTrips: true, "24(h'6449455446')"),
    AppendixAVector(
        "d82076687474703a2f2f7777772e6578616d706c652e636f6d",
        roundTrips: true,
        "32(\"http://www.example.com\")"
    ),
    AppendixAVector("40", roundTrips: true, "h''"),
    AppendixAVector("4401020304", roundTrips: true, "h'01020304'"),
    AppendixAVector("60", roundTrips: true, "\"\""),
    AppendixAVector("6161", roundTrips: true, "\"a\""),
    AppendixAVector("6449455446", roundTrips: true, "\"IETF\""),
    AppendixAVector("62225c", roundTrips: true, "\"\\\"\\\\\""),
    AppendixAVector("62c3bc", roundTrips: true, "\"ü\""),
    AppendixAVector("63e6b0b4", roundTrips: true, "\"水\""),
    AppendixAVector("64f0908591", roundTrips: true, "\"𐅑\""),
    AppendixAVector("80", roundTrips: true, "[]"),
    AppendixAVector("83010203", roundTrips: true, "[1, 2, 3]"),
    AppendixAVector("8301820203820405", roundTrips: true, "[1, [2, 3], [4, 5]]"),
    AppendixAVector(
        "98190102030405060708090a0b0c0d0e0f101112131415161718181819",
        roundTrips: true,
        "[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25]"
    ),
    AppendixAVector("a0", roundTrips: true, "{}"),
    AppendixAVector("a201020304", roundTrips: true, "{1: 2, 3: 4}"),
    AppendixAVector("a26161016162820203", roundTrips: true, "{\"a\": 1, \"b\": [2, 3]}"),
    AppendixAVector("826161a161626163", roundTrips: true, "[\"a\", {\"b\": \"c\"}]"),
    AppendixAVector(
        "a56161614161626142616361436164614461656145",
        roundTrips: true,
        "{\"a\": \"A\", \"b\": \"B\", \"c\": \"C\", \"d\": \"D\", \"e\": \"E\"}"
    ),
    AppendixAVector("5f42010243030405ff", roundTrips: false, "h'0102030405'"),
    AppendixAVector("7f657374726561646d696e67ff", roundTrips: false, "\"streaming\""),
    AppendixAVector("9fff", roundTrips: false, "[]"),
    AppendixAVector("9f018202039f0405ffff", roundTrips: false, "[1, [2, 3], [4, 5]]"),
    AppendixAVector("9f01820203820405ff", roundTrips: false, "[1, [2, 3], [4, 5]]"),
    AppendixAVector("83018202039f0405ff", roundTrips: false, "[1, [2, 3], [4, 5]]"),
    AppendixAVector("83019f0203ff820405", roundTrips: false, "[1, [2, 3], [4, 5]]"),
    AppendixAVector(
        "9f0102030405060708090a0b0c0d0e0f101112131415161718181819ff",
        roundTrips: false,
        "[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25]"
    ),
    AppendixAVector("bf61610161629f0203ffff", roundTrips: false, "{\"a\": 1, \"b\": [2, 3]}"),
    AppendixAVector("826161bf61626163ff", roundTrips: false, "[\"a\", {\"b\": \"c\"}]"),
    AppendixAVector("bf6346756ef563416d7421ff", roundTrips: false, "{\"Fun\": true, \"Amt\": -2}"),
]

@Suite("CBOR: RFC 8949 Appendix A")
struct CBORAppendixATests {
    @Test("every example decodes to its value and re-encodes", arguments: appendixA)
    func example(_ vector: AppendixAVector) throws {
        let input = bytes(vector.hex)
        if vector.hex == "f818" {
            #expect(throws: CBORError(.reservedEncoding, at: 0, "")) { try CBORDecoder.decode(input) }
            return
        }
        let value = try CBORDecoder.decode(input)
        #expect(value.diagnostic == vector.diagnostic)
        let encoded = CBOREncoder.encode(value)
        if vector.roundTrips {
            #expect(encoded == input, "\(encoded.hexString) is not the preferred encoding")
        } else {
            #expect(encoded != input)
            // The deterministic form is stable, and decodes to the same value (maps up to the sorted key order).
            let again = try CBORDecoder.decode(encoded)
            #expect(again.encoded == encoded)
            if !vector.diagnostic.contains("{") { #expect(again.diagnostic == vector.diagnostic) }
        }
    }

    @Test func theTableHoldsAllEightyTwoExamples() {
        #expect(appendixA.count == 82)
        #expect(appendixA.filter(\.roundTrips).count == 65)
    }
}
