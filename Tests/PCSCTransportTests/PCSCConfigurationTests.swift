import ProximaCore
import ProximaTestSupport
import Testing

@testable import PCSCTransport

private func configuration(_ text: String) throws -> PCSCConfiguration {
    try PCSCConfiguration(json: JSONValue.parse(text), path: "plugins[2].config")
}

private func reason(_ text: String) -> String? {
    do {
        _ = try configuration(text)
        return nil
    } catch let error as ProximaError {
        #expect(error.code == .invalidManifest)
        return error.pathAndReason
    } catch {
        Issue.record("unexpected error \(error)")
        return nil
    }
}

@Suite("PCSCConfiguration: the plugin's config object")
struct PCSCConfigurationTests {
    @Test("an empty object gives the defaults")
    func defaults() throws {
        let parsed = try configuration("{}")
        #expect(parsed == PCSCConfiguration())
        #expect(parsed.readerNames.isEmpty)
        #expect(!parsed.exclusive)
        #expect(parsed.readerIDPrefix == nil)
        #expect(parsed.extendedLength == .auto)
        #expect(parsed.selects(readerNamed: "ACS ACR122U PICC Interface 00 00"))
    }

    @Test("every member")
    func everyMember() throws {
        let parsed = try configuration(
            """
            {"readerNames": ["Virtual PCD 00 0?", "ACS *"], "exclusive": true, "readerIDPrefix": "",
             "extendedLength": "never", "comment": "lane 3"}
            """
        )
        #expect(parsed.readerNames == ["Virtual PCD 00 0?", "ACS *"])
        #expect(parsed.exclusive)
        #expect(parsed.readerIDPrefix == "")
        #expect(parsed.extendedLength == .never)
        #expect(parsed.selects(readerNamed: "Virtual PCD 00 01"))
        #expect(parsed.selects(readerNamed: "ACS ACR1252 1S CL Reader PICC 00 00"))
        #expect(!parsed.selects(readerNamed: "Virtual PCD B 00 00"))
    }

    @Test(
        "errors name the JSON path and what was expected",
        arguments: [
            ("[]", "plugins[2].config: expected an object, found array"),
            (#"{"readerName": ["x"]}"#, #"plugins[2].config.readerName: unknown member "readerName""#),
            (
                #"{"readerNames": "Virtual PCD 00 00"}"#,
                "plugins[2].config.readerNames: expected an array, found string"
            ),
            (#"{"readerNames": ["a", 7]}"#, "plugins[2].config.readerNames[1]: expected a string, found integer"),
            (#"{"readerNames": ["a", ""]}"#, "plugins[2].config.readerNames[1]: expected a non-empty string"),
            (#"{"readerNames": []}"#, "plugins[2].config.readerNames: expected at least one reader name pattern"),
            (#"{"exclusive": "yes"}"#, "plugins[2].config.exclusive: expected a boolean (true or false), found string"),
            (#"{"readerIDPrefix": 3}"#, "plugins[2].config.readerIDPrefix: expected a string, found integer"),
            (#"{"extendedLength": "sometimes"}"#, #"plugins[2].config.extendedLength: "sometimes" is not one of"#),
            (#"{"extendedLength": true}"#, "plugins[2].config.extendedLength: expected a string, found boolean"),
        ]
    )
    func errors(json: String, expected: String) {
        let message = reason(json)
        #expect(message?.hasPrefix(expected) == true, "got \(message ?? "no error")")
    }

    @Test(
        "reader name globs",
        arguments: [
            ("Virtual PCD 00 00", "Virtual PCD 00 00", true),
            ("Virtual PCD 00 0?", "Virtual PCD 00 01", true),
            ("Virtual PCD 00 0?", "Virtual PCD 00 1", false),
            ("Virtual PCD 00 0?", "Virtual PCD 00 012", false),
            ("*PICC*", "ACS ACR1252 1S CL Reader PICC 00 00", true),
            ("*PICC*", "ACS ACR1252 1S CL Reader SAM 00 01", false),
            ("*", "", true),
            ("", "", true),
            ("", "x", false),
            ("a**b", "ab", true),
            ("a*b*c", "aXbYbZc", true),
            ("a*b*c", "aXbYbZ", false),
            (#"Reader \*"#, "Reader *", true),
            (#"Reader \*"#, "Reader 1", false),
            (#"Reader \?"#, "Reader ?", true),
            (#"trailing\"#, #"trailing\"#, true),
            ("Lecteur é ?", "Lecteur é 1", true),
        ]
    )
    func globs(pattern: String, name: String, matches: Bool) {
        #expect(ReaderNamePattern.matches(name, pattern: pattern) == matches)
    }

    @Test("a pathological glob stays linear-ish")
    func pathologicalGlob() async throws {
        let name = String(repeating: "a", count: 2_000)
        let pattern = String(repeating: "*a", count: 30) + "b"
        // A backtracking matcher would not finish in a lifetime; the limit only turns that hang into a failure.
        let matching = Task { ReaderNamePattern.matches(name, pattern: pattern) }
        #expect(
            try await outcome(of: matching, "matching 30 stars against 2000 characters", within: .seconds(30)).get()
                == false
        )
    }
}
