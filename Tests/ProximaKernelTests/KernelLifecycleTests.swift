import ProximaCore
import Synchronization
import Testing

@testable import ProximaKernel

// MARK: Test transports

/// Lines appended from many tasks, in order.
final class LifecycleLog: Sendable {
    private let entries = Mutex<[String]>([])
    func add(_ entry: String) { entries.withLock { $0.append(entry) } }
    var all: [String] { entries.withLock { $0 } }
}

/// A one-shot gate a task waits at, ignoring cancellation (so a test can hold a stopping transport).
final class Gate: Sendable {
    private let state = Mutex<(open: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))
    func open() {
        let waiters = state.withLock { state in
            state.open = true
            defer { state.waiters.removeAll() }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }
    func wait() async {
        await withCheckedContinuation { continuation in
            let isOpen = state.withLock { state in
                if !state.open { state.waiters.append(continuation) }
                return state.open
            }
            if isOpen { continuation.resume() }
        }
    }
}

/// A transport that logs its start and its stop (which takes several suspensions, so overlapping stops would
/// interleave in the log), optionally holding its stop at `stopGate`, and that reports the readers the test asks it
/// to.
final class LoggingTransport: Transport {
    let id: String
    let log: LifecycleLog
    let declaredReaders: [ReaderInfo]? = nil
    let events: AsyncStream<ReaderEvent>
    let continuation: AsyncStream<ReaderEvent>.Continuation
    let stopGate: Gate?
    /// Opened when this transport begins to stop.
    let stopping = Gate()

    init(id: String, log: LifecycleLog, stopGate: Gate? = nil) {
        self.id = id
        self.log = log
        self.stopGate = stopGate
        (events, continuation) = AsyncStream.makeStream()
    }

    func run() async throws {
        log.add("start \(id)")
        let never = AsyncStream<Void> { _ in }
        for await _ in never {}
        log.add("stopping \(id)")
        stopping.open()
        await stopGate?.wait()
        for _ in 0..<5 { await Task.yield() }
        log.add("stopped \(id)")
    }

    func connect(to reader: ReaderID, options: ConnectOptions) async throws -> any CardChannel {
        ScriptedChannel(reader: reader)
    }
}

/// A capability's own error type, as the payment capability's `PaymentError` is.
struct CapabilityFailure: ClassifiedError, Equatable {
    var kernelCode: ProximaError.Code { .malformedData }
    var description: String { "the card answered nonsense" }
}

/// A kernel over `transports` (plugin ids in order) and one lane `L` that claims readers `r1`, `r2` and overflows
/// to the shared pool, on a manual clock.
func lifecycleKernel(
    _ transports: [LoggingTransport],
    lanes: [LaneConfiguration] = [LaneConfiguration(id: "L", readerIDs: ["r1", "r2"], overflowToShared: true)],
    clock: ManualClock = ManualClock()
) -> Kernel {
    var registry = PluginRegistry()
    for transport in transports {
        registry.register(TransportType(name: "t-\(transport.id)", summary: "test") { _ in transport })
    }
    let entries = transports.enumerated().map { index, transport in
        PluginEntry(
            id: transport.id,
            type: "t-\(transport.id)",
            enabled: true,
            load: .builtin,
            configuration: .object([]),
            path: "plugins[\(index)]"
        )
    }
    let manifest = Manifest(
        baseDirectory: "/",
        dataDirectory: "/tmp",
        plugins: entries,
        lanes: lanes
    )
    return Kernel(manifest: manifest, registry: registry, clock: KernelClock(clock))
}

// MARK: Lifecycle

/// The code a tap failed with and the log at that moment.
final class TapFailure: Sendable {
    let value = Mutex<(code: ProximaError.Code?, logAtFailure: [String])>((nil, []))
}

