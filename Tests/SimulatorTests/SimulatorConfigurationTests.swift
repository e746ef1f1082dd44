import Foundation
import ProximaCardEmulator
import ProximaCore
import ProximaTestSupport
import SimulatorTransport
import Testing

@Suite struct SimulatorConfigurationTests {
    let path = "plugins[0].config"

    func parse(_ text: String, baseDirectory: String = PackageFiles.configDirectory) throws -> SimulatorConfiguration {
        try SimulatorConfiguration(json: JSONValue.parse(text), path: path, baseDirectory: baseDirectory)
    }

    func parseError(_ text: String, baseDirectory: String = PackageFiles.configDirectory) throws -> ProximaError {
        do {
            _ = try parse(text, baseDirectory: baseDirectory)
        } catch let error as ProximaError {
            return error
        }
        Issue.record("configuration parsed: \(text)")
        return ProximaError(.invalidArgument)
    }

    @Test func defaultsApply() throws {
        let configuration = try parse(
            #"{ "readers": [ { "id": "lane-1", "cards": ["cards/identity-visa-like.json"] } ] }"#
        )
        #expect(configuration.bitRateKbps == 106)
        #expect(configuration.airTime)
        #expect(configuration.cardProcessing == .milliseconds(1))
        let reader = try #require(configuration.readers.first)
        #expect(reader.id == "lane-1")
        #expect(reader.name == "lane-1")
        #expect(reader.extendedLength)
        #expect(reader.repeats)
        #expect(
            reader.arrival == SimulatorConfiguration.Arrival(pattern: .fixed, interval: .milliseconds(500), seed: 1)
        )
        #expect(reader.faults == SimulatorConfiguration.Faults())
        #expect(reader.faults.isEmpty)
        #expect(reader.cards.map(\.name) == ["test visa-like identity card"])
    }

    @Test func everyMemberIsRead() throws {
        let configuration = try parse(
            """
            { "bitRateKbps": 848, "airTime": false, "cardProcessingMs": 2.5,
              "readers": [
                { "id": "a", "name": "Reader A", "extendedLength": false, "repeat": false,
                  "cards": ["cards/identity-visa-like.json", "\(PackageFiles.configDirectory)/cards/identity-no-ppse.json"],
                  "arrival": { "pattern": "poisson", "intervalMs": 250, "seed": -7 },
                  "faults": { "removeAfterExchanges": 3, "muteAfterExchanges": 4, "muteTimeoutMs": 20,
                              "corruptResponseAt": 2, "vanishAfterExchanges": 0, "reappearAfterMs": 0 } },
                { "id": "b", "cards": ["cards/identity-multi-aid.json"], "arrival": { "pattern": "immediate" } }
              ] }
            """
        )
        #expect(configuration.bitRateKbps == 848)
        #expect(!configuration.airTime)
        #expect(configuration.cardProcessing == .microseconds(2500))
        #expect(configuration.readers.count == 2)
        let a = configuration.readers[0]
        #expect(a.name == "Reader A")
        #expect(!a.extendedLength)
        #expect(!a.repeats)
        #expect(a.cards.map(\.name) == ["test visa-like identity card", "test card without PPSE"])
        #expect(a.arrival == .init(pattern: .poisson, interval: .milliseconds(250), seed: UInt64(bitPattern: -7)))
        #expect(
            a.faults
                == .init(
                    removeAfterExchanges: 3,
                    muteAfterExchanges: 4,
                    muteTimeout: .milliseconds(20),
                    corruptResponseAt: 2,
                    vanishAfterExchanges: 0,
                    reappearAfter: .zero
                )
        )
        #expect(configuration.readers[1].arrival.pattern == .immediate)
        #expect(configuration.readers[1].arrival.interval == .milliseconds(500))
    }

    /// A configuration whose one reader has the members `extra` besides a valid id and card.
    static func reader(_ extra: String) -> String {
        #"{ "readers": [ { "id": "a", "cards": ["cards/identity-no-ppse.json"], "# + extra + " } ] }"
    }

    /// A configuration with a valid reader `a`, then `second`.
    static func readers(_ second: String) -> String {
        #"{ "readers": [ { "id": "a", "cards": ["cards/identity-no-ppse.json"] }, "# + second + " ] }"
    }

    @Test(arguments: [
        (#"{ "bitRateKbps": 100, "readers": [] }"#, "plugins[0].config.bitRateKbps:"),
        (#"{ "bitRateKbps": 300, "readers": [] }"#, "plugins[0].config.bitRateKbps:"),
        (#"{ "cardProcessingMs": 20000, "readers": [] }"#, "plugins[0].config.cardProcessingMs:"),
        (#"{ "airTime": "yes", "readers": [] }"#, "plugins[0].config.airTime:"),
        (#"{ "readers": [] }"#, "plugins[0].config.readers:"),
        (#"{ }"#, "plugins[0].config: missing required member \"readers\""),
        (#"{ "reader": [] }"#, "plugins[0].config: missing required member \"readers\""),
        (#"{ "readers": [ { "id": "a", "cards": [] } ] }"#, "plugins[0].config.readers[0].cards:"),
        (
            #"{ "readers": [ { "id": "", "cards": ["cards/identity-no-ppse.json"] } ] }"#,
            "plugins[0].config.readers[0].id:"
        ),
        (#"{ "readers": [ { "id": "a", "cards": [7] } ] }"#, "plugins[0].config.readers[0].cards[0]:"),
        (
            readers(#"{ "id": "b", "cards": ["cards/identity-no-ppse.json"], "speed": 1 }"#),
            "plugins[0].config.readers[1].speed: unknown member"
        ),
        (
            readers(#"{ "id": "a", "cards": ["cards/identity-no-ppse.json"] }"#),
            "plugins[0].config.readers[1].id:"
        ),
        (
            reader(#""arrival": { "pattern": "burst" }"#),
            "plugins[0].config.readers[0].arrival.pattern:"
        ),
        (
            reader(#""arrival": { "intervalMs": 3600001 }"#),
            "plugins[0].config.readers[0].arrival.intervalMs:"
        ),
        (
            reader(#""arrival": { "intervalMs": 1.5 }"#),
            "plugins[0].config.readers[0].arrival.intervalMs:"
        ),
        (
            reader(#""faults": { "muteTimeoutMs": 0 }"#),
            "plugins[0].config.readers[0].faults.muteTimeoutMs:"
        ),
        (
            reader(#""faults": { "corruptResponseAt": 0 }"#),
            "plugins[0].config.readers[0].faults.corruptResponseAt:"
        ),
        (
            reader(#""faults": { "removeAfterExchanges": -1 }"#),
            "plugins[0].config.readers[0].faults.removeAfterExchanges:"
        ),
        (
            reader(#""faults": { "removeAfter": 1 }"#),
            "plugins[0].config.readers[0].faults.removeAfter: unknown member"
        ),
    ])
    func invalidConfigurationNamesThePath(text: String, expectedPrefix: String) throws {
        let error = try parseError(text)
        #expect(error.code == .invalidManifest)
        #expect(error.pathAndReason.hasPrefix(expectedPrefix), "\(error.pathAndReason)")
    }

    @Test func missingCardFileIsReportedAtItsEntry() throws {
        let error = try parseError(
            """
            { "readers": [ { "id": "a", "cards": ["cards/identity-no-ppse.json", "cards/no-such-card.json"] } ] }
            """
        )
        #expect(error.code == .invalidManifest)
        #expect(
            error.pathAndReason.hasPrefix(
                "plugins[0].config.readers[0].cards[1]: card profile \"cards/no-such-card.json\""
            )
        )
        #expect(error.reason.contains("cannot read"))
    }

    @Test func brokenCardFileCarriesTheLoadersReason() throws {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("proxima-simulator-tests-\(UInt64.random(in: 0...UInt64.max))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let card = """
            { "profile": "scripted", "name": "test", "uid": "01020304",
              "exchanges": [ { "command": "00A4040000", "response": "XYZ" } ] }
            """
        try card.write(to: directory.appendingPathComponent("bad-card.json"), atomically: true, encoding: .utf8)
        let error = try parseError(
            #"{ "readers": [ { "id": "a", "cards": ["bad-card.json"] } ] }"#,
            baseDirectory: directory.path
        )
        #expect(error.code == .invalidManifest)
        #expect(error.jsonPath == "plugins[0].config.readers[0].cards[0]")
        #expect(error.reason.contains("bad-card.json: exchanges[0].response:"))
    }

    @Test func declaredReadersFollowTheConfiguration() throws {
        let configuration = try parse(
            """
            { "readers": [
                { "id": "a", "name": "Reader A", "extendedLength": false, "cards": ["cards/identity-no-ppse.json"] },
                { "id": "b", "cards": ["cards/identity-no-ppse.json"] } ] }
            """
        )
        let transport = SimulatorTransport(id: "sim", configuration: configuration)
        #expect(
            transport.declaredReaders == [
                ReaderInfo(id: "a", name: "Reader A", transport: "sim", supportsExtendedLength: false),
                ReaderInfo(id: "b", name: "b", transport: "sim", supportsExtendedLength: true),
            ]
        )
    }
}
