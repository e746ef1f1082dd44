import ExternalTransport
import Foundation
import Proxima
import ProximaCore
import ProximaKernel
import Synchronization
import Testing

/// The package root, found from this file's path.
let packageRoot: String = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent()  // ExternalTransportTests
    .deletingLastPathComponent()  // Tests
    .deletingLastPathComponent()  // package root
    .path

let configDirectory = packageRoot + "/Config"
let testDriver = packageRoot + "/Tests/ExternalTransportTests/Drivers/test_driver.py"

struct Timeout: Error, CustomStringConvertible {
    var description: String
}

/// What a harness run leaves behind to check: the transport, and every line it logged.
final class Captured: Sendable {
    private let transportBox = Mutex<ExternalTransport?>(nil)
    private let lines = Mutex<[String]>([])

    var transport: ExternalTransport? { transportBox.withLock { $0 } }
    var log: [String] { lines.withLock { $0 } }

    func keep(_ transport: ExternalTransport) { transportBox.withLock { $0 = transport } }
    func record(_ line: String) { lines.withLock { $0.append(line) } }
}

/// The built-in simulator, and an `external` type whose transports log into `captured`.
func registry(capturing captured: Captured) throws -> PluginRegistry {
    var registry = PluginRegistry()
    registry.register(try #require(BuiltinPlugins.registry.transportTypes["simulator"]))
    registry.register(
        TransportType(name: "external", summary: "test", load: .process) { context in
            let transport = ExternalTransport(
                id: context.id,
                configuration: try ExternalConfiguration(
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

func quoted(_ text: String) -> String { JSONValue.string(text).jsonText }

/// A manifest with one simulated reader `sim-1` (lane `sim`) and the test driver (lane `ext`, readers named
/// `Test Reader *`).
///
/// The timeouts leave room for a loaded machine: beside the whole suite (2 shared cores, load 20+) a Python driver can
/// take seconds to start and answer, and a call or handshake timeout that fires for that reason is a spurious `hung`
/// fault: it adds a fault a test does not expect and, three of them, opens the breaker (600 s), so a wait for the
/// restarted driver fails. The `hang` case still ends at its call's timeout (3 s + 250 ms grace).
func harnessManifest(
    command: String = "python3",
    arguments: [String],
    extraConfig: String = "",
    registry: PluginRegistry
) throws -> Manifest {
    let args = arguments.map(quoted).joined(separator: ", ")
    let text = """
        {
          "schemaVersion": 1,
          "plugins": [
            { "id": "sim", "type": "simulator", "config": { "airTime": false, "readers": [
              { "id": "sim-1", "cards": ["cards/identity-visa-like.json"], "arrival": { "pattern": "immediate" } } ] } },
            { "id": "ext", "type": "external", "load": "process", "config": {
              "command": \(quoted(command)), "args": [\(args)],
              "callTimeoutMs": 3000, "handshakeTimeoutMs": 20000,
              "restart": { "initialDelayMs": 20, "maxDelayMs": 200 },
              "breaker": { "failures": 3, "windowMs": 600000, "openMs": 600000 }\(extraConfig) } }
          ],
          "lanes": [
            { "id": "sim", "readers": ["sim-1"] },
            { "id": "ext", "readerNames": ["Test Reader *"], "queue": { "maxWaitMs": 20000 } }
          ]
        }
        """
    return try Manifest.parse(Array(text.utf8), baseDirectory: configDirectory, registry: registry)
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

/// Waits until `condition` holds: checked at once, then again on every kernel event (a reader appearing, going idle,
/// faulting, a tap ending), and every 200 ms for what publishes no kernel event (a refused start, a diagnostics
/// count); throws ``Timeout`` after `limit`, which only bounds a failure (generous: a loaded machine stretches every
/// restart).
func waitUntil(
    _ what: String,
    on kernel: Kernel,
    within limit: Duration = .seconds(60),
    _ condition: @escaping @Sendable () async -> Bool
) async throws {
    let events = kernel.events.subscribe(bufferSize: 4096)
    let met = try await withThrowingTaskGroup(of: Bool.self) { group in
        group.addTask {
            if await condition() { return true }
            for await _ in events {
                if await condition() { return true }
            }
            return await condition()
        }
        group.addTask {
            let end = ContinuousClock.now + limit
            while ContinuousClock.now < end {
                try await Task.sleep(for: .milliseconds(200))
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

/// GET CHALLENGE on the `ext` lane: the test card answers 01…08 9000.
func challenge(_ kernel: Kernel, lane: LaneID = "ext") async throws -> [UInt8] {
    try await kernel.tap(lane: lane, options: TapOptions(timeout: .seconds(20))) { channel, _ in
        let response = try await channel.transmit(try CommandAPDU(cla: 0, ins: 0x84, p1: 0, p2: 0, expectedLength: 8))
        return response.bytes
    }
}

/// SELECT PPSE on the simulated reader: its status word.
func selectOnSimulator(_ kernel: Kernel) async throws -> StatusWord {
    try await kernel.tap(lane: "sim", options: TapOptions(timeout: .seconds(20))) { channel, _ in
        let ppse = Array("2PAY.SYS.DDF01".utf8)
        return try await channel.transmit(
            try CommandAPDU(cla: 0, ins: 0xA4, p1: 4, p2: 0, data: ppse, expectedLength: 256)
        )
        .status
    }
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

// MARK: Leaks

/// Processes and descriptors that a driver could leave behind.
enum Leaks {
    /// Pids of living (not zombie) processes whose command line contains `marker`.
    static func processes(matching marker: String) -> [Int32] {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        return entries.compactMap { entry -> Int32? in
            guard let pid = Int32(entry), pid != getpid(),
                let cmdline = FileManager.default.contents(atPath: "/proc/\(entry)/cmdline"),
                String(decoding: cmdline, as: UTF8.self).replacingOccurrences(of: "\0", with: " ").contains(marker),
                !isZombie(pid)
            else { return nil }
            return pid
        }
    }

    /// Whether `pid` still exists in any state (a child not reaped is a zombie that still exists).
    static func exists(_ pid: Int32) -> Bool { FileManager.default.fileExists(atPath: "/proc/\(pid)") }

    static func isZombie(_ pid: Int32) -> Bool {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")")
        else { return false }
        return stat[close...].dropFirst(2).first == "Z"
    }

    /// The descriptors of this process, as `/proc/self/fd` links (`pipe:[123]`, `/dev/null`, …).
    static func descriptors() -> [String] {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
        return entries.compactMap { try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\($0)") }
    }

    /// Descriptors of this process still open on one of `inodes`' pipes.
    static func openPipes(_ inodes: [UInt64]) -> [String] {
        let names = Set(inodes.map { "pipe:[\($0)]" })
        return descriptors().filter(names.contains)
    }

    /// Checks that nothing the transport started is still running or open.
    static func expectNone(from transport: ExternalTransport?, sourceLocation: SourceLocation = #_sourceLocation) {
        guard let transport else {
            Issue.record("the transport was never built", sourceLocation: sourceLocation)
            return
        }
        let diagnostics = transport.diagnostics
        #expect(!diagnostics.pipeInodes.isEmpty, sourceLocation: sourceLocation)
        #expect(Leaks.openPipes(diagnostics.pipeInodes) == [], "pipes still open", sourceLocation: sourceLocation)
        for pid in diagnostics.processIDs {
            #expect(!Leaks.exists(pid), "driver process \(pid) still exists", sourceLocation: sourceLocation)
        }
    }
}