@Suite struct KernelLifecycleTests {
    /// Graceful shutdown: transports start in manifest order and stop in reverse, each stop finished before the
    /// next transport is asked; waiting taps fail with `shuttingDown` only after every transport stopped; the
    /// event streams end.
    @Test func gracefulShutdownStopsInReverseOrderOneAtATime() async throws {
        let log = LifecycleLog()
        let transports = ["a", "b", "c"].map { LoggingTransport(id: $0, log: log) }
        let kernel = lifecycleKernel(transports, lanes: [LaneConfiguration(id: "L", readerIDs: ["none"])])
        let events = kernel.events.subscribe()
        let tapFailure = TapFailure()
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await kernel.run() }
            while log.all.count < 3 { await Task.yield() }
            #expect(log.all == ["start a", "start b", "start c"])
            group.addTask {
                do {
                    _ = try await kernel.tap(lane: "L") { _, _ in 0 }
                } catch let error as ProximaError {
                    tapFailure.value.withLock { $0 = (error.code, log.all) }
                }
            }
            while await kernel.snapshot().waiting.isEmpty { await Task.yield() }
            kernel.triggerGracefulShutdown()
            try await group.waitForAll()
        }
        let stops = ["stopping c", "stopped c", "stopping b", "stopped b", "stopping a", "stopped a"]
        #expect(log.all == ["start a", "start b", "start c"] + stops)
        let (code, logAtFailure) = tapFailure.value.withLock { $0 }
        #expect(code == .shuttingDown)
        #expect(logAtFailure.suffix(6) == ArraySlice(stops), "the waiting tap failed before the transports stopped")
        for await _ in events {}  // ends: the kernel finished its event streams
        #expect(await kernel.snapshot().isShutDown)
    }

    /// Cancelling the task of `run()` escalates: every transport is asked to stop at once. Transport `b` (last,
    /// so first in graceful order) holds its stop until `a` has begun stopping, which only concurrent stops allow.
    @Test func cancellationStopsEveryTransportAtOnce() async throws {
        let log = LifecycleLog()
        let gate = Gate()
        let a = LoggingTransport(id: "a", log: log)
        let b = LoggingTransport(id: "b", log: log, stopGate: gate)
        let kernel = lifecycleKernel([a, b])
        let run = Task { await kernel.run() }
        while log.all.count < 2 { await Task.yield() }
        run.cancel()
        await a.stopping.wait()
        gate.open()
        await run.value
        #expect(Set(log.all) == ["start a", "start b", "stopping a", "stopped a", "stopping b", "stopped b"])
        #expect(log.all.firstIndex(of: "stopping a")! < log.all.firstIndex(of: "stopped b")!)
        #expect(await kernel.snapshot().isShutDown)
    }

    /// `withRunning` runs the kernel around its body and shuts down gracefully afterwards, also when it throws.
    @Test func withRunningShutsDownGracefullyAfterTheBody() async throws {
        let log = LifecycleLog()
        let kernel = lifecycleKernel([LoggingTransport(id: "a", log: log), LoggingTransport(id: "b", log: log)])
        let value = try await kernel.withRunning { kernel in
            while log.all.count < 2 { await Task.yield() }
            return kernel.manifest.plugins.count
        }
        #expect(value == 2)
        #expect(log.all == ["start a", "start b", "stopping b", "stopped b", "stopping a", "stopped a"])

        let second = lifecycleKernel([LoggingTransport(id: "c", log: log)])
        await #expect(throws: CapabilityFailure()) {
            try await second.withRunning { _ in throw CapabilityFailure() }
        }
        #expect(log.all.suffix(2) == ["stopping c", "stopped c"] || !log.all.contains("start c"))
        #expect(await second.snapshot().isShutDown)
    }

    /// `shutdown()` before `run()`: nothing starts, the pool refuses taps, `run()` returns at once.
    @Test func shutdownBeforeRunStartsNothing() async throws {
        let log = LifecycleLog()
        let kernel = lifecycleKernel([LoggingTransport(id: "a", log: log)])
        await kernel.shutdown()
        await kernel.run()
        #expect(log.all.isEmpty)
        await #expect(throws: ProximaError(.shuttingDown)) { try await kernel.tap(lane: "L") { _, _ in 0 } }
    }

    /// A plugin that fails is published as `pluginFailed`, not as a reader fault.
    @Test func aFailingPluginIsPublishedAsPluginFailed() async throws {
        var registry = PluginRegistry()
        registry.register(
            TransportType(name: "broken", summary: "test") { _ in
                throw ProximaError(.pluginFailed, "device /dev/null is not a reader")
            }
        )
        registry.register(TransportType(name: "failing", summary: "test") { _ in FailingTransport() })
        let manifest = Manifest(
            baseDirectory: "/",
            dataDirectory: "/tmp",
            plugins: [
                PluginEntry(
                    id: "bad",
                    type: "broken",
                    enabled: true,
                    load: .builtin,
                    configuration: .object([]),
                    path: "p0"
                ),
                PluginEntry(
                    id: "dies",
                    type: "failing",
                    enabled: true,
                    load: .builtin,
                    configuration: .object([]),
                    path: "p1"
                ),
            ],
            lanes: [LaneConfiguration(id: "L", overflowToShared: true)]
        )
        let kernel = Kernel(manifest: manifest, registry: registry, clock: KernelClock(ManualClock()))
        #expect(kernel.pluginFailures.map(\.pluginID) == ["bad"])
        let events = kernel.events.subscribe()
        try await kernel.withRunning { kernel in
            for await event in events {
                if case .pluginFailed(let id, let reason) = event.kind {
                    #expect(id == "dies")
                    #expect(reason.contains("link to the device lost"))
                    #expect(event.reader == nil)
                    break
                }
            }
        }
        #expect(kernel.pluginFailures.map(\.pluginID) == ["bad", "dies"])
    }

    struct FailingTransport: Transport {
        let id = "dies"
        let declaredReaders: [ReaderInfo]? = []
        let events = AsyncStream<ReaderEvent> { _ in }
        func run() async throws { throw ProximaError(.transmitFailed, "link to the device lost") }
        func connect(to reader: ReaderID, options: ConnectOptions) async throws -> any CardChannel {
            throw ProximaError(.noSuchReader, "none")
        }
    }
}

