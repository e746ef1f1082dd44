import Foundation
import PCSCTransport
import PaymentCapability
import Proxima
import ProximaCardEmulator
import ProximaCore
import ProximaKernel
import ProximaTestSupport
import Synchronization
import Testing

/// Where the live tests find pcscd and its vpcd readers: set by `scripts/pcscd-harness.sh` (which
/// `scripts/with-test-services.sh`, and so `make test`, wraps around the test run).
enum LivePCSCD {
    static let environment = ProcessInfo.processInfo.environment

    /// pcscd is serving and the harness said so: `PROXIMA_PCSCD=1` and `/run/pcscd/pcscd.comm` exists.
    static let isAvailable =
        environment["PROXIMA_PCSCD"] == "1" && FileManager.default.fileExists(atPath: "/run/pcscd/pcscd.comm")

    /// The harness passed the reader.conf.d it started pcscd with, so a test can start pcscd again alike.
    static let canRestart = isAvailable && environment["PROXIMA_PCSCD_CONFIG_DIR"] != nil

    /// The harness's six vpcd readers in order: `Virtual PCD 00 00/01` (used by `PCSCTransportTests` too), then
    /// `Virtual PCD B 00 00/01` and `Virtual PCD C 00 00/01`.
    static let readers: [Reader] = {
        let names = environment["PROXIMA_VPCD_READERS"]?.split(separator: ",").map(String.init)
        let ports = environment["PROXIMA_VPCD_PORTS"]?.split(separator: ",").compactMap { UInt16($0) }
        guard let names, let ports, names.count == ports.count, names.count >= 6 else {
            return [
                Reader(name: "Virtual PCD 00 00", port: 35963), Reader(name: "Virtual PCD 00 01", port: 35964),
                Reader(name: "Virtual PCD B 00 00", port: 35979), Reader(name: "Virtual PCD B 00 01", port: 35980),
                Reader(name: "Virtual PCD C 00 00", port: 35995), Reader(name: "Virtual PCD C 00 01", port: 35996),
            ]
        }
        return zip(names, ports).map { Reader(name: $0, port: $1) }
    }()

    struct Reader: Sendable, CustomStringConvertible {
        var name: String
        var port: UInt16
        var endpoint: VPCDCardHost.Endpoint { VPCDCardHost.Endpoint(port: port) }
        var id: ReaderID { ReaderID("pcsc/" + name) }
        var description: String { name }
    }

    /// Readers only the integration tests use (`PCSCTransportTests` takes the first two).
    static var b0: Reader { readers[2] }
    static var b1: Reader { readers[3] }
    static var c0: Reader { readers[4] }
    static var c1: Reader { readers[5] }
}

// MARK: Sharing pcscd between the live suites

// MARK: Cards, manifests, kernels

/// The package's `Config` folder, found from this file's path.
let configDirectory: String = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent()  // IntegrationTests
    .deletingLastPathComponent()  // Tests
    .deletingLastPathComponent()  // package root
    .appendingPathComponent("Config").path

func loadCard(_ file: String) throws -> any VirtualCard {
    try CardProfiles.load(contentsOf: configDirectory + "/cards/" + file)
}

/// A manifest with one `pcsc` plugin that selects `readers`, and one lane per entry of `lanes`, each claiming one
/// reader by its exact name.
func pcscManifest(
    lanes: [(lane: String, reader: LivePCSCD.Reader)],
    exclusive: Bool = false,
    maxWaitMs: Int = 30_000
) throws -> Manifest {
    func quoted(_ text: String) -> String { "\"\(text)\"" }
    let readerNames = lanes.map { quoted($0.reader.name) }.joined(separator: ", ")
    let laneObjects = lanes.map { lane in
        """
        { "id": \(quoted(lane.lane)), "readerNames": [\(quoted(lane.reader.name))], "queue": { "maxWaitMs": \(maxWaitMs) } }
        """
    }
    let text = """
        {
          "schemaVersion": 1,
          "plugins": [ { "id": "pcsc", "type": "pcsc", "config": { "readerNames": [\(readerNames)], "exclusive": \(exclusive) } } ],
          "lanes": [\(laneObjects.joined(separator: ", "))]
        }
        """
    return try Manifest.parse(Array(text.utf8), baseDirectory: configDirectory, registry: BuiltinPlugins.registry)
}

/// Takes the cards out, then waits until pcscd has noticed: it polls vpcd readers every 400 ms
/// (`PCSCLITE_STATUS_POLL_RATE`), and until then it still reports the old card present, so a card inserted at once
/// on the same reader (by the next test) would meet a stale connection.
func removeAndSettle(_ hosts: [VPCDCardHost]) async {
    for host in hosts { await host.remove() }
    try? await Task.sleep(for: .milliseconds(600))
}

struct Timeout: Error, CustomStringConvertible {
    var description: String
}

/// Runs `body` with a started kernel once `readers` readers are in its pool (at most 10 s), then stops it.
func withKernel<T: Sendable>(
    _ manifest: Manifest,
    readers: Int,
    _ body: @Sendable (Kernel) async throws -> T
) async throws -> T {
    try await Kernel(manifest: manifest, registry: BuiltinPlugins.registry).withRunning { kernel in
        try await waitUntil("\(readers) readers in the pool", within: .seconds(10)) {
            await kernel.snapshot().readers.filter { $0.state == .idle }.count >= readers
        }
        return try await body(kernel)
    }
}

/// Polls `condition` every 20 ms until it holds; throws ``Timeout`` after `limit`.
func waitUntil(
    _ what: String,
    within limit: Duration,
    _ condition: @Sendable () async -> Bool
) async throws {
    let clock = ContinuousClock()
    let end = clock.now + limit
    while !(await condition()) {
        guard clock.now < end else { throw Timeout(description: "not within \(limit): \(what)") }
        try await Task.sleep(for: .milliseconds(20))
    }
}

