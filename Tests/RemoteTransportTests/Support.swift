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

/// A store manifest: the Remote transport `lanes` on `host`:`port`, allowing `agent` by its DNS name, and
/// one lane `remote` over every reader named `Lane reader *`.
func storeManifest(
    port: Int = 0,
    host: String = "127.0.0.1",
    allowed agent: String = "lane-pc-1",
    revocationList: String? = nil,
    registry: PluginRegistry,
    callTimeoutMs: Int = 5000
) throws -> Manifest {
    let crl = revocationList.map { "\"crlFile\": \(quoted($0))," } ?? ""
    let listen = host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
    let text = """
        { "schemaVersion": 1,
          "plugins": [ { "id": "lanes", "type": "remote", "config": {
              "listen": "\(listen)",
              "caFile": "keys/remote-store-ca-test.pem",
              "certificateFile": "keys/remote-server-test.pem",
              "privateKeyFile": "keys/remote-server-test-private.pem", \(crl)
              "agents": [ { "name": "\(agent)", "dns": "\(agent).agents.proxima.test" } ],
              "callTimeoutMs": \(callTimeoutMs), "handshakeTimeoutMs": 10000 } } ],
          "lanes": [ { "id": "remote", "readerNames": ["Lane reader *"], "queue": { "maxWaitMs": 30000 } } ] }
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
        reconnectMaximumDelay: .milliseconds(400),
        handshakeTimeout: .seconds(10)
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

/// Waits until `condition` holds: checked at once, then again on every event of `kernel` (a reader appearing, going
/// idle, vanishing, a tap ending) when one is given, and every 200 ms for what publishes no kernel event (refusals,
/// link diagnostics); throws ``Timeout`` after `limit`, which only bounds a failure.
func waitUntil(
    _ what: String,
    on kernel: Kernel? = nil,
    within limit: Duration = .seconds(60),
    _ condition: @escaping @Sendable () async -> Bool
) async throws {
    let events = kernel?.events.subscribe(bufferSize: 4096)
    let met = try await withThrowingTaskGroup(of: Bool.self) { group in
        if let events {
            group.addTask {
                if await condition() { return true }
                for await _ in events {
                    if await condition() { return true }
                }
                return await condition()
            }
        }
        group.addTask {
            if await condition() { return true }
            let end = ContinuousClock.now + limit
            while ContinuousClock.now < end {
                try await Task.sleep(for: .milliseconds(events == nil ? 20 : 200))
                if await condition() { return true }
            }
            return false
        }
        defer { group.cancelAll() }
        return try await group.next() ?? false
    }
    guard met else { throw Timeout(description: "not within \(limit): \(what)") }
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
