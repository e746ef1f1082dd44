import ExternalTransport
import Proxima
import ProximaCore
import ProximaKernel
import Testing

@Suite("External transport: configuration and manifest")
struct ExternalConfigurationTests {
    @Test("every member is read, with defaults for the optional ones")
    func readsConfiguration() throws {
        let json = try JSONValue.parse(
            """
            { "command": "drivers/d", "args": ["--port", "0"], "env": { "A": "1" }, "workingDirectory": "work",
              "sha256": "\(String(repeating: "ab", count: 32))", "callTimeoutMs": 700,
              "restart": { "initialDelayMs": 50 }, "breaker": { "failures": 2 } }
            """
        )
        let configuration = try ExternalConfiguration(
            json: json,
            path: "plugins[1].config",
            baseDirectory: "/etc/proxima"
        )
        #expect(configuration.command == "drivers/d")
        #expect(configuration.arguments == ["--port", "0"])
        #expect(configuration.environment == ["A": "1"])
        #expect(configuration.workingDirectory == "/etc/proxima/work")
        #expect(configuration.sha256 == Array(repeating: 0xAB, count: 32))
        #expect(configuration.callTimeout == .milliseconds(700))
        #expect(configuration.handshakeTimeout == .seconds(5))
        #expect(configuration.restartInitialDelay == .milliseconds(50))
        #expect(configuration.restartMaximumDelay == .seconds(10))
        #expect(configuration.breakerFailures == 2)
        #expect(configuration.breakerWindow == .seconds(60))
        #expect(configuration.maximumFrameBytes == 1 << 20)
    }

    @Test(
        "configuration errors name the JSON path",
        arguments: [
            (#"{}"#, #"plugins[1].config: missing required member "command""#),
            (#"{ "command": "d", "sha256": "abc" }"#, "plugins[1].config.sha256: expected the SHA-256"),
            (#"{ "command": "d", "callTimeoutMs": 0 }"#, "plugins[1].config.callTimeoutMs: 0 is out of range"),
            (#"{ "command": "d", "env": { "A=B": "1" } }"#, "plugins[1].config.env.A=B: a variable name"),
            (
                #"{ "command": "d", "restart": { "initialDelayMs": 500, "maxDelayMs": 100 } }"#,
                "maxDelayMs: 100 is below"
            ),
            (#"{ "command": "d", "breaker": { "tries": 1 } }"#, #"plugins[1].config.breaker.tries: unknown member"#),
            (#"{ "command": "d", "arg": [] }"#, #"plugins[1].config.arg: unknown member"#),
        ]
    )
    func namesPaths(_ text: String, _ expected: String) throws {
        do {
            _ = try ExternalConfiguration(
                json: try JSONValue.parse(text),
                path: "plugins[1].config",
                baseDirectory: "/"
            )
            Issue.record("accepted \(text)")
        } catch let error as ProximaError {
            #expect(error.code == .invalidManifest)
            #expect(error.pathAndReason.contains(expected), "\(error.pathAndReason)")
        }
    }

    static func manifest(load: String?) throws -> Manifest {
        let loadMember = load.map { #""load": "\#($0)", "# } ?? ""
        let text = """
            { "schemaVersion": 1,
              "plugins": [ { "id": "ext", "type": "external", \(loadMember)"config": { "command": "python3" } } ],
              "lanes": [ { "id": "lane", "overflowToShared": true } ] }
            """
        return try Manifest.parse(Array(text.utf8), baseDirectory: "/", registry: BuiltinPlugins.registry)
    }

    @Test("the manifest accepts \"load\": \"process\" for the external type, and defaults to it")
    func manifestLoad() throws {
        #expect(try Self.manifest(load: "process").plugins.first?.load == .process)
        #expect(try Self.manifest(load: nil).plugins.first?.load == .process)
        do {
            _ = try Self.manifest(load: "builtin")
            Issue.record("accepted load builtin for an external plugin")
        } catch let error as ManifestError {
            #expect(error.diagnostics.map(\.path) == ["plugins[0].load"])
            #expect(error.diagnostics.first?.message.contains("runs its driver as a child process") == true)
        }
    }

    @Test("Config/external-lanes.json is a valid manifest with an external plugin")
    func shippedManifest() throws {
        let manifest = try Manifest.load(
            contentsOf: configDirectory + "/external-lanes.json",
            registry: BuiltinPlugins.registry
        )
        let external = try #require(manifest.plugins.first { $0.type == "external" })
        #expect(external.load == .process)
    }
}
