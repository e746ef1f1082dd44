import Foundation
import ProximaCore
import Testing

@testable import ProximaKernel

// MARK: - Test doubles

/// A transport that only exists to be validated: it never runs.
struct FakeTransport: Transport {
    let id: String
    let declaredReaders: [ReaderInfo]?
    var events: AsyncStream<ReaderEvent> { AsyncStream { $0.finish() } }
    func run() async throws {}
    func connect(to reader: ReaderID, options: ConnectOptions) async throws -> any CardChannel {
        throw ProximaError(.unsupported, "fake transport")
    }
}

enum FakePlugins {
    /// "fake": static readers from `config.readers` (`id`, optional `name`, optional string `card`);
    /// "fakeDiscovering": readers only at run time; capability "identity" with an optional boolean `strict`.
    static let registry: PluginRegistry = {
        var registry = PluginRegistry()
        registry.register(
            TransportType(name: "fake", summary: "static test transport") { context in
                var config = try StrictObject(context.configuration, at: context.configurationPath)
                let readers = try config.optionalArray("readers") { element, path in
                    var reader = try StrictObject(element, at: path)
                    let id = try reader.string("id")
                    let name = try reader.optionalString("name") ?? id
                    _ = try reader.optionalString("card")
                    try reader.finish()
                    return ReaderInfo(id: ReaderID(id), name: name, transport: context.id)
                }
                try config.finish()
                return FakeTransport(id: context.id, declaredReaders: readers ?? [])
            }
        )
        registry.register(
            TransportType(name: "fakeDiscovering", summary: "discovering test transport") { context in
                try StrictObject(context.configuration, at: context.configurationPath).finish()
                return FakeTransport(id: context.id, declaredReaders: nil)
            }
        )
        registry.register(
            CapabilityType(id: "identity", summary: "test capability") { settings, path, _ in
                var object = try StrictObject(settings, at: path)
                _ = try object.bool("strict", default: false)
                try object.finish()
            }
        )
        return registry
    }()
}

/// A fresh folder under the system's temporary directory, removed by `remove()`.
struct TemporaryDirectory {
    let path: String

    init() throws {
        path = NSTemporaryDirectory() + "proxima-manifest-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    /// Writes `text` to `relativePath`, creating folders; returns the absolute path.
    @discardableResult
    func write(_ text: String, to relativePath: String) throws -> String {
        let file = path + "/" + relativePath
        let folder = (file as NSString).deletingLastPathComponent
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        try Data(text.utf8).write(to: URL(fileURLWithPath: file))
        return file
    }

    func remove() { try? FileManager.default.removeItem(atPath: path) }
}

/// Parses `text` and returns the thrown error, or records an issue when it parses.
func manifestError(
    _ text: String,
    registry: PluginRegistry = FakePlugins.registry,
    sourceLocation: SourceLocation = #_sourceLocation
) -> ManifestError? {
    do {
        let manifest = try Manifest.parse(Array(text.utf8), baseDirectory: "/etc/proxima", registry: registry)
        Issue.record(
            "expected a ManifestError, got a manifest with lanes \(manifest.lanes)",
            sourceLocation: sourceLocation
        )
        return nil
    } catch let error as ManifestError {
        return error
    } catch {
        Issue.record("expected a ManifestError, got \(error)", sourceLocation: sourceLocation)
        return nil
    }
}

// MARK: - Broken manifests

struct BrokenManifest: Sendable, CustomTestStringConvertible {
    let name: String
    let json: String
    /// The JSON path of the error.
    let path: String
    /// A part of its message.
    let reason: String
    /// How many errors the manifest has in all.
    var errorCount = 1

    var testDescription: String { name }

