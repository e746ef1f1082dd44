import Foundation
import Proxima
import ProximaCore
import ProximaKernel
import ProximaTestSupport
import Testing

/// Validates JSON documents against `Config/schema/manifest.schema.json` with Python's `jsonschema`
/// (Draft 2020-12), the validator editors and CI tools use, so the schema and the Swift loader are checked
/// against each other.
enum JSONSchemaCheck {
    static let configDirectory = PackageFiles.configDirectory
    static let schemaPath = configDirectory + "/schema/manifest.schema.json"

    /// Every manifest directly under `Config/`, sorted by name.
    static let configManifests: [String] = {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: configDirectory)) ?? []
        return names.filter { $0.hasSuffix(".json") }.sorted()
    }()

    /// Whether `python3` with `jsonschema` can run here.
    static let isAvailable: Bool = (try? Python.run("import jsonschema")) != nil

    /// Checks the schema itself, then returns each document's schema errors (`instance path: message`).
    static func errors(in documents: [String]) throws -> [[String]] {
        let request = JSONValue.object([
            ("schema", .string(schemaPath)),
            ("documents", .array(documents.map(JSONValue.string))),
        ])
        let requestFile = NSTemporaryDirectory() + "proxima-schema-request-\(UUID().uuidString).json"
        try Data(request.jsonText.utf8).write(to: URL(fileURLWithPath: requestFile))
        defer { try? FileManager.default.removeItem(atPath: requestFile) }

        let script = """
            import json, sys
            from jsonschema import Draft202012Validator
            with open(sys.argv[1]) as f:
                request = json.load(f)
            with open(request["schema"]) as f:
                schema = json.load(f)
            Draft202012Validator.check_schema(schema)
            validator = Draft202012Validator(schema)
            results = []
            for text in request["documents"]:
                errors = validator.iter_errors(json.loads(text))
                results.append(sorted("/" + "/".join(map(str, e.absolute_path)) + ": " + e.message for e in errors))
            json.dump(results, sys.stdout)
            """
        guard case .array(let results) = try Python.runJSON(script, arguments: [requestFile]) else {
            throw ProximaError(.malformedData, "python3 did not print an array")
        }
        return results.map { result in
            guard case .array(let messages) = result else { return ["(unreadable result)"] }
            return messages.map { if case .string(let s) = $0 { s } else { $0.jsonText } }
        }
    }
}

@Suite("Manifest schema")
struct ManifestSchemaTests {
    @Test func configHoldsTheDefaultManifest() {
        #expect(JSONSchemaCheck.configManifests.contains("proxima.json"))
    }

    @Test(.enabled(if: JSONSchemaCheck.isAvailable), arguments: JSONSchemaCheck.configManifests)
    func shippedManifestMatchesSchemaAndLoads(_ name: String) throws {
        let path = JSONSchemaCheck.configDirectory + "/" + name
        let text = try String(contentsOfFile: path, encoding: .utf8)
        #expect(try JSONSchemaCheck.errors(in: [text]) == [[]])

        let manifest = try Manifest.load(contentsOf: path, registry: BuiltinPlugins.registry)
        #expect(manifest.warnings.isEmpty, "\(manifest.warnings)")
        #expect(manifest.baseDirectory == JSONSchemaCheck.configDirectory)
        #expect(!manifest.enabledPlugins.isEmpty)
        #expect(!manifest.lanes.isEmpty)
    }

    /// Broken manifests of `ManifestTests` whose fault is in the document's shape, which a schema can see.
    /// The rest (duplicate ids, unregistered types and capabilities, plugin factories' rules, JSON syntax,
    /// duplicate keys, depth) only the loader can judge.
    static let structuralCases: Set<String> = [
        "unknown top-level key",
        "unknown key in a lane",
        "missing schemaVersion",
        "schemaVersion 2",
        "schemaVersion as a string",
        "plugins not an array",
        "no enabled plugin",
        "missing plugin type",
        "bad id characters",
        "id longer than 64 characters",
        "enabled not a boolean",
        "load process for a built-in type",
        "load unknown",
        "config not an object",
        "lanes empty",
        "reader id not a string",
        "reader id empty",
        "duplicate reader within a lane",
        "readerNames not an array",
        "maxWaitMs 0",
        "maxWaitMs too large",
        "maxWaitMs fractional",
        "maxWaitMs with failFast",
        "queue policy unknown",
        "queue not an object",
        "lane with no readers and no overflow",
        "capability settings not an object",
        "dataDirectory not a string",
        "document not an object",
    ]

    @Test(.enabled(if: JSONSchemaCheck.isAvailable))
    func schemaRejectsWhatTheLoaderRejectsStructurally() throws {
        let cases = BrokenManifest.all.filter { Self.structuralCases.contains($0.name) }
        #expect(Set(cases.map(\.name)) == Self.structuralCases, "a structural case was renamed or removed")
        let results = try JSONSchemaCheck.errors(in: cases.map(\.json))
        for (broken, errors) in zip(cases, results) {
            #expect(!errors.isEmpty, "the schema accepts \"\(broken.name)\", which the loader rejects")
        }
    }

