import ProximaCore
import ProximaTestSupport
import Testing

@Suite("JSON writing")
struct JSONWriterTests {
    /// Strings that need every escape the writer knows, and some that need none.
    static let awkwardStrings = [
        "", "plain", "quote \" backslash \\ slash /", "line\nreturn\rtab\t", "\u{0}\u{1}\u{1F}\u{7F}",
        "é ü 日本 🂡", "\u{2028}\u{2029}", String(repeating: "9F02", count: 40),
    ]

    @Test("values written compactly, escapes as RFC 8259 asks, keys in order; Python's json reads the same values")
    func writesWhatPythonReads() throws {
        let document = JSONValue.object([
            ("strings", .array(Self.awkwardStrings.map { .string($0) })),
            ("integers", .array([0, 7, -7, 1_234_567_890, Int64.max, Int64.min].map { .integer($0) })),
            ("number", .number(2.5)),
            ("flags", .array([.bool(true), .bool(false), .null])),
            ("nested", .object([("z", .object([])), ("a", .array([]))])),
        ])
        let text = document.jsonText
        #expect(text.hasPrefix(#"{"strings":["","plain","quote \" backslash \\ slash /","line\nreturn\rtab\t","#))
        // Control characters as \u00xx (lower-case digits); DEL and non-ASCII as they are.
        #expect(text.contains("\"\\u0000\\u0001\\u001f\u{7F}\""))
        #expect(text.contains(#""integers":[0,7,-7,1234567890,9223372036854775807,-9223372036854775808]"#))
        #expect(text.hasSuffix(#""flags":[true,false,null],"nested":{"z":{},"a":[]}}"#))
        #expect(Array(text.utf8) == document.jsonBytes)
        #expect(try JSONValue.parse(text) == document)
        guard Python.isAvailable else { return }
        // An independent reader: Python's json gives back the same strings and integers.
        let echoed = try Python.run(
            "import json,sys; d=json.loads(sys.argv[1]); print(json.dumps([d['strings'], d['integers']]))",
            arguments: [text]
        )
        let expected = JSONValue.array([
            .array(Self.awkwardStrings.map { .string($0) }),
            .array([0, 7, -7, 1_234_567_890, Int64.max, Int64.min].map { .integer($0) }),
        ])
        #expect(try JSONValue.parse(echoed) == expected)
    }

    @Test("members written one by one: commas only between members, hex keys and values upper case")
    func writerByMembers() throws {
        var json = JSONWriter()
        json.beginObject()
        json.key("v")
        json.integer(2)
        json.key("emv")
        json.beginObject()
        json.hexKey([0x9F, 0x02])
        json.hexString([0x00, 0x00, 0x00, 0x00, 0x29, 0x99])
        json.hexKey([0x5F, 0x2A])
        json.hexString([0x08, 0x40])
        json.endObject()
        json.key("list")
        json.beginArray()
        json.string("a")
        json.beginObject()
        json.endObject()
        json.null()
        json.endArray()
        json.endObject()
        let text = String(decoding: json.bytes, as: UTF8.self)
        #expect(text == #"{"v":2,"emv":{"9F02":"000000002999","5F2A":"0840"},"list":["a",{},null]}"#)
        #expect(try JSONValue.parse(text)["emv"]?["5F2A"] == .string("0840"))
    }

    @Test("hex of arrays, slices and other sequences agree, upper case, two digits a byte")
    func hexStrings() {
        let bytes = (0...255).map { UInt8($0) }
        let hex = bytes.hexString
        #expect(hex.count == 512)
        #expect(hex.hasPrefix("000102030405060708090A0B0C0D0E0F10"))
        #expect(hex.hasSuffix("FAFBFCFDFEFF"))
        #expect(bytes[16..<20].hexString == "10111213")
        #expect(bytes.reversed().prefix(2).hexString == "FFFE")
        #expect([UInt8]().hexString == "")
        var out = Array("x".utf8)
        out.appendHex([0xAB, 0x01])
        #expect(out == Array("xAB01".utf8))
    }
}
