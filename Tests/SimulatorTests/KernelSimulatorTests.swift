import EMVCommon
import Foundation
import IdentityCapability
import Proxima
import ProximaCore
import ProximaKernel
import ProximaTestSupport
import Synchronization
import Testing

@testable import PaymentCapability

/// The kernel end to end on the simulator transport: routing, events, and every injected fault.
@Suite struct KernelSimulatorTests {
    /// A manifest with one simulator plugin; `readers` are JSON objects for its `readers` array.
    static func manifest(readers: [String], lanes: String) throws -> Manifest {
        let text = """
            {
              "schemaVersion": 1,
              "plugins": [ { "id": "sim", "type": "simulator", "config": { "airTime": false, "readers": [\(readers.joined(separator: ","))] } } ],
              "lanes": \(lanes)
            }
            """
        return try Manifest.parse(
            Array(text.utf8),
            baseDirectory: PackageFiles.configDirectory,
            registry: BuiltinPlugins.registry
        )
    }

    static func reader(_ id: String, faults: String = "{}", card: String = "cards/identity-visa-like.json") -> String {
        """
        { "id": "\(id)", "cards": ["\(card)"], "arrival": { "pattern": "immediate" }, "faults": \(faults) }
        """
    }

    /// Runs `body` with a started kernel, then stops it.
    static func withKernel<T: Sendable>(
        _ manifest: Manifest,
        registry: PluginRegistry = BuiltinPlugins.registry,
        _ body: @Sendable (Kernel) async throws -> T
    ) async throws -> T {
        let expected = manifest.declaredReaders.count
        return try await Kernel(manifest: manifest, registry: registry).withRunning { kernel in
            await kernel.waitForReaders(count: expected)
            return try await body(kernel)
        }
    }

    static func readIdentity(_ kernel: Kernel, lane: LaneID, options: TapOptions = TapOptions()) async throws
        -> CardIdentity
    {
        try await kernel.tap(lane: lane, options: options) { channel, context in
            try await CardIdentityCapability().run(.init(), on: channel, context: context)
        }
    }

    @Test func routesTapsToLaneReadersAndReadsTheCard() async throws {
        let manifest = try Self.manifest(
            readers: [Self.reader("a"), Self.reader("b", card: "cards/identity-multi-aid.json")],
            lanes: #"[{ "id": "one", "readers": ["a"] }, { "id": "two", "readers": ["b"] }]"#
        )
        try await Self.withKernel(manifest) { kernel in
            let one = try await Self.readIdentity(kernel, lane: "one")
            let two = try await Self.readIdentity(kernel, lane: "two")
            #expect(one.applications.map(\.applicationIdentifier.hexString) == ["A0000000031010"])
            #expect(two.applications.count == 2)
            let snapshot = await kernel.snapshot()
            #expect(snapshot.activeLeaseCount == 0)
        }
    }