    @Test(.enabled(if: JSONSchemaCheck.isAvailable))
    func schemaAcceptsWhatTheLoaderAccepts() throws {
        let documents = [
            ManifestTests.valid,
            BrokenManifest.manifest(),
            BrokenManifest.lane(#""readerNames": ["ACS*"], "queue": { "policy": "failFast" }"#),
            BrokenManifest.lane(#""overflowToShared": true, "queue": { "maxWaitMs": 3600000, "$comment": "1 h" }"#),
        ]
        for document in documents {
            _ = try Manifest.parse(Array(document.utf8), baseDirectory: "/m", registry: FakePlugins.registry)
        }
        #expect(try JSONSchemaCheck.errors(in: documents) == Array(repeating: [], count: documents.count))
    }

    /// The simulator's `config` shape: the schema describes it for editors, the simulator's factory enforces it.
    @Test(.enabled(if: JSONSchemaCheck.isAvailable))
    func schemaAndSimulatorAgreeOnItsConfiguration() throws {
        func simulator(_ config: String) -> String {
            BrokenManifest.manifest(
                plugins: #"[{ "id": "sim", "type": "simulator", "config": \#(config) }]"#,
                lanes: #"[{ "id": "lane-1", "readers": ["sim-1"] }]"#
            )
        }
        func load(_ document: String) throws -> Manifest {
            try Manifest.parse(
                Array(document.utf8),
                baseDirectory: JSONSchemaCheck.configDirectory,
                registry: BuiltinPlugins.registry
            )
        }
        let card = #""cards": ["cards/identity-visa-like.json"]"#
        let full = #"""
            { "bitRateKbps": 424, "airTime": false, "cardProcessingMs": 2.5,
              "readers": [ { "id": "sim-1", "name": "Sim 1", "extendedLength": false, \#(card),
                             "arrival": { "pattern": "poisson", "intervalMs": 300, "seed": -7 }, "repeat": false,
                             "faults": { "removeAfterExchanges": 0, "muteAfterExchanges": 2, "muteTimeoutMs": 50,
                                         "corruptResponseAt": 1, "vanishAfterExchanges": 3, "reappearAfterMs": 0 } } ] }
            """#
        // Each with the member the simulator's factory rejects, when it does.
        let rejected: [(config: String, loaderPath: String?)] = [
            (#"{ "bitRateKbps": 100, "readers": [{ "id": "sim-1", \#(card) }] }"#, "bitRateKbps"),
            (#"{ "cardProcessingMs": 10001, "readers": [{ "id": "sim-1", \#(card) }] }"#, "cardProcessingMs"),
            (#"{ "readers": [] }"#, "readers"),
            (#"{ "readers": [{ "id": "sim-1" }] }"#, "readers[0]"),
            (#"{ "readers": [{ "id": "sim-1", "cards": [] }] }"#, "readers[0].cards"),
            // The schema holds simulator reader ids to the manifest's id rule; the simulator takes any string.
            (#"{ "readers": [{ "id": "sim 1", \#(card) }] }"#, nil),
            (#"{ "readers": [{ "id": "sim-1", \#(card), "colour": "red" }] }"#, "readers[0].colour"),
            (
                #"{ "readers": [{ "id": "sim-1", \#(card), "arrival": { "pattern": "burst" } }] }"#,
                "readers[0].arrival.pattern"
            ),
            (
                #"{ "readers": [{ "id": "sim-1", \#(card), "arrival": { "intervalMs": -1 } }] }"#,
                "readers[0].arrival.intervalMs"
            ),
            (
                #"{ "readers": [{ "id": "sim-1", \#(card), "faults": { "corruptResponseAt": 0 } }] }"#,
                "readers[0].faults.corruptResponseAt"
            ),
            (
                #"{ "readers": [{ "id": "sim-1", \#(card), "faults": { "removeAfterExchanges": -1 } }] }"#,
                "readers[0].faults.removeAfterExchanges"
            ),
            (
                #"{ "readers": [{ "id": "sim-1", \#(card), "faults": { "muteTimeoutMs": 0 } }] }"#,
                "readers[0].faults.muteTimeoutMs"
            ),
            (#"{ "readers": [{ "id": "sim-1", \#(card) }], "speed": 1 }"#, "speed"),
        ]
        let results = try JSONSchemaCheck.errors(in: [simulator(full)] + rejected.map { simulator($0.config) })
        #expect(results.first == [])
        let loaded = try load(simulator(full))
        #expect(loaded.declaredReaders.map(\.id) == ["sim-1"])
        #expect(loaded.declaredReaders.first?.supportsExtendedLength == false)

        for (broken, errors) in zip(rejected, results.dropFirst()) {
            #expect(!errors.isEmpty, "the schema accepts simulator config \(broken.config)")
            guard let member = broken.loaderPath else { continue }
            let expectedPath = "plugins[0].config." + member
            #expect {
                try load(simulator(broken.config))
            } throws: { error in
                (error as? ManifestError)?.errors.map(\.path) == [expectedPath]
            }
        }
        // Unknown plugin types may have any config object.
        let other = BrokenManifest.manifest(
            plugins: #"[{ "id": "x", "type": "acme-reader", "config": { "anything": [1] } }]"#
        )
        #expect(try JSONSchemaCheck.errors(in: [other]) == [[]])
    }
}