// MARK: Waiting until a lane can be served

@Suite struct WaitUntilServableTests {
    static func kernel(_ clock: ManualClock) -> Kernel {
        lifecycleKernel(
            [],
            lanes: [
                LaneConfiguration(id: "L", readerIDs: ["r1"], overflowToShared: true),
                LaneConfiguration(id: "own", readerIDs: ["r1"]),
                LaneConfiguration(id: "other", readerIDs: ["r9"]),
            ],
            clock: clock
        )
    }

    /// Runs `wait` in a task and returns its answer, waiting until the task is inside the pool first.
    static func answer(
        _ kernel: Kernel,
        clock: ManualClock,
        while act: () async -> Void,
        _ wait: @escaping @Sendable () async -> Bool
    ) async -> Bool {
        await withTaskGroup(of: Bool.self) { group in
            group.addTask { await wait() }
            await clock.waitForSleepers(1)  // the timeout's sleep: the wait has begun
            await act()
            let answer = await group.next() ?? false
            group.cancelAll()
            return answer
        }
    }

    @Test func trueAtOnceWhenAReaderServesTheLane() async throws {
        let clock = ManualClock()
        let kernel = Self.kernel(clock)
        await kernel.pool.readerAppeared(readerInfo("r1"))
        // Busy counts: the lane can be served, the tap would queue.
        let lease = try await kernel.pool.lease(LeaseRequest(lane: "L"))
        #expect(await kernel.waitUntilServable(lane: "L", timeout: .seconds(1)))
        #expect(await kernel.waitUntilServable(lane: "own", timeout: .zero))
        await kernel.pool.release(lease)
        // A lane without a present reader, a lane not in the manifest.
        #expect(await kernel.waitUntilServable(lane: "other", timeout: .zero) == false)
        #expect(await kernel.waitUntilServable(lane: "nope", timeout: nil) == false)
    }

    @Test func trueOnceAReaderAppears() async throws {
        let clock = ManualClock()
        let kernel = Self.kernel(clock)
        let served = await Self.answer(kernel, clock: clock) {
            await kernel.pool.readerAppeared(readerInfo("r9"))  // another lane's reader: not yet
            #expect(await kernel.pool.snapshot().readers.count == 1)
            await kernel.pool.readerAppeared(readerInfo("r1"))
        } _: {
            await kernel.waitUntilServable(lane: "own", timeout: .seconds(5))
        }
        #expect(served)
    }

    @Test func trueOnceAFaultedReaderRecovers() async throws {
        let clock = ManualClock()
        let kernel = Self.kernel(clock)
        await kernel.pool.readerAppeared(readerInfo("r1"))
        await kernel.pool.readerFaulted("r1", reason: "RF field error")
        let served = await Self.answer(kernel, clock: clock) {
            await kernel.pool.readerRecovered("r1")
        } _: {
            await kernel.waitUntilServable(lane: "own", timeout: .seconds(5))
        }
        #expect(served)
    }