    /// A valid manifest with `plugins`, `lanes` and extra top-level members replaced.
    static func manifest(
        plugins: String =
            #"[{ "id": "fake", "type": "fake", "config": { "readers": [{ "id": "r1" }, { "id": "r2" }] } }]"#,
        lanes: String = #"[{ "id": "lane-1", "readers": ["r1"] }]"#,
        extra: String = ""
    ) -> String {
        #"{ "schemaVersion": 1, "plugins": \#(plugins), "lanes": \#(lanes)\#(extra.isEmpty ? "" : ", " + extra) }"#
    }

    static func lane(_ members: String) -> String {
        manifest(lanes: #"[{ "id": "lane-1", \#(members) }]"#)
    }

    static let all: [BrokenManifest] = [
        BrokenManifest(
            name: "unknown top-level key",
            json: manifest(extra: #""lane": []"#),
            path: "lane",
            reason: #"unknown member "lane"; did you mean "lanes"?"#
        ),
        BrokenManifest(
            name: "unknown key in a lane",
            json: lane(#""readers": ["r1"], "overflowToShard": true"#),
            path: "lanes[0].overflowToShard",
            reason: #"did you mean "overflowToShared"?"#
        ),
        BrokenManifest(
            name: "missing schemaVersion",
            json:
                #"{ "plugins": [{ "id": "p", "type": "fake" }], "lanes": [{ "id": "l", "overflowToShared": true }] }"#,
            path: "",
            reason: #"missing required member "schemaVersion""#
        ),
        BrokenManifest(
            name: "schemaVersion 2",
            json: #"{ "schemaVersion": 2, "plugins": 7 }"#,
            path: "schemaVersion",
            reason: "schemaVersion 2 is not supported; this build reads schemaVersion 1"
        ),
        BrokenManifest(
            name: "schemaVersion as a string",
            json: manifest().replacingOccurrences(of: #""schemaVersion": 1"#, with: #""schemaVersion": "1""#),
            path: "schemaVersion",
            reason: "expected an integer (supported: 1), found string"
        ),
        BrokenManifest(
            name: "plugins not an array",
            json: manifest(plugins: #"{ "id": "fake" }"#),
            path: "plugins",
            reason: "expected an array of plugin entries, found object"
        ),
        BrokenManifest(
            name: "no enabled plugin",
            json: manifest(
                plugins: #"[{ "id": "fake", "type": "fake", "enabled": false }]"#,
                lanes: #"[{ "id": "l", "overflowToShared": true }]"#
            ),
            path: "plugins",
            reason: "no enabled plugin"
        ),
        BrokenManifest(
            name: "duplicate plugin id",
            json: manifest(
                plugins: #"[{ "id": "a", "type": "fake" }, { "id": "b", "type": "fake" }, "#
                    + #"{ "id": "a", "type": "fakeDiscovering" }]"#
            ),
            path: "plugins[2].id",
            reason: #"duplicate plugin id "a" (already used by plugins[0])"#
        ),
        BrokenManifest(
            name: "unknown plugin type",
            json: manifest(plugins: #"[{ "id": "nfc", "type": "libnfc" }]"#),
            path: "plugins[0].type",
            reason: #"unknown transport type "libnfc"; known types: "fake", "fakeDiscovering""#
        ),
        BrokenManifest(
            name: "missing plugin type",
            json: manifest(plugins: #"[{ "id": "fake" }]"#),
            path: "plugins[0]",
            reason: #"missing required member "type""#
        ),
        BrokenManifest(
            name: "bad id characters",
            json: manifest(plugins: #"[{ "id": "sim 1", "type": "fake" }]"#),
            path: "plugins[0].id",
            reason: #""sim 1" is not a valid plugin id"#
        ),
        BrokenManifest(
            name: "id longer than 64 characters",
            json: manifest(lanes: #"[{ "id": "\#(String(repeating: "x", count: 65))", "overflowToShared": true }]"#),
            path: "lanes[0].id",
            reason: "is not a valid lane id"
        ),
        BrokenManifest(
            name: "enabled not a boolean",
            json: manifest(plugins: #"[{ "id": "fake", "type": "fake", "enabled": "yes" }]"#),
            path: "plugins[0].enabled",
            reason: "expected a boolean (true or false), found string"
        ),
        BrokenManifest(
            name: "load process for a built-in type",
            json: manifest(plugins: #"[{ "id": "fake", "type": "fake", "load": "process" }]"#),
            path: "plugins[0].load",
            reason: #"type "fake" is built in: "process" is only for out-of-process transports"#
        ),
        BrokenManifest(
            name: "load unknown",
            json: manifest(plugins: #"[{ "id": "fake", "type": "fake", "load": "dylib" }]"#),
            path: "plugins[0].load",
            reason: #""dylib" is not one of "builtin", "process""#
        ),
        BrokenManifest(
            name: "config not an object",
            json: manifest(plugins: #"[{ "id": "fake", "type": "fake", "config": [] }]"#),
            path: "plugins[0].config",
            reason: "expected an object (the plugin's configuration), found array"
        ),
        BrokenManifest(
            name: "plugin config error propagated from the factory",
            json: manifest(
                plugins: #"[{ "id": "fake", "type": "fake", "#
                    + #""config": { "readers": [{ "id": "r1" }, { "id": "r2", "card": 7 }] } }]"#
            ),
            path: "plugins[0].config.readers[1].card",
            reason: "expected a string, found integer"
        ),
        BrokenManifest(
            name: "disabled plugin's config is validated too",
            json: manifest(
                plugins: #"[{ "id": "fake", "type": "fake", "config": { "readers": [{ "id": "r1" }] } }, "#
                    + #"{ "id": "off", "type": "fake", "enabled": false, "config": { "readerz": [] } }]"#
            ),
            path: "plugins[1].config.readerz",
            reason: #"unknown member "readerz""#
        ),
        BrokenManifest(
            name: "reader declared by two transports",
            json: manifest(
                plugins: #"[{ "id": "a", "type": "fake", "config": { "readers": [{ "id": "r1" }] } }, "#
                    + #"{ "id": "b", "type": "fake", "config": { "readers": [{ "id": "r1" }] } }]"#
            ),
            path: "plugins[1]",
            reason: #"reader "r1" is already declared by plugin "a" (plugins[0])"#
        ),
        BrokenManifest(
            name: "lanes empty",
            json: manifest(lanes: "[]"),
            path: "lanes",
            reason: "no lane"
        ),
        BrokenManifest(
            name: "lane duplicate id",
            json: manifest(lanes: #"[{ "id": "l", "readers": ["r1"] }, { "id": "l", "readers": ["r2"] }]"#),
            path: "lanes[1].id",
            reason: #"duplicate lane id "l" (already used by lanes[0])"#
        ),
        BrokenManifest(
            name: "reader id not a string",
            json: manifest(
                lanes: #"[{ "id": "a", "readers": ["r1"] }, { "id": "b", "readers": ["r2"] }, "#
                    + #"{ "id": "c", "readers": [3] }]"#
            ),
            path: "lanes[2].readers[0]",
            reason: "expected a non-empty string (a reader id), found integer"
        ),
        BrokenManifest(
            name: "reader id empty",
            json: lane(#""readers": [""]"#),
            path: "lanes[0].readers[0]",
            reason: "found an empty string"
        ),
        BrokenManifest(
            name: "duplicate reader within a lane",
            json: lane(#""readers": ["r1", "r2", "r1"]"#),
            path: "lanes[0].readers[2]",
            reason: #"duplicate entry "r1" (also at lanes[0].readers[0])"#
        ),
        BrokenManifest(
            name: "readerNames not an array",
            json: lane(#""readerNames": "ACS*""#),
            path: "lanes[0].readerNames",
            reason: "expected an array of strings"
        ),
        BrokenManifest(
            name: "maxWaitMs 0",
            json: lane(#""readers": ["r1"], "queue": { "maxWaitMs": 0 }"#),
            path: "lanes[0].queue.maxWaitMs",
            reason: "0 is out of range, expected 1…3600000"
        ),
        BrokenManifest(
            name: "maxWaitMs too large",
            json: lane(#""readers": ["r1"], "queue": { "policy": "wait", "maxWaitMs": 3600001 }"#),
            path: "lanes[0].queue.maxWaitMs",
            reason: "3600001 is out of range"
        ),
        BrokenManifest(
            name: "maxWaitMs fractional",
            json: lane(#""readers": ["r1"], "queue": { "maxWaitMs": 1.5 }"#),
            path: "lanes[0].queue.maxWaitMs",
            reason: "found number"
        ),
        BrokenManifest(
            name: "maxWaitMs with failFast",
            json: lane(#""readers": ["r1"], "queue": { "policy": "failFast", "maxWaitMs": 100 }"#),
            path: "lanes[0].queue.maxWaitMs",
            reason: #"maxWaitMs applies only to the "wait" policy"#
        ),
        BrokenManifest(
            name: "queue policy unknown",
            json: lane(#""readers": ["r1"], "queue": { "policy": "fifo" }"#),
            path: "lanes[0].queue.policy",
            reason: #""fifo" is not one of "wait", "failFast""#
        ),
        BrokenManifest(
            name: "queue not an object",
            json: lane(#""readers": ["r1"], "queue": "wait""#),
            path: "lanes[0].queue",
            reason: "expected an object, found string"
        ),
        BrokenManifest(
            name: "lane with no readers and no overflow",
            json: lane(#""readers": [], "overflowToShared": false"#),
            path: "lanes[0]",
            reason: "lane serves no reader"
        ),
        BrokenManifest(
            name: "unknown capability",
            json: manifest(extra: #""capabilities": { "identity": {}, "payment": {} }"#),
            path: "capabilities.payment",
            reason: #"unknown capability "payment"; known capabilities: "identity""#
        ),
        BrokenManifest(
            name: "capability settings rejected by the capability",
            json: manifest(extra: #""capabilities": { "identity": { "strict": 1 } }"#),
            path: "capabilities.identity.strict",
            reason: "expected a boolean"
        ),
        BrokenManifest(
            name: "capability settings not an object",
            json: manifest(extra: #""capabilities": { "identity": true }"#),
            path: "capabilities.identity",
            reason: "expected an object (the capability's settings), found boolean"
        ),
        BrokenManifest(
            name: "dataDirectory not a string",
            json: manifest(extra: #""dataDirectory": 5"#),
            path: "dataDirectory",
            reason: "expected a string, found integer"
        ),
        BrokenManifest(
            name: "invalid JSON",
            json: "{\n  \"schemaVersion\": 1\n  \"plugins\": []\n}",
            path: "",
            reason: "invalid JSON at line 3, column 3: expected ',' or '}' in object"
        ),
        BrokenManifest(
            name: "duplicate JSON key",
            json: "{ \"schemaVersion\": 1,\n  \"lanes\": [],\n  \"lanes\": [] }",
            path: "",
            reason: #"invalid JSON at line 3, column 3: duplicate member "lanes""#
        ),
        BrokenManifest(
            name: "nesting too deep",
            json: manifest(
                extra: #""comment": \#(String(repeating: "[", count: 70))\#(String(repeating: "]", count: 70))"#
            ),
            path: "",
            reason: "nesting deeper than 64 levels"
        ),
        BrokenManifest(
            name: "document not an object",
            json: "[]",
            path: "",
            reason: "expected a JSON object at the top level, found array"
        ),
    ]
}

// MARK: - Tests

@Suite("Manifest")
struct ManifestTests {
    static let valid = #"""
        {
          "$schema": "schema/manifest.schema.json",
          "comment": "two static readers, one discovering transport (disabled), four lanes",
          "schemaVersion": 1,
          "dataDirectory": "state",
          "plugins": [
            { "id": "sim", "type": "fake", "enabled": true, "load": "builtin",
              "config": { "readers": [ { "id": "sim-1", "name": "Sim One" }, { "id": "sim-2", "name": "Sim Two" },
                                       { "id": "sim-3", "name": "ACS ACR122U PICC 00" } ] } },
            { "id": "pcsc", "type": "fakeDiscovering", "enabled": false, "$comment": "off for now" }
          ],
          "lanes": [
            { "id": "lane-1", "readers": ["sim-1", "sim-2"], "readerNames": ["ACS ACR122U*"], "overflowToShared": true,
              "queue": { "policy": "wait", "maxWaitMs": 1500 } },
            { "id": "kiosk", "readers": ["sim-3"], "queue": { "policy": "failFast", "comment": "no queue at kiosks" } },
            { "id": "lane-3", "readers": ["sim-2"] },
            { "id": "spare", "overflowToShared": true, "queue": {} }
          ],
          "capabilities": { "identity": { "strict": true }, "comment": "settings per capability" }
        }
        """#

    @Test func validManifestParsesToExpectedValues() throws {
        let manifest = try Manifest.parse(
            Array(Self.valid.utf8),
            baseDirectory: "/etc/proxima/./conf/..",
            registry: FakePlugins.registry,
            sourcePath: "proxima.json"
        )
        #expect(manifest.schemaVersion == 1)
        #expect(manifest.sourcePath == "proxima.json")
        #expect(manifest.baseDirectory == "/etc/proxima")
        #expect(manifest.dataDirectory == "/etc/proxima/state")
        #expect(manifest.warnings.isEmpty)

        #expect(manifest.plugins.map(\.id) == ["sim", "pcsc"])
        #expect(manifest.plugins.map(\.type) == ["fake", "fakeDiscovering"])
        #expect(manifest.plugins.map(\.enabled) == [true, false])
        #expect(manifest.plugins.map(\.load) == [.builtin, .builtin])
        #expect(manifest.plugins.map(\.path) == ["plugins[0]", "plugins[1]"])
        #expect(manifest.plugins.map(\.configurationPath) == ["plugins[0].config", "plugins[1].config"])
        #expect(manifest.plugins[1].configuration == .object([]))
        guard case .array(let configuredReaders) = manifest.plugins[0].configuration["readers"] else {
            Issue.record("plugins[0].configuration lost its readers")
            return
        }
        #expect(configuredReaders.count == 3)
        #expect(manifest.enabledPlugins.map(\.id) == ["sim"])

        #expect(manifest.declaredReaders.map(\.id) == ["sim-1", "sim-2", "sim-3"])
        #expect(manifest.declaredReaders.map(\.transport) == ["sim", "sim", "sim"])

        #expect(
            manifest.lanes == [
                LaneConfiguration(
                    id: "lane-1",
                    readerIDs: ["sim-1", "sim-2"],
                    readerNamePatterns: ["ACS ACR122U*"],
                    overflowToShared: true,
                    queuePolicy: .wait(maxWait: .milliseconds(1500))
                ),
                LaneConfiguration(id: "kiosk", readerIDs: ["sim-3"], queuePolicy: .failFast),
                LaneConfiguration(id: "lane-3", readerIDs: ["sim-2"], queuePolicy: .wait(maxWait: .seconds(30))),
                LaneConfiguration(id: "spare", overflowToShared: true, queuePolicy: .wait(maxWait: .seconds(30))),
            ]
        )
        #expect(manifest.capabilities == ["identity": .object([("strict", .bool(true))])])

        let context = manifest.pluginContext(for: manifest.plugins[0], clock: .continuous)
        #expect(context.id == "sim")
        #expect(context.configurationPath == "plugins[0].config")
        #expect(context.configuration == manifest.plugins[0].configuration)
        #expect(context.baseDirectory == "/etc/proxima")
        #expect(context.dataDirectory == "/etc/proxima/state")
        #expect(context.resolve("cards/a.json") == "/etc/proxima/cards/a.json")
    }

    @Test(arguments: BrokenManifest.all)
    func brokenManifestIsRejectedWithPath(_ broken: BrokenManifest) throws {
        let error = try #require(manifestError(broken.json))
        #expect(error.code == .invalidManifest)
        let match = error.errors.first { $0.path == broken.path && $0.message.contains(broken.reason) }
        #expect(match != nil, "no error at \"\(broken.path)\" containing \"\(broken.reason)\" in:\n\(error)")
        #expect(error.errors.count == broken.errorCount, "\(error)")
    }

    @Test func brokenManifestTableIsLargeEnough() {
        #expect(BrokenManifest.all.count >= 20)
        #expect(Set(BrokenManifest.all.map(\.name)).count == BrokenManifest.all.count)
    }

    @Test func everyErrorOfOneManifestIsReported() throws {
        let json = #"""
            { "schemaVersion": 1, "plugin": [],
              "plugins": [ { "id": "a", "type": "fake", "config": { "readers": [ { "id": "r1" } ] } },
                           { "id": "b", "type": "nfc" },
                           { "id": "a!", "type": "fake", "enabled": 1 } ],
              "lanes": [ { "id": "l1", "readers": ["r1", "r1"] },
                         { "id": "l2", "readers": ["r1"], "queue": { "maxWaitMs": 0 } },
                         { "id": "l3" } ],
              "capabilities": { "payment": {} } }
            """#
        let error = try #require(manifestError(json))
        #expect(
            error.errors.map(\.path) == [
                "plugin",
                "plugins[1].type",
                "plugins[2].id",
                "plugins[2].enabled",
                "lanes[0].readers[1]",
                "lanes[1].queue.maxWaitMs",
                "lanes[2]",
                "capabilities.payment",
            ]
        )
        let lines = error.description.split(separator: "\n")
        #expect(lines.first == "manifest: 8 errors")
        #expect(lines.count == 9)
        #expect(
            lines.contains(#"plugins[1].type: unknown transport type "nfc"; known types: "fake", "fakeDiscovering""#)
        )
    }

    @Test func unsupportedSchemaVersionStopsValidation() throws {
        let error = try #require(manifestError(#"{ "schemaVersion": 2, "plugins": 1, "lanes": 2, "extra": 3 }"#))
        #expect(
            error.diagnostics == [
                ManifestDiagnostic(
                    path: "schemaVersion",
                    message: "schemaVersion 2 is not supported; this build reads schemaVersion 1"
                )
            ]
        )
    }

    // MARK: Warnings

    @Test func undeclaredReaderIsAWarningWithItsPath() throws {
        let json = BrokenManifest.lane(#""readers": ["r1", "r9"], "readerNames": ["Nope*", "r?"]"#)
        let manifest = try Manifest.parse(Array(json.utf8), baseDirectory: "/m", registry: FakePlugins.registry)
        #expect(manifest.warnings.map(\.path) == ["lanes[0].readers[1]", "lanes[0].readerNames[0]"])
        #expect(manifest.warnings.allSatisfy { $0.severity == .warning })
        #expect(manifest.warnings[0].message.contains(#"no enabled transport declares reader "r9""#))
        #expect(manifest.warnings[0].message.contains(#"declared: "r1", "r2""#))
        #expect(manifest.warnings[1].message.contains(#"pattern "Nope*" matches no reader name"#))
        #expect(manifest.warnings[0].description.hasPrefix("lanes[0].readers[1]: warning: "))
        #expect(manifest.lanes[0].readerIDs == ["r1", "r9"])
    }

    @Test func noWarningWhenADiscoveringTransportIsEnabled() throws {
        let plugins = #"""
            [{ "id": "fake", "type": "fake", "config": { "readers": [{ "id": "r1" }] } },
             { "id": "pcsc", "type": "fakeDiscovering" }]
            """#
        let json = BrokenManifest.manifest(
            plugins: plugins,
            lanes: #"[{ "id": "l", "readers": ["r1", "ACS-1"], "readerNames": ["ACS*"] }]"#
        )
        let manifest = try Manifest.parse(Array(json.utf8), baseDirectory: "/m", registry: FakePlugins.registry)
        #expect(manifest.warnings.isEmpty)
        #expect(manifest.declaredReaders.map(\.id) == ["r1"])
    }

    @Test func disabledTransportsDeclareNothing() throws {
        let plugins = #"""
            [{ "id": "fake", "type": "fake", "config": { "readers": [{ "id": "r1" }] } },
             { "id": "off", "type": "fake", "enabled": false, "config": { "readers": [{ "id": "r2" }] } },
             { "id": "pcsc", "type": "fakeDiscovering", "enabled": false }]
            """#
        let json = BrokenManifest.manifest(plugins: plugins, lanes: #"[{ "id": "l", "readers": ["r1", "r2"] }]"#)
        let manifest = try Manifest.parse(Array(json.utf8), baseDirectory: "/m", registry: FakePlugins.registry)
        #expect(manifest.declaredReaders.map(\.id) == ["r1"])
        #expect(manifest.warnings.map(\.path) == ["lanes[0].readers[1]"])
    }

    @Test func warningsComeWithErrors() throws {
        let json = BrokenManifest.manifest(
            lanes: #"[{ "id": "l", "readers": ["r9"] }, { "id": "l" , "readers": ["r1"] }]"#
        )
        let error = try #require(manifestError(json))
        #expect(error.errors.map(\.path) == ["lanes[1].id"])
        #expect(error.warnings.map(\.path) == ["lanes[0].readers[0]"])
        #expect(error.description.hasPrefix("manifest: 1 error, 1 warning\n"))
    }

    // MARK: Files and paths

    @Test func relativeDataDirectoryResolvesAgainstTheManifestFolder() throws {
        let temporary = try TemporaryDirectory()
        defer { temporary.remove() }
        let file = try temporary.write(
            BrokenManifest.manifest(extra: #""dataDirectory": "../var""#),
            to: "Config/proxima.json"
        )
        let root = ManifestPathsForTests.normalized(temporary.path)

        let manifest = try Manifest.load(contentsOf: file, registry: FakePlugins.registry)
        #expect(manifest.sourcePath == file)
        #expect(manifest.baseDirectory == root + "/Config")
        #expect(manifest.dataDirectory == root + "/var")

        // The same file by a path relative to the current directory.
        let relative = ManifestPathsForTests.relativeToCurrentDirectory(root + "/Config/proxima.json")
        #expect(!relative.hasPrefix("/"))
        let viaRelative = try Manifest.load(contentsOf: relative, registry: FakePlugins.registry)
        #expect(viaRelative.sourcePath == relative)
        #expect(viaRelative.baseDirectory == root + "/Config")
        #expect(viaRelative.dataDirectory == root + "/var")
    }

    @Test func defaultAndAbsoluteDataDirectory() throws {
        let defaulted = try Manifest.parse(
            Array(BrokenManifest.manifest().utf8),
            baseDirectory: "/srv/proxima/",
            registry: FakePlugins.registry
        )
        #expect(defaulted.dataDirectory == "/srv/proxima/var")
        let absolute = try Manifest.parse(
            Array(BrokenManifest.manifest(extra: #""dataDirectory": "/var/lib/proxima/""#).utf8),
            baseDirectory: "/srv/proxima",
            registry: FakePlugins.registry
        )
        #expect(absolute.dataDirectory == "/var/lib/proxima")
    }

    @Test func unreadableFileNamesTheFile() throws {
        let temporary = try TemporaryDirectory()
        defer { temporary.remove() }
        let missing = temporary.path + "/nope.json"
        #expect {
            try Manifest.load(contentsOf: missing, registry: FakePlugins.registry)
        } throws: { error in
            guard let error = error as? ManifestError else { return false }
            return error.file == missing && error.errors.count == 1
                && error.errors[0].message.contains("cannot read")
                && error.errors[0].message.contains("no such file")
                && error.description.hasPrefix("\(missing): 1 error\n(document): cannot read")
        }
        #expect {
            try Manifest.load(contentsOf: temporary.path, registry: FakePlugins.registry)
        } throws: { error in
            (error as? ManifestError)?.errors.first?.message.contains("is a directory") == true
        }
    }

    @Test func manifestErrorConvertsToProximaError() throws {
        let error = try #require(manifestError(BrokenManifest.lane(#""readers": ["r1"], "queue": { "policy": "x" }"#)))
        #expect(error.proximaError == ProximaError(.invalidManifest))
        #expect(error.proximaError.reason.contains(#"lanes[0].queue.policy: "x" is not one of"#))
    }
}

/// Path arithmetic for the tests, independent of the loader's own.
enum ManifestPathsForTests {
    /// `.` and `..` removed, as the loader does (symbolic links are kept).
    static func normalized(_ path: String) -> String {
        URL(fileURLWithPath: path).standardizedFileURL.path
    }

    /// `absolutePath` written relative to the current directory (`../../tmp/…`).
    static func relativeToCurrentDirectory(_ absolutePath: String) -> String {
        let current = FileManager.default.currentDirectoryPath.split(separator: "/")
        let target = absolutePath.split(separator: "/")
        var common = 0
        while common < current.count, common < target.count, current[common] == target[common] { common += 1 }
        let up = Array(repeating: "..", count: current.count - common)
        return (up + target[common...].map(String.init)).joined(separator: "/")
    }
}

// MARK: - JSON paths as fields

@Suite struct ManifestJSONPathTests {
    /// `StrictObject` puts the path in `jsonPath` and only the problem in `reason`; the printed form is unchanged.
    @Test func strictObjectErrorsCarryTheirPath() throws {
        var object = try StrictObject(
            try JSONValue.parse(#"{ "readers": [1], "typo": true }"#),
            at: "plugins[0].config"
        )
        let decoder = object
        let error = try require(throwing: {
            _ = try object.array("readers") { value, path in try decoder.decodeString(value, at: path) }
        })
        #expect(error.jsonPath == "plugins[0].config.readers[0]")
        #expect(error.reason == "expected a string, found integer")
        #expect(error.pathAndReason == "plugins[0].config.readers[0]: expected a string, found integer")
        #expect("\(error)" == "invalidManifest: plugins[0].config.readers[0]: expected a string, found integer")
        let root = try require(throwing: { _ = try StrictObject(.array([]), at: "") })
        #expect(root.jsonPath == "")
        #expect(root.pathAndReason == "(document): expected an object, found array")
    }

    /// The sink records a `ProximaError` at its `jsonPath`; a reason is never parsed for a path.
    @Test func diagnosticsUseTheErrorsPathField() {
        let sink = ManifestDiagnosticSink()
        sink.record(
            ProximaError(.invalidManifest, "no such device", jsonPath: "plugins[0].config.device"),
            at: "plugins[0].config"
        )
        sink.record(ProximaError(.invalidManifest, "plugins[0].config.x: looks like a path"), at: "plugins[0].config")
        #expect(
            sink.diagnostics == [
                ManifestDiagnostic(path: "plugins[0].config.device", message: "no such device"),
                ManifestDiagnostic(path: "plugins[0].config", message: "plugins[0].config.x: looks like a path"),
            ]
        )
    }
}

/// The `ProximaError` `body` throws; fails the test when it throws nothing or something else.
func require(throwing body: () throws -> Void, sourceLocation: SourceLocation = #_sourceLocation) throws -> ProximaError
{
    do {
        try body()
    } catch let error as ProximaError {
        return error
    }
    Issue.record("expected a ProximaError", sourceLocation: sourceLocation)
    throw LeaseWaiter.NeverAnswered()
}
