import ProximaCardEmulator
import ProximaCore
import Testing

/// SELECT PPSE (`2PAY.SYS.DDF01`), EMV Book B §3.
let selectPPSE: [UInt8] = [0x00, 0xA4, 0x04, 0x00, 0x0E] + Array("2PAY.SYS.DDF01".utf8) + [0x00]

@Suite struct ScriptedCardMatchingTests {
    let card = ScriptedCard(
        name: "test card",
        uid: [0x08, 0x01, 0x02, 0x03],
        exchanges: [
            .init(command: selectPPSE, match: .exact, response: [0x6F, 0x00, 0x90, 0x00]),
            .init(command: [0x00, 0xA4, 0x04, 0x00], match: .prefix, response: [0x6A, 0x82]),
            // Never reached for SELECT PPSE: the first matching exchange wins.
            .init(command: [0x00, 0xA4], match: .prefix, response: [0x6A, 0x81]),
            .init(
                command: [0x80, 0xCA, 0x9F, 0x17, 0x00],
                match: .exact,
                response: [0x9F, 0x17, 0x01, 0x03, 0x90, 0x00]
            ),
        ],
        otherwise: [0x6E, 0x00]
    )

    @Test func exactMatchAnswersItsResponse() {
        var card = card
        #expect(card.respond(to: selectPPSE) == [0x6F, 0x00, 0x90, 0x00])
        #expect(card.respond(to: [0x80, 0xCA, 0x9F, 0x17, 0x00]) == [0x9F, 0x17, 0x01, 0x03, 0x90, 0x00])
    }

    @Test func exactMatchDoesNotAcceptLongerCommands() {
        var card = card
        // Same header and data as GET DATA but case 4 with one data byte: not the exact command.
        #expect(card.respond(to: [0x80, 0xCA, 0x9F, 0x17, 0x01, 0xAA]) == [0x6E, 0x00])
    }

    @Test func prefixMatchCoversOtherSelects() {
        var card = card
        let selectAID: [UInt8] = [0x00, 0xA4, 0x04, 0x00, 0x07, 0xA0, 0x00, 0x00, 0x00, 0x03, 0x10, 0x10, 0x00]
        #expect(card.respond(to: selectAID) == [0x6A, 0x82])
        // SELECT by file id (P1 = 00) only matches the third, shorter prefix.
        #expect(card.respond(to: [0x00, 0xA4, 0x00, 0x0C, 0x02, 0x3F, 0x00]) == [0x6A, 0x81])
    }

    @Test func unmatchedCommandGetsOtherwise() {
        var card = card
        #expect(card.respond(to: [0x00, 0xB2, 0x01, 0x0C, 0x00]) == [0x6E, 0x00])
    }

    @Test(
        arguments: [
            [],
            [0x00],
            [0x00, 0xA4, 0x04],
            [0x00, 0xA4, 0x04, 0x00, 0x05, 0x01],  // Lc 5, one data byte
            [0x00, 0xA4, 0x04, 0x00, 0x00, 0x01],  // extended marker, truncated
            [0x00, 0xA4, 0x04, 0x00, 0x00, 0x00, 0x00, 0x01],  // extended Lc 0
        ] as [[UInt8]]
    )
    func malformedCommandGetsWrongLength(command: [UInt8]) {
        var card = card
        #expect(card.respond(to: command) == [0x67, 0x00])
    }

    @Test func defaultOtherwiseIsInstructionNotSupported() {
        var card = ScriptedCard(name: "test", uid: [1, 2, 3, 4], exchanges: [])
        #expect(card.respond(to: [0x00, 0x84, 0x00, 0x00, 0x08]) == [0x6D, 0x00])
        #expect(card.atr == [0x3B, 0x80, 0x80, 0x01, 0x01])
        #expect(card.technology == .iso14443A)
    }
}

@Suite struct CardProfileParsingTests {
    /// A valid scripted profile whose members the tests then break one at a time.
    func profile(
        exchanges: JSONValue? = nil,
        extra: [(key: String, value: JSONValue)] = [],
        profile: JSONValue = .string("scripted")
    ) -> JSONValue {
        let defaultExchanges: JSONValue = .array([
            .object([("command", .string(selectPPSE.hexString)), ("response", .string("6F00 9000"))]),
            .object([("command", .string("00A40400")), ("match", .string("prefix")), ("response", .string("6A82"))]),
        ])
        return .object(
            [
                ("profile", profile),
                ("name", .string("test card")),
                ("uid", .string("08:11:22:33")),
                ("ats", .string("0578807002")),
                ("exchanges", exchanges ?? defaultExchanges),
            ] + extra
        )
    }

    func parseError(_ json: JSONValue) -> ProximaError? {
        do {
            _ = try CardProfiles.parse(json, source: "broken-card.json")
            return nil
        } catch let error as ProximaError {
            return error
        } catch {
            return nil
        }
    }