    @Test func falseAtTheTimeout() async throws {
        let clock = ManualClock()
        let kernel = Self.kernel(clock)
        await kernel.pool.readerAppeared(readerInfo("r9"))
        let served = await Self.answer(kernel, clock: clock) {
            clock.advance(by: .seconds(5))
        } _: {
            await kernel.waitUntilServable(lane: "own", timeout: .seconds(5))
        }
        #expect(served == false)
    }

    /// A pinned request waits for that reader only, whatever the lane claims; extended length is honoured.
    @Test func pinnedReaderAndExtendedLength() async throws {
        let clock = ManualClock()
        let kernel = Self.kernel(clock)
        await kernel.pool.readerAppeared(readerInfo("r1"))
        #expect(await kernel.waitUntilServable(lane: "own", pinnedReader: "r9", timeout: .zero) == false)
        let served = await Self.answer(kernel, clock: clock) {
            await kernel.pool.readerAppeared(readerInfo("r2"))  // not the pinned one
            await kernel.pool.readerAppeared(readerInfo("r9"))
        } _: {
            await kernel.waitUntilServable(lane: "own", pinnedReader: "r9", timeout: .seconds(5))
        }
        #expect(served)
        await kernel.pool.readerAppeared(readerInfo("short", extended: false))
        #expect(await kernel.waitUntilServable(lane: "L", pinnedReader: "short", timeout: .zero))
        #expect(
            await kernel.waitUntilServable(lane: "L", pinnedReader: "short", needsExtendedLength: true, timeout: .zero)
                == false
        )
    }

    /// A reader no lane claims serves overflowing lanes only.
    @Test func sharedReaderServesOverflowingLanes() async throws {
        let clock = ManualClock()
        let kernel = Self.kernel(clock)
        let served = await Self.answer(kernel, clock: clock) {
            await kernel.pool.readerAppeared(readerInfo("shared-1"))
        } _: {
            await kernel.waitUntilServable(lane: "L", timeout: .seconds(5))
        }
        #expect(served)
        #expect(await kernel.waitUntilServable(lane: "own", timeout: .zero) == false)
    }

    @Test func falseWhenTheKernelShutsDown() async throws {
        let clock = ManualClock()
        let kernel = Self.kernel(clock)
        let served = await Self.answer(kernel, clock: clock) {
            await kernel.shutdown()
        } _: {
            await kernel.waitUntilServable(lane: "own", timeout: .seconds(5))
        }
        #expect(served == false)
    }
}

// MARK: Causes kept through the kernel

@Suite struct KernelErrorCauseTests {
    /// Runs `body` with a running kernel whose one transport has reported reader `r1`.
    static func withReaderR1(
        lanes: [LaneConfiguration]? = nil,
        clock: ManualClock = ManualClock(),
        _ body: (Kernel) async throws -> Void
    ) async throws {
        let transport = LoggingTransport(id: "t", log: LifecycleLog())
        let kernel =
            lanes.map { lifecycleKernel([transport], lanes: $0, clock: clock) }
            ?? lifecycleKernel([transport], clock: clock)
        try await kernel.withRunning { kernel in
            transport.continuation.yield(.appeared(readerInfo("r1")))
            await kernel.waitForReaders(count: 1)
            try await body(kernel)
        }
    }

    /// The deadline passes while the capability works; what the capability failed with is the cause.
    @Test func deadlineKeepsTheCapabilitysError() async throws {
        let clock = ManualClock()
        try await Self.withReaderR1(clock: clock) { kernel in
            let failure = await withTaskGroup(of: (any Error)?.self) { group in
                group.addTask {
                    do {
                        _ = try await kernel.tap(lane: "L", options: TapOptions(timeout: .seconds(2))) { _, _ in
                            do {
                                try await clock.sleep(for: .seconds(60))
                            } catch {
                                throw CapabilityFailure()  // as a capability does when its exchange is cut
                            }
                            return 0
                        }
                        return nil
                    } catch {
                        return error
                    }
                }
                await clock.waitForSleepers(2)  // the tap's deadline and the body
                clock.advance(by: .seconds(2))
                return await group.next() ?? nil
            }
            let error = try #require(failure as? ProximaError)
            #expect(error.code == .deadlineExceeded)
            #expect(error.lane == "L")
            #expect(error.cause(CapabilityFailure.self) == CapabilityFailure())
        }
    }

