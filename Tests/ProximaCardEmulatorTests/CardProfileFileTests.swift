import Foundation
import ProximaCardEmulator
import ProximaCore
import ProximaTestSupport
import Testing

func cardFiles() -> [String] {
    let names = (try? FileManager.default.contentsOfDirectory(atPath: PackageFiles.cardsDirectory)) ?? []
    return names.filter { $0.hasSuffix(".json") }.sorted()
}

/// BER-TLV with a definite length (EMV Book 3 Annex B), for building expected answers independently.
func tlv(_ tag: [UInt8], _ value: [UInt8]) -> [UInt8] {
    let length: [UInt8] = value.count < 0x80 ? [UInt8(value.count)] : [0x81, UInt8(value.count)]
    return tag + length + value
}

/// One directory entry of a PPSE FCI: `61 { 4F AID, 50 label, 87 priority }`.
func directoryEntry(aid: [UInt8], label: String, priority: UInt8) -> [UInt8] {
    tlv([0x61], tlv([0x4F], aid) + tlv([0x50], Array(label.utf8)) + tlv([0x87], [priority]))
}

/// `6F { 84 "2PAY.SYS.DDF01", A5 { BF0C { entries } } }` + 9000.
func ppseAnswer(_ entries: [UInt8]...) -> [UInt8] {
    tlv([0x6F], tlv([0x84], Array("2PAY.SYS.DDF01".utf8)) + tlv([0xA5], tlv([0xBF, 0x0C], entries.flatMap { $0 })))
        + [0x90, 0x00]
}

let visaAID: [UInt8] = [0xA0, 0x00, 0x00, 0x00, 0x03, 0x10, 0x10]
let mastercardAID: [UInt8] = [0xA0, 0x00, 0x00, 0x00, 0x04, 0x10, 0x10]
let maestroAID: [UInt8] = [0xA0, 0x00, 0x00, 0x00, 0x04, 0x30, 0x60]

@Suite struct CardProfileFileTests {
    @Test func configFolderHoldsTheIdentityCards() {
        let files = cardFiles()
        for expected in [
            "identity-visa-like.json", "identity-mastercard-like.json", "identity-multi-aid.json",
            "identity-no-ppse.json",
        ] {
            #expect(files.contains(expected), "missing \(expected) in \(PackageFiles.cardsDirectory)")
        }
    }

    @Test(arguments: cardFiles())
    func everyCardFileLoads(file: String) throws {
        let card = try CardProfiles.load(contentsOf: PackageFiles.cardsDirectory + "/" + file)
        #expect(card.name.lowercased().contains("test"))
        #expect(!card.uid.isEmpty)
        // Test cards carry no PAN: no track-2 equivalent (57) or PAN (5A) tag in any answer.
        let text = try String(contentsOfFile: PackageFiles.cardsDirectory + "/" + file, encoding: .utf8)
        #expect(!text.contains("5A08"))
        #expect(!text.contains("5713"))
    }

    func load(_ name: String) throws -> any VirtualCard {
        try CardProfiles.load(contentsOf: PackageFiles.cardsDirectory + "/" + name)
    }

    @Test func visaLikeCardAnswersPPSE() throws {
        var card = try load("identity-visa-like.json")
        let expected = ppseAnswer(directoryEntry(aid: visaAID, label: "TEST VISA", priority: 1))
        #expect(card.respond(to: selectPPSE) == expected)
        #expect(expected.prefix(2) == [0x6F, 0x2E])
        let selectAID: [UInt8] = [0x00, 0xA4, 0x04, 0x00, 0x07] + visaAID + [0x00]
        let fci = tlv(
            [0x6F],
            tlv([0x84], visaAID) + tlv([0xA5], tlv([0x50], Array("TEST VISA".utf8)) + tlv([0x87], [1]))
        )
        #expect(card.respond(to: selectAID) == fci + [0x90, 0x00])
    }

    @Test func mastercardLikeCardAnswersPPSE() throws {
        var card = try load("identity-mastercard-like.json")
        let expected = ppseAnswer(directoryEntry(aid: mastercardAID, label: "TEST MASTERCARD", priority: 1))
        #expect(card.respond(to: selectPPSE) == expected)
    }

    @Test func multiAIDCardListsBothApplicationsWithPriorities() throws {
        var card = try load("identity-multi-aid.json")
        let expected = ppseAnswer(
            directoryEntry(aid: mastercardAID, label: "TEST MASTERCARD", priority: 1),
            directoryEntry(aid: maestroAID, label: "TEST MAESTRO", priority: 2)
        )
        #expect(card.respond(to: selectPPSE) == expected)
        let unknownAID: [UInt8] = [0x00, 0xA4, 0x04, 0x00, 0x07, 0xA0, 0x00, 0x00, 0x00, 0x25, 0x01, 0x04, 0x00]
        #expect(card.respond(to: unknownAID) == [0x6A, 0x82])
    }

    @Test func cardWithoutPPSEAnswersFileNotFound() throws {
        var card = try load("identity-no-ppse.json")
        #expect(card.respond(to: selectPPSE) == [0x6A, 0x82])
        #expect(card.respond(to: [0x80, 0xA8, 0x00, 0x00, 0x02, 0x83, 0x00, 0x00]) == [0x6D, 0x00])
    }
}
