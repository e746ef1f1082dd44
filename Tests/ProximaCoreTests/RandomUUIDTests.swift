import Foundation
import ProximaCore
import Testing

@Suite("RandomUUID: version 4 UUIDs in lowercase text")
struct RandomUUIDTests {
    @Test("the text is a version 4, variant 10 UUID that Foundation parses to the same value")
    func shape() throws {
        for _ in 0..<1_000 {
            let text = RandomUUID.lowercasedString()
            #expect(text.count == 36)
            let parsed = try #require(UUID(uuidString: text), "\(text)")
            #expect(parsed.uuidString.lowercased() == text)
            let characters = Array(text)
            #expect([characters[8], characters[13], characters[18], characters[23]] == ["-", "-", "-", "-"])
            #expect(characters[14] == "4")
            #expect("89ab".contains(characters[19]))
            #expect(text == text.lowercased())
        }
    }

    /// SplitMix64 seeded with 0 gives 0xE220A8397B1DCDAF then 0x6E789E6AA1B965F4 (its reference outputs); their
    /// little-endian bytes, version nibble 4 and variant 10 set, computed independently in Python.
    @Test("a seeded generator gives the bytes in order, with the version and variant bits set")
    func knownAnswer() {
        var generator = SplitMix64(seed: 0)
        #expect(RandomUUID.lowercasedString(using: &generator) == "afcd1d7b-39a8-40e2-b465-b9a16a9e786e")
    }

    @Test("a thousand identifiers are distinct")
    func distinct() {
        #expect(Set((0..<1_000).map { _ in RandomUUID.lowercasedString() }).count == 1_000)
    }
}