    @Test func publishesSessionEventsWithLaneAndReader() async throws {
        let manifest = try Self.manifest(readers: [Self.reader("a")], lanes: #"[{ "id": "one", "readers": ["a"] }]"#)
        try await Self.withKernel(manifest) { kernel in
            let events = kernel.events.subscribe()
            _ = try await Self.readIdentity(kernel, lane: "one")
            var kinds: [String] = []
            for await event in events {
                #expect(event.reader == "a")
                #expect(event.lane == "one")
                kinds.append("\(event.kind)".components(separatedBy: "(").first ?? "")
                if case .leaseReleased = event.kind { break }
            }
            #expect(kinds == ["leaseGranted", "readyForTap", "cardDetected", "readCompleted", "leaseReleased"])
        }
    }

    @Test func cardRemovedEndsTheTapAndTheReaderServesTheNext() async throws {
        let manifest = try Self.manifest(
            readers: [Self.reader("a", faults: #"{ "removeAfterExchanges": 0 }"#)],
            lanes: #"[{ "id": "one", "readers": ["a"] }]"#
        )
        try await Self.withKernel(manifest) { kernel in
            let error = await proximaError { try await Self.readIdentity(kernel, lane: "one") }
            #expect(error?.code == .cardRemoved)
            #expect(error?.reader == "a")
            #expect(error?.lane == "one")
            // The reader stayed in rotation: the next tap gets it (and a card), without an exchange.
            let uidLength = try await kernel.tap(lane: "one") { channel, _ in channel.uid.count }
            #expect(uidLength > 0)
            #expect(await kernel.snapshot().readers.first?.state == .idle)
        }
    }

    @Test func muteCardTimesOutAndTheReaderStaysHealthy() async throws {
        let manifest = try Self.manifest(
            readers: [Self.reader("a", faults: #"{ "muteAfterExchanges": 0, "muteTimeoutMs": 20 }"#)],
            lanes: #"[{ "id": "one", "readers": ["a"] }]"#
        )
        try await Self.withKernel(manifest) { kernel in
            let error = await proximaError { try await Self.readIdentity(kernel, lane: "one") }
            #expect(error?.code == .cardTimeout)
            #expect(await kernel.snapshot().readers.first?.state == .idle)
        }
    }

    @Test func corruptedResponseFailsTheReadNamingTheStep() async throws {
        let manifest = try Self.manifest(
            readers: [Self.reader("a", faults: #"{ "corruptResponseAt": 1 }"#)],
            lanes: #"[{ "id": "one", "readers": ["a"] }]"#
        )
        try await Self.withKernel(manifest) { kernel in
            let events = kernel.events.subscribe()
            let error = await #expect(throws: PaymentError.self) { try await Self.readIdentity(kernel, lane: "one") }
            #expect(error?.code == .cardReadFailed)
            #expect(error?.step == "SELECT PPSE")
            #expect(error?.reader == "a")
            // The kernel passes the capability's error through and still classifies it for events.
            for await event in events {
                guard case .readFailed(let code, _) = event.kind else { continue }
                #expect(code == .malformedData)
                break
            }
            #expect(await kernel.snapshot().readers.first?.state == .idle)
        }
    }

    @Test func vanishingReaderFailsTheTapThenReturnsToRotation() async throws {
        let manifest = try Self.manifest(
            readers: [Self.reader("a", faults: #"{ "vanishAfterExchanges": 0, "reappearAfterMs": 30 }"#)],
            lanes: #"[{ "id": "one", "readers": ["a"] }]"#
        )
        try await Self.withKernel(manifest) { kernel in
            let events = kernel.events.subscribe()
            let error = await proximaError { try await Self.readIdentity(kernel, lane: "one") }
            #expect(error?.code == .readerVanished)
            // It comes back by itself and is granted again.
            for await event in events where event.kind == .readerAppeared && event.reader == "a" { break }
            let uidLength = try await kernel.tap(lane: "one") { channel, _ in channel.uid.count }
            #expect(uidLength > 0)
        }
    }

    @Test func failoverMovesTheTapToAnotherReader() async throws {
        let manifest = try Self.manifest(
            readers: [
                Self.reader("a", faults: #"{ "vanishAfterExchanges": 0, "reappearAfterMs": 600000 }"#),
                Self.reader("b"),
            ],
            lanes: #"[{ "id": "one", "readers": ["a", "b"] }]"#
        )
        try await Self.withKernel(manifest) { kernel in
            // Pin the first tap to the faulty reader so the fault is certain, then let failover find "b".
            let first = await proximaError {
                try await Self.readIdentity(kernel, lane: "one", options: TapOptions(reader: "a"))
            }
            #expect(first?.code == .readerVanished)
            let served = try await kernel.tap(lane: "one", options: TapOptions(failover: true)) { channel, context in
                _ = try await CardIdentityCapability().run(.init(), on: channel, context: context)
                return context.reader
            }
            #expect(served == "b")
        }
    }

    @Test func tapWithoutACardEndsAtItsDeadline() async throws {
        let manifest = try Self.manifest(
            readers: [
                #"{ "id": "a", "cards": ["cards/identity-visa-like.json"], "arrival": { "pattern": "fixed", "intervalMs": 3600000 } }"#
            ],
            lanes: #"[{ "id": "one", "readers": ["a"] }]"#
        )
        try await Self.withKernel(manifest) { kernel in
            let error = await proximaError {
                try await Self.readIdentity(kernel, lane: "one", options: TapOptions(timeout: .milliseconds(30)))
            }
            #expect(error?.code == .deadlineExceeded)
            #expect(await kernel.snapshot().activeLeaseCount == 0)
        }
    }

    @Test func cancellingAWaitingTapReleasesItsLease() async throws {
        let manifest = try Self.manifest(
            readers: [
                #"{ "id": "a", "cards": ["cards/identity-visa-like.json"], "arrival": { "pattern": "fixed", "intervalMs": 3600000 } }"#
            ],
            lanes: #"[{ "id": "one", "readers": ["a"] }]"#
        )
        try await Self.withKernel(manifest) { kernel in
            let events = kernel.events.subscribe()
            let tap = Task { try await Self.readIdentity(kernel, lane: "one") }
            for await event in events where event.kind == .readyForTap { break }
            tap.cancel()
            let error = await proximaError { try await tap.value }
            #expect(error?.code == .cancelled)
            #expect(await kernel.snapshot().activeLeaseCount == 0)
        }
    }

    @Test func unknownLaneIsRefused() async throws {
        let manifest = try Self.manifest(readers: [Self.reader("a")], lanes: #"[{ "id": "one", "readers": ["a"] }]"#)
        try await Self.withKernel(manifest) { kernel in
            let error = await proximaError { try await Self.readIdentity(kernel, lane: "nine") }
            #expect(error?.code == .noSuchLane)
        }
    }

    @Test func failFastLaneSaysReaderBusy() async throws {
        let manifest = try Self.manifest(
            readers: [
                #"{ "id": "a", "cards": ["cards/identity-visa-like.json"], "arrival": { "pattern": "fixed", "intervalMs": 3600000 } }"#
            ],
            lanes: #"[{ "id": "one", "readers": ["a"], "queue": { "policy": "failFast" } }]"#
        )
        try await Self.withKernel(manifest) { kernel in
            let events = kernel.events.subscribe()
            let holder = Task { try await Self.readIdentity(kernel, lane: "one") }
            for await event in events where event.kind == .readyForTap { break }
            let error = await proximaError { try await Self.readIdentity(kernel, lane: "one") }
            #expect(error?.code == .readerBusy)
            holder.cancel()
            _ = await proximaError { try await holder.value }
        }
    }
}

/// Plugin lifecycle: start order, reverse stop order, and a failing plugin that does not stop the kernel.
@Suite struct KernelPluginLifecycleTests {
    final class Log: Sendable {
        let entries = Mutex<[String]>([])
        func add(_ entry: String) { entries.withLock { $0.append(entry) } }
        var all: [String] { entries.withLock { $0 } }
    }

    /// A transport that records when it starts and stops and reports no readers.
    final class RecordingTransport: Transport {
        let id: String
        let log: Log
        let declaredReaders: [ReaderInfo]? = []
        let events: AsyncStream<ReaderEvent>
        private let continuation: AsyncStream<ReaderEvent>.Continuation
        init(id: String, log: Log) {
            self.id = id
            self.log = log
            (events, continuation) = AsyncStream.makeStream()
        }
        func run() async throws {
            log.add("start \(id)")
            let never = AsyncStream<Void> { _ in }
            for await _ in never {}
            log.add("stop \(id)")
            continuation.finish()
        }
        func connect(to reader: ReaderID, options: ConnectOptions) async throws -> any CardChannel {
            throw ProximaError(.noSuchReader, "none")
        }
    }

    @Test func pluginsStartInOrderStopInReverseAndAFailureIsReported() async throws {
        let log = Log()
        var registry = PluginRegistry()
        registry.register(TransportType(name: "recording", summary: "test") { RecordingTransport(id: $0.id, log: log) })
        registry.register(
            TransportType(name: "broken", summary: "test") { context in
                throw ProximaError(.pluginFailed, "\(context.configurationPath): device /dev/null is not a reader")
            }
        )
        let text = """
            { "schemaVersion": 1,
              "plugins": [ { "id": "first", "type": "recording" }, { "id": "bad", "type": "broken", "enabled": true },
                           { "id": "second", "type": "recording" } ],
              "lanes": [ { "id": "one", "overflowToShared": true } ] }
            """
        // The loader reports the broken plugin's configuration too; build the kernel from the entries directly.
        let manifest = Manifest(
            schemaVersion: 1,
            sourcePath: nil,
            baseDirectory: "/",
            dataDirectory: "/tmp",
            plugins: try Self.entries(text),
            lanes: [LaneConfiguration(id: "one", overflowToShared: true)],
            capabilities: [:],
            warnings: [],
            declaredReaders: []
        )
        let kernel = Kernel(manifest: manifest, registry: registry)
        #expect(kernel.pluginFailures.map(\.pluginID) == ["bad"])
        #expect(kernel.pluginFailures.first?.reason.contains("is not a reader") == true)
        let run = Task { await kernel.run() }
        while log.all.count < 2 { await Task.yield() }
        #expect(log.all == ["start first", "start second"])
        kernel.triggerGracefulShutdown()
        await run.value
        #expect(log.all == ["start first", "start second", "stop second", "stop first"])
    }

    static func entries(_ text: String) throws -> [PluginEntry] {
        let json = try JSONValue.parse(text)
        guard case .array(let plugins)? = json["plugins"] else { return [] }
        return plugins.enumerated().map { index, plugin in
            let id = if case .string(let s)? = plugin["id"] { s } else { "" }
            let type = if case .string(let s)? = plugin["type"] { s } else { "" }
            return PluginEntry(
                id: id,
                type: type,
                enabled: true,
                load: .builtin,
                configuration: .object([]),
                path: "plugins[\(index)]"
            )
        }
    }
}
