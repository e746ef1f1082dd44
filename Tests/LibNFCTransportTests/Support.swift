import Foundation
import LibNFCTransport
import PaymentCapability
import Proxima
import ProximaCardEmulator
import ProximaCore
import ProximaKernel
import Synchronization
import Testing

/// The package's `Config` folder, found from this file's path.
let configDirectory: String = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent()  // LibNFCTransportTests
    .deletingLastPathComponent()  // Tests
    .deletingLastPathComponent()  // package root
    .appendingPathComponent("Config").path

func loadCard(_ file: String) throws -> any VirtualCard {
    try CardProfiles.load(contentsOf: configDirectory + "/cards/" + file)
}

/// A started PN532 emulator with `card` in its field, on a symbolic link with a fresh temporary name (so the test can
/// stop and restart it under the same name; ``PN532CardHost/stop()`` removes the link).
func startedHost(_ card: (any VirtualCard)?) throws -> PN532CardHost {
    let link = FileManager.default.temporaryDirectory.appendingPathComponent("proxima-pn532-\(UUID().uuidString)")
    let host = PN532CardHost(card: card, linkPath: link.path)
    try host.start()
    return host
}

struct Timeout: Error, CustomStringConvertible {
    var description: String
}

/// Every event of a transport, kept in order, with a way to wait for the next one that matches.
final class EventLog: Sendable {
    private struct Waiter {
        var id: Int
        var predicate: @Sendable (ReaderEvent) -> Bool
        var continuation: CheckedContinuation<Void, Never>
    }
    private struct State {
        var events: [ReaderEvent] = []
        var waiters: [Waiter] = []
        var nextID = 0
    }
    private let state = Mutex(State())

    func record(_ event: ReaderEvent) {
        let ready = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.events.append(event)
            // Each predicate sees each event once (a predicate may count).
            var ready: [CheckedContinuation<Void, Never>] = []
            var waiting: [Waiter] = []
            for waiter in state.waiters {
                if waiter.predicate(event) { ready.append(waiter.continuation) } else { waiting.append(waiter) }
            }
            state.waiters = waiting
            return ready
        }
        for continuation in ready { continuation.resume() }
    }

    var events: [ReaderEvent] { state.withLock { $0.events } }
    var count: Int { state.withLock { $0.events.count } }

    /// Waits until an event matching `predicate` is recorded at index `from` or later; throws after `limit`. The
    /// predicate sees each event once, in order, under the log's lock (so it must not read the log).
    func wait(
        from: Int = 0,
        within limit: Duration = .seconds(10),
        for what: String,
        _ predicate: @escaping @Sendable (ReaderEvent) -> Bool
    ) async throws {
        let id = state.withLock { state -> Int in
            state.nextID += 1
            return state.nextID
        }
        let found = await withTaskGroup(of: Bool.self) { group in
            group.addTask {
                await withCheckedContinuation { continuation in
                    let seen = self.state.withLock { state -> Bool in
                        if state.events.dropFirst(from).contains(where: predicate) { return true }
                        state.waiters.append(Waiter(id: id, predicate: predicate, continuation: continuation))
                        return false
                    }
                    if seen { continuation.resume() }
                }
                return true
            }
            group.addTask {
                try? await Task.sleep(for: limit)
                return false
            }
            let first = await group.next() ?? false
            if !first {
                let waiter = state.withLock { state -> Waiter? in
                    guard let index = state.waiters.firstIndex(where: { $0.id == id }) else { return nil }
                    return state.waiters.remove(at: index)
                }
                waiter?.continuation.resume()
            }
            group.cancelAll()
            return first
        }
        if !found { throw Timeout(description: "not within \(limit): \(what); events: \(events)") }
    }
}

/// Runs `body` while `transport` runs and its events go to a log.
func withTransport<T: Sendable>(
    _ transport: LibNFCTransport,
    _ body: @Sendable (EventLog) async throws -> T
) async throws -> T {
    let log = EventLog()
    return try await withThrowingTaskGroup(of: T?.self) { group in
        group.addTask {
            try await transport.run()
            return nil
        }
        group.addTask {
            for await event in transport.events { log.record(event) }
            return nil
        }
        let result = try await body(log)
        group.cancelAll()
        return result
    }
}

/// A transport over the emulators' connstrings, polling fast so tests do not wait.
func transport(for hosts: [PN532CardHost], apduTimeout: Duration = .seconds(1)) -> LibNFCTransport {
    LibNFCTransport(
        id: "nfc",
        configuration: LibNFCConfiguration(
            devices: hosts.map(\.connstring),
            pollPeriod: .milliseconds(20),
            apduTimeout: apduTimeout
        )
    )
}

let selectPPSE = try! CommandAPDU(
    cla: 0x00,
    ins: 0xA4,
    p1: 0x04,
    p2: 0x00,
    data: Array("2PAY.SYS.DDF01".utf8),
    expectedLength: 256
)

/// A manifest with one `libnfc` plugin over `connstrings`, one lane per device.
func libnfcManifest(_ connstrings: [String]) throws -> Manifest {
    func quoted(_ text: String) -> String { "\"\(text)\"" }
    let lanes = connstrings.enumerated().map { index, connstring in
        """
        { "id": "lane-\(index)", "readerNames": [\(quoted(connstring))], "queue": { "maxWaitMs": 20000 } }
        """
    }
    let text = """
        {
          "schemaVersion": 1,
          "plugins": [ { "id": "nfc", "type": "libnfc", "config": {
            "devices": [\(connstrings.map(quoted).joined(separator: ", "))], "pollPeriodMs": 20, "apduTimeoutMs": 1000 } } ],
          "lanes": [\(lanes.joined(separator: ", "))]
        }
        """
    return try Manifest.parse(Array(text.utf8), baseDirectory: configDirectory, registry: BuiltinPlugins.registry)
}

let transactionDate = TransactionDate(year: 2026, month: 3, day: 14, hour: 9, minute: 26, second: 53)

/// One payment read on `lane`: the outcome and the reader that served it.
func readPayment(_ kernel: Kernel, lane: LaneID) async throws -> (outcome: EMVOutcome, reader: ReaderID) {
    try await kernel.tap(lane: lane, options: TapOptions(timeout: .seconds(15))) { channel, context in
        let transaction = EMVTransaction(amountAuthorised: 2999, currencyCode: 840, date: transactionDate)
        let outcome = try await EMVPaymentCapability().run(transaction, on: channel, context: context)
        return (outcome, context.reader)
    }
}

/// Runs `body` with a started kernel once `readers` readers are idle in its pool (at most 10 s), then stops it.
func withKernel<T: Sendable>(
    _ manifest: Manifest,
    readers: Int,
    _ body: @Sendable (Kernel) async throws -> T
) async throws -> T {
    let kernel = Kernel(manifest: manifest, registry: BuiltinPlugins.registry)
    return try await withThrowingTaskGroup(of: T?.self) { group in
        group.addTask {
            await kernel.run()
            return nil
        }
        let clock = ContinuousClock()
        let end = clock.now + .seconds(10)
        while await kernel.snapshot().readers.filter({ $0.state == .idle }).count < readers {
            guard clock.now < end else { throw Timeout(description: "\(readers) readers not idle within 10 s") }
            try await Task.sleep(for: .milliseconds(20))
        }
        let result = try await body(kernel)
        group.cancelAll()
        return result
    }
}

/// The kernel error code of what `operation` threw (a capability's own error by its `kernelCode`).
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