let transactionDate = TransactionDate(year: 2026, month: 3, day: 14, hour: 9, minute: 26, second: 53)

func purchase(_ amount: Int64 = 2999) -> EMVTransaction {
    EMVTransaction(amountAuthorised: amount, currencyCode: 840, date: transactionDate)
}

/// One payment read on `lane`: the outcome and the reader that served it.
func readPayment(
    _ kernel: Kernel,
    lane: LaneID,
    timeout: Duration = .seconds(10),
    body: @escaping @Sendable (any CardChannel, TapContext) async throws -> Void = { _, _ in }
) async throws -> (outcome: EMVOutcome, reader: ReaderID) {
    try await kernel.tap(lane: lane, options: TapOptions(timeout: timeout)) { channel, context in
        let outcome = try await EMVPaymentCapability().run(purchase(), on: channel, context: context)
        try await body(channel, context)
        return (outcome, context.reader)
    }
}

/// The kernel error code of what `operation` threw (a capability's own error by its `kernelCode`); `nil` when it
/// returned or threw something else.
func errorCode<Value>(_ operation: () async throws -> Value) async -> ProximaError.Code? {
    do {
        _ = try await operation()
        return nil
    } catch let error as ProximaError {
        return error.code
    } catch let error as any ClassifiedError {
        return error.kernelCode
    } catch {
        Issue.record("expected a ProximaError, got \(error)")
        return nil
    }
}

/// Event times of a ``VPCDCardHost``, for timing assertions.
final class HostLog: Sendable {
    private let events = Mutex<[(event: VPCDCardHost.Event, at: ContinuousClock.Instant)]>([])

    func record(_ event: VPCDCardHost.Event) {
        events.withLock { $0.append((event, ContinuousClock.now)) }
    }

    /// When the last presence ended, and why.
    var lastRemoval: (reason: VPCDCardHost.RemovalReason, at: ContinuousClock.Instant)? {
        events.withLock { events in
            for entry in events.reversed() {
                if case .removed(_, _, let reason, _) = entry.event { return (reason, entry.at) }
            }
            return nil
        }
    }
}

/// Watches card presence on readers with a PC/SC transport of its own (as a second PC/SC client would), so a test
/// can wait until pcscd has noticed a card come or go (it polls vpcd readers every 400 ms).
final class PresenceWatcher: Sendable {
    private let transport: PCSCTransport
    private let events = Mutex<[ReaderEvent]>([])

    private init(readers: [LivePCSCD.Reader]) {
        transport = PCSCTransport(id: "watch", configuration: PCSCConfiguration(readerNames: readers.map(\.name)))
    }

    /// Runs `body` while a watcher follows `readers`.
    static func watching<T: Sendable>(
        _ readers: [LivePCSCD.Reader],
        _ body: @Sendable (PresenceWatcher) async throws -> T
    ) async throws -> T {
        let watcher = PresenceWatcher(readers: readers)
        return try await withThrowingTaskGroup(of: T?.self) { group in
            group.addTask {
                try await watcher.transport.run()
                return nil
            }
            group.addTask {
                for await event in watcher.transport.events { watcher.events.withLock { $0.append(event) } }
                return nil
            }
            let result = try await body(watcher)
            group.cancelAll()
            return result
        }
    }

    /// How many times pcscd reported a card leaving `reader`.
    func removals(on reader: LivePCSCD.Reader) -> Int {
        let id = transport.readerID(forReaderNamed: reader.name)
        return events.withLock { $0.filter { $0 == .cardRemoved(id) }.count }
    }

    /// Waits until pcscd reported `count` removals on `reader` in all (at most 3 s).
    func waitForRemovals(_ count: Int, on reader: LivePCSCD.Reader) async throws {
        try await waitUntil("\(count) card removals on \(reader)", within: .seconds(3)) {
            self.removals(on: reader) >= count
        }
    }
}

// MARK: pcscd

enum PCSCD {
    static let socketPath = PCSCDaemon.socketPath
    static let pidPath = PCSCDaemon.pidPath

    static func pid() throws -> pid_t { try PCSCDaemon.pid() }

    /// Kills pcscd with SIGKILL, as a crash would, and waits until it is gone.
    static func kill() async throws {
        let pid = try pid()
        // A pcscd that a test of this process started (after stopping the harness's) is this process's child: it
        // must be reaped here, or its zombie's PID, still in pcscd's PID file, makes the next pcscd believe that
        // another one runs. The harness's own pcscd is reaped by the harness.
        let isChild = parent(of: pid) == getpid()
        #expect(Foundation.kill(pid, SIGKILL) == 0)
        try await waitUntil("pcscd \(pid) gone", within: .seconds(5)) {
            if isChild { _ = waitpid(pid, nil, WNOHANG) }
            return Foundation.kill(pid, 0) != 0
        }
    }

    static func parent(of pid: pid_t) -> pid_t? { PCSCDaemon.parent(of: pid) }

    /// Starts pcscd again with the harness's reader.conf.d; the harness stops every pcscd that runs with it.
    static func start() throws {
        let directory = try #require(LivePCSCD.environment["PROXIMA_PCSCD_CONFIG_DIR"])
        // A killed pcscd leaves its socket and PID file; pcscd removes them when the PID is not running.
        try PCSCDaemon.spawn(
            configDirectory: directory,
            disablePolkit: LivePCSCD.environment["PROXIMA_PCSCD_DISABLE_POLKIT"] == "1"
        )
    }
}