    @Test func validProfileBuildsTheCard() throws {
        var card = try CardProfiles.parse(profile(), source: "test.json")
        #expect(card.name == "test card")
        #expect(card.uid == [0x08, 0x11, 0x22, 0x33])
        #expect(card.ats == [0x05, 0x78, 0x80, 0x70, 0x02])
        #expect(card.atr == ScriptedCard.contactlessPseudoATR)
        #expect(card.technology == .iso14443A)
        #expect(card.respond(to: selectPPSE) == [0x6F, 0x00, 0x90, 0x00])
        #expect(card.respond(to: [0x00, 0xA4, 0x04, 0x00, 0x02, 0xA0, 0x00, 0x00]) == [0x6A, 0x82])
        #expect(card.respond(to: [0x80, 0xA8, 0x00, 0x00, 0x02, 0x83, 0x00, 0x00]) == [0x6D, 0x00])
    }

    @Test func badHexNamesTheExchangeAndTheFile() throws {
        let json = profile(
            exchanges: .array([
                .object([("command", .string("00A4040000")), ("response", .string("9000"))]),
                .object([("command", .string("00B2010C00")), ("response", .string("70 0G 90 00"))]),
            ])
        )
        let error = try #require(parseError(json))
        #expect(error.code == .malformedData)
        #expect(error.reason.hasPrefix("broken-card.json: exchanges[1].response:"))
        #expect(error.reason.contains("hex"))
    }

    @Test func oddHexDigitCountIsRejected() throws {
        let error = try #require(parseError(profile(extra: [("otherwise", .string("6D0"))])))
        #expect(error.reason.hasPrefix("broken-card.json: otherwise:"))
    }

    @Test func responseWithoutStatusWordIsRejected() throws {
        let json = profile(
            exchanges: .array([.object([("command", .string("00A4040000")), ("response", .string("90"))])])
        )
        let error = try #require(parseError(json))
        #expect(error.reason.hasPrefix("broken-card.json: exchanges[0].response: 1 bytes"))
    }

    @Test func exactCommandMustBeAnAPDU() throws {
        let json = profile(
            exchanges: .array([.object([("command", .string("00A4040005AA")), ("response", .string("9000"))])])
        )
        let error = try #require(parseError(json))
        #expect(error.reason.hasPrefix("broken-card.json: exchanges[0].command:"))
    }

    @Test func unknownProfileListsTheKnownOnes() throws {
        let error = try #require(parseError(profile(profile: .string("emv-quantum"))))
        #expect(error.code == .malformedData)
        #expect(error.reason.hasPrefix("broken-card.json: profile:"))
        #expect(error.reason.contains("\"emv-quantum\""))
        #expect(error.reason.contains("\"scripted\""))
    }

    @Test func missingProfileListsTheKnownOnes() throws {
        let error = try #require(parseError(.object([("name", .string("x"))])))
        #expect(error.reason.contains("profile"))
        #expect(error.reason.contains("\"scripted\""))
    }

    @Test func unknownMemberIsRejectedWithItsPath() throws {
        let top = try #require(parseError(profile(extra: [("atrr", .string("3B00"))])))
        #expect(top.reason.hasPrefix("broken-card.json: atrr: unknown member"))
        let nested = profile(
            exchanges: .array([
                .object([("command", .string("00A4040000")), ("response", .string("9000")), ("delayMs", .integer(5))])
            ])
        )
        let error = try #require(parseError(nested))
        #expect(error.reason.hasPrefix("broken-card.json: exchanges[0].delayMs: unknown member"))
    }

    @Test func unknownMatchAndTechnologyAreRejected() throws {
        let match = profile(
            exchanges: .array([
                .object([("command", .string("00A4")), ("match", .string("regex")), ("response", .string("9000"))])
            ])
        )
        #expect(try #require(parseError(match)).reason.hasPrefix("broken-card.json: exchanges[0].match:"))
        let technology = profile(extra: [("technology", .string("nfcV"))])
        #expect(try #require(parseError(technology)).reason.hasPrefix("broken-card.json: technology:"))
    }

    @Test func wrongTypeIsNamed() throws {
        let error = try #require(parseError(profile(exchanges: .object([]))))
        #expect(error.reason == "broken-card.json: exchanges: expected an array, found object")
    }

    @Test func missingFileNamesThePath() throws {
        do {
            _ = try CardProfiles.load(contentsOf: "/nonexistent/proxima/test-card.json")
            Issue.record("loading a missing file succeeded")
        } catch let error as ProximaError {
            #expect(error.code == .malformedData)
            #expect(error.reason.hasPrefix("/nonexistent/proxima/test-card.json: cannot read"))
        }
    }
}