    /// A tap's canceller (`cancelRead()`) ends it, with or without a deadline, through the tap's own task: the
    /// caller's task is not cancelled, and a tap that already ended keeps its result. Without the canceller the tap
    /// would wait forever: the time limit turns that into a failure.
    @Test(.timeLimit(.minutes(1)), arguments: [nil, Duration.seconds(60)])
    func cancellerEndsTheTapAndOnlyTheTap(timeout: Duration?) async throws {
        let clock = ManualClock()
        try await Self.withReaderR1(clock: clock) { kernel in
            let canceller = TaskCanceller()
            var cancellable = TapOptions(timeout: timeout)
            cancellable.canceller = canceller
            let options = cancellable
            let inBody = AsyncSignal()
            let failure = await withTaskGroup(of: (any Error)?.self) { group in
                group.addTask {
                    do {
                        _ = try await kernel.tap(lane: "L", options: options) { _, _ in
                            inBody.set()
                            try await clock.sleep(for: .seconds(600))
                            return 0
                        }
                        return nil
                    } catch {
                        return error
                    }
                }
                await inBody.wait()
                canceller.cancel()
                return await group.next() ?? nil
            }
            let error = try #require(failure as? ProximaError)
            #expect(error.code == .cancelled, "\(error)")
            #expect(!Task.isCancelled)
            // The reader is free again, and a tap whose canceller fires after it ended keeps its result.
            let later = TaskCanceller()
            cancellable.canceller = later
            let value = try await kernel.tap(lane: "L", options: cancellable) { _, _ in 7 }
            later.cancel()
            #expect(value == 7)
        }
    }

    /// The reader faults during the exchange and failover finds no other reader before the deadline: the
    /// capability's error is still reachable through the chain of causes.
    @Test func failoverKeepsTheAbandonedReadersCause() async throws {
        let clock = ManualClock()
        try await Self.withReaderR1(lanes: [LaneConfiguration(id: "L", readerIDs: ["r1"])], clock: clock) { kernel in
            let failure = await withTaskGroup(of: (any Error)?.self) { group in
                group.addTask {
                    do {
                        let options = TapOptions(timeout: .seconds(3), failover: true)
                        _ = try await kernel.tap(lane: "L", options: options) { channel, _ in
                            await kernel.pool.readerFaulted(channel.reader, reason: "RF field error")
                            throw CapabilityFailure()
                        }
                        return nil
                    } catch {
                        return error
                    }
                }
                // The retry waits for a reader; then the deadline passes.
                while await kernel.snapshot().waiting.isEmpty { await Task.yield() }
                clock.advance(by: .seconds(3))
                return await group.next() ?? nil
            }
            let error = try #require(failure as? ProximaError)
            #expect([.deadlineExceeded, .readerUnavailable].contains(error.code), "\(error)")
            #expect(error.cause(CapabilityFailure.self) == CapabilityFailure(), "\(error)")
            var chain: [ProximaError.Code] = [error.code]
            var next = error.underlying
            while let inner = next as? ProximaError {
                chain.append(inner.code)
                next = inner.underlying
            }
            #expect(chain.contains(.readerFaulted), "\(chain)")
        }
    }

    /// Without failover the reader's fault is what the caller sees, with the capability's error as its cause.
    @Test func faultDuringTheExchangeKeepsTheBodysError() async throws {
        try await Self.withReaderR1 { kernel in
            let error = await #expect(throws: ProximaError.self) {
                try await kernel.tap(lane: "L") { channel, _ in
                    await kernel.pool.readerFaulted(channel.reader, reason: "RF field error")
                    throw CapabilityFailure()
                }
            }
            #expect(error?.code == .readerFaulted)
            #expect(error?.reader == "r1")
            #expect(error?.underlying as? CapabilityFailure == CapabilityFailure())
        }
    }

    /// A capability error with no reader trouble passes through unchanged.
    @Test func aCapabilitysErrorPassesThroughUnchanged() async throws {
        try await Self.withReaderR1 { kernel in
            await #expect(throws: CapabilityFailure()) {
                try await kernel.tap(lane: "L") { _, _ in throw CapabilityFailure() }
            }
        }
    }
}
