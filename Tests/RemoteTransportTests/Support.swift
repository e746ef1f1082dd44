import Foundation
import Proxima
import ProximaCore
import ProximaKernel
import RemoteTransport
import Synchronization
import Testing

/// The package root, found from this file's path.
let packageRoot: String = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent()  // RemoteTransportTests
    .deletingLastPathComponent()  // Tests
    .deletingLastPathComponent()  // package root
    .path

let configDirectory = packageRoot + "/Config"
let keys = configDirectory + "/keys"
/// The `proxima` binary built next to the tests (`swift build --build-tests` builds it).
let proximaBinary = packageRoot + "/.build/debug/proxima"

struct Timeout: Error, CustomStringConvertible {
    var description: String
}

func quoted(_ text: String) -> String { JSONValue.string(text).jsonText }

/// What a store run leaves to check: the Remote transport and its log.
final class Captured: Sendable {
    private let transportBox = Mutex<RemoteTransport?>(nil)
    private let lines = Mutex<[String]>([])

    var transport: RemoteTransport? { transportBox.withLock { $0 } }
    var log: [String] { lines.withLock { $0 } }

    func keep(_ transport: RemoteTransport) { transportBox.withLock { $0 = transport } }
    func record(_ line: String) { lines.withLock { $0.append(line) } }
}

/// The simulator, and a `remote` type whose transports log into `captured`.
func storeRegistry(capturing captured: Captured) throws -> PluginRegistry {
    var registry = PluginRegistry()
    registry.register(try #require(BuiltinPlugins.registry.transportTypes["simulator"]))
    registry.register(
        TransportType(name: "remote", summary: "test") { context in
            let transport = RemoteTransport(
                id: context.id,
                configuration: try RemoteConfiguration(
                    json: context.configuration,
                    path: context.configurationPath,
                    baseDirectory: context.baseDirectory
                ),
                log: { captured.record($0) }
            )
            captured.keep(transport)
            return transport
        }
    )
    return registry
}

/// A store manifest: the Remote transport `lanes` on 127.0.0.1:`port`, allowing `lane-pc-1` by its DNS name, and
/// one lane `remote` over every reader named `Lane reader *`.
func storeManifest(port: Int = 0, registry: PluginRegistry, callTimeoutMs: Int = 2000) throws -> Manifest {
    let text = """
        { "schemaVersion": 1,
          "plugins": [ { "id": "lanes", "type": "remote", "config": {
              "listen": "127.0.0.1:\(port)",
              "caFile": "keys/remote-store-ca-test.pem",
              "certificateFile": "keys/remote-server-test.pem",
              "privateKeyFile": "keys/remote-server-test-private.pem",
              "agents": [ { "name": "lane-pc-1", "dns": "lane-pc-1.agents.proxima.test" } ],
              "callTimeoutMs": \(callTimeoutMs), "handshakeTimeoutMs": 3000 } } ],
          "lanes": [ { "id": "remote", "readerNames": ["Lane reader *"], "queue": { "maxWaitMs": 10000 } } ] }
        """
    return try Manifest.parse(Array(text.utf8), baseDirectory: configDirectory, registry: registry)
}

/// The lane PC's manifest text: one simulated reader `lane-1` named `Lane reader 1` with `card` always present.
func lanePCManifestText(card: String = "cards/pay-visa-qvsdc.json") -> String {
    """
    { "schemaVersion": 1,
      "plugins": [ { "id": "sim", "type": "simulator", "config": { "airTime": false, "readers": [
        { "id": "lane-1", "name": "Lane reader 1", "cards": [\(quoted(card))], "arrival": { "pattern": "immediate" } } ] } } ],
      "lanes": [ { "id": "local", "readers": ["lane-1"] } ] }
    """
}

/// The lane PC's transports, built from ``lanePCManifestText(card:)``.
func lanePCTransports(card: String = "cards/pay-visa-qvsdc.json") throws -> [any Transport] {
    let manifest = try Manifest.parse(
        Array(lanePCManifestText(card: card).utf8),
        baseDirectory: configDirectory,
        registry: BuiltinPlugins.registry
    )
    return try manifest.enabledPlugins.map { entry in
        let type = try #require(BuiltinPlugins.registry.transportTypes[entry.type])
        return try type.make(manifest.pluginContext(for: entry, clock: .continuous))
    }
}

/// An agent configuration for the store on `port` with the TEST certificate `stem` (`agent`, `rogue-agent`, …).
func agentConfiguration(port: Int, certificate stem: String = "agent") -> RemoteAgentConfiguration {
    RemoteAgentConfiguration(
        store: RemoteEndpoint(host: "127.0.0.1", port: port),
        certificateFile: "\(keys)/remote-\(stem)-test.pem",
        privateKeyFile: "\(keys)/remote-\(stem)-test-private.pem",
        certificateAuthorityFile: "\(keys)/remote-store-ca-test.pem",
        reconnectInitialDelay: .milliseconds(50),
        reconnectMaximumDelay: .milliseconds(400)
    )
}

/// Runs `body` with a started kernel, then stops it and waits until every transport has returned.
func withKernel<T: Sendable>(
    _ manifest: Manifest,
    registry: PluginRegistry,
    _ body: @Sendable (Kernel) async throws -> T
) async throws -> T {
    let kernel = Kernel(manifest: manifest, registry: registry)
    return try await withThrowingTaskGroup(of: T?.self) { group in
        group.addTask {
            await kernel.run()
            return nil
        }
        do {
            let result = try await body(kernel)
            group.cancelAll()
            return result
        } catch {
            group.cancelAll()
            throw error
        }
    }
}

/// Runs `agent` while `body` runs; cancels it and waits for it afterwards.
func withAgent<T: Sendable>(_ agent: RemoteAgent, _ body: @Sendable () async throws -> T) async throws -> T {
    try await withThrowingTaskGroup(of: T?.self) { group in
        group.addTask {
            try? await agent.run()
            return nil
        }
        do {
            let result = try await body()
            group.cancelAll()
            return result
        } catch {
            group.cancelAll()
            throw error
        }
    }
}

/// Waits until `condition` holds, checking it every 20 ms (refusals and link state publish no kernel event);
/// throws ``Timeout`` after `limit`.
func waitUntil(
    _ what: String,
    within limit: Duration = .seconds(15),
    _ condition: @escaping @Sendable () async -> Bool
) async throws {
    let clock = ContinuousClock()
    let end = clock.now + limit
    while !(await condition()) {
        guard clock.now < end else { throw Timeout(description: "not within \(limit): \(what)") }
        try await Task.sleep(for: .milliseconds(20))
    }
}

func state(of reader: ReaderID, in kernel: Kernel) async -> PoolSnapshot.ReaderState? {
    await kernel.snapshot().readers.first { $0.info.id == reader }?.state
}

/// The kernel error code of what `operation` threw; `nil` when it returned or threw something else.
func errorCode<Value>(_ operation: () async throws -> Value) async -> ProximaError.Code? {
    do {
        _ = try await operation()
        return nil
    } catch let error as ProximaError {
        return error.code
    } catch {
        Issue.record("expected a ProximaError, got \(error)")
        return nil
    }
}

/// This process's descriptors still open on one of `inodes` (sockets or pipes), as `/proc/self/fd` links.
func openDescriptors(on inodes: [UInt64]) -> [String] {
    let names = Set(inodes.flatMap { ["socket:[\($0)]", "pipe:[\($0)]"] })
    let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
    return entries.compactMap { try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\($0)") }
        .filter(names.contains)
}
