import Foundation
import PCSCTransport
import Proxima
import ProximaCardEmulator
import ProximaCore
import ProximaKernel
import ProximaTestSupport
import Synchronization
import Testing

@testable import PaymentCapability

// pcscd and its vpcd readers come from `LivePCSCD` (ProximaTestSupport); these are the integration tests' views.

extension LivePCSCD.Reader {
    var endpoint: VPCDCardHost.Endpoint { VPCDCardHost.Endpoint(port: port) }
    var id: ReaderID { ReaderID("pcsc/" + name) }
}

extension LivePCSCD {
    /// Readers only the integration tests use (`PCSCTransportTests` takes the first two).
    static var b0: Reader { readers[2] }
    static var b1: Reader { readers[3] }
    static var c0: Reader { readers[4] }
    static var c1: Reader { readers[5] }
}

// MARK: Cards, manifests, kernels

func loadCard(_ file: String) throws -> any VirtualCard {
    try CardProfiles.load(contentsOf: PackageFiles.cardsDirectory + "/" + file)
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
    return try Manifest.parse(
        Array(text.utf8),
        baseDirectory: PackageFiles.configDirectory,
        registry: BuiltinPlugins.registry
    )
}

/// Takes the cards out, then waits until pcscd has noticed: it polls vpcd readers every 400 ms
/// (`PCSCLITE_STATUS_POLL_RATE`), and until then it still reports the old card present, so a card inserted at once
/// on the same reader (by the next test) would meet a stale connection.
func removeAndSettle(_ hosts: [VPCDCardHost]) async {
    for host in hosts { await host.remove() }
    try? await Task.sleep(for: .milliseconds(600))
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

/// The events of a ``VPCDCardHost``.
final class HostLog: Sendable {
    private let events = Mutex<[VPCDCardHost.Event]>([])

    func record(_ event: VPCDCardHost.Event) {
        events.withLock { $0.append(event) }
    }

    /// Why the last presence ended.
    var lastRemoval: VPCDCardHost.RemovalReason? {
        events.withLock { events in
            for event in events.reversed() {
                if case .removed(_, _, let reason, _) = event { return reason }
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
