public import ProximaCore
import Synchronization

/// One tap request's options.
public struct TapOptions: Sendable {
    /// Serve only from this reader (by exact id), e.g. for lane wiring checks.
    public var reader: ReaderID?
    /// How long the whole tap may take from the call: waiting for a reader, for the card, and the exchange.
    /// `nil` uses the lane's `maxWait` for the reader and no limit after.
    public var timeout: Duration?
    /// Whether a tap whose reader faults or vanishes before the card answered may start again on another reader.
    public var failover: Bool
    /// The capabilities need extended-length APDUs.
    public var needsExtendedLength: Bool
    public var connect: ConnectOptions
    /// Called when this tap's reader is leased and waits for the card (the moment to say "tap now"), with the
    /// reader's id. Unlike the `readyForTap` event on the bus, it concerns this tap only.
    public var onReadyForTap: (@Sendable (ReaderID) -> Void)?
    /// Cancels the tap from another task (an app's `cancelRead()`): the tap then ends with the cancellation. The
    /// tap's own task is what it cancels, the one its deadline cancels too, so a caller needs no task of its own.
    package var canceller: TaskCanceller?

    public init(
        reader: ReaderID? = nil,
        timeout: Duration? = nil,
        failover: Bool = false,
        needsExtendedLength: Bool = false,
        connect: ConnectOptions = ConnectOptions(),
        onReadyForTap: (@Sendable (ReaderID) -> Void)? = nil
    ) {
        self.reader = reader
        self.timeout = timeout
        self.failover = failover
        self.needsExtendedLength = needsExtendedLength
        self.connect = connect
        self.onReadyForTap = onReadyForTap
    }
}

/// A plugin that could not be built or whose `run()` failed: reported, never fatal to the kernel.
public struct PluginFailure: Hashable, Sendable, CustomStringConvertible {
    public var pluginID: String
    public var reason: String
    public var description: String { "plugin \(pluginID): \(reason)" }
}

/// The kernel: owns every reader through its transports and the reader pool, and serves taps from lanes.
///
/// Build it from a manifest, run it, and call ``tap(lane:options:_:)`` from any task. The lifecycle follows
/// swift-service-lifecycle's `ServiceGroup`: ``run()`` starts the transports in manifest order as children of one
/// task group; ``triggerGracefulShutdown()`` (or ``shutdown()``) stops them in reverse order, each awaited before
/// the next is asked; cancelling the task of `run()` only escalates (everything stops at once). A transport that
/// fails is reported in ``pluginFailures`` and as a `pluginFailed` event, and the rest go on.
/// ``withRunning(_:)`` does all of that around a body for callers that own the kernel.
public final class Kernel: Sendable {
    public let manifest: Manifest
    public let events: KernelEventBus
    public let clock: KernelClock
    /// The lanes' attendant displays (content an app never sees, such as an mDL display request's elements).
    package let laneDisplays = LaneDisplays()
    /// The scheduler. `package`: reader events and leases go through the kernel, so an app cannot fault a reader.
    package let pool: ReaderPool
    /// Cancels taps at their ``TapOptions/timeout``; runs inside ``run()``.
    private let tapTimer: TapTimer

    private let transports: [(id: String, transport: any Transport)]
    private let readerTransports = Mutex<[ReaderID: Int]>([:])
    private let failures: Mutex<[PluginFailure]>
    private let nextTap = Atomic<UInt64>(0)
    private let laneIDs: Set<LaneID>

    private enum RunState {
        case notStarted, running, finished
    }
    private let runState = Mutex(RunState.notStarted)
    /// Set by ``triggerGracefulShutdown()``.
    private let gracefulShutdownRequested = AsyncSignal()
    /// Set when ``run()`` has stopped everything (or ``shutdown()`` found it never started).
    private let finished = AsyncSignal()

    /// Builds every enabled transport of `manifest` (no I/O yet).
    public init(manifest: Manifest, registry: PluginRegistry, clock: KernelClock = .continuous) {
        self.manifest = manifest
        self.clock = clock
        let events = KernelEventBus()
        self.events = events
        self.pool = ReaderPool(lanes: manifest.lanes, clock: clock, events: events)
        self.tapTimer = TapTimer(clock: clock)
        self.laneIDs = Set(manifest.lanes.map(\.id))
        var built: [(String, any Transport)] = []
        var failed: [PluginFailure] = []
        for entry in manifest.plugins where entry.enabled {
            guard let type = registry.transportTypes[entry.type] else {
                failed.append(PluginFailure(pluginID: entry.id, reason: "unknown transport type \"\(entry.type)\""))
                continue
            }
            do {
                var context = manifest.pluginContext(for: entry, clock: clock)
                context.reportsCardPresence = false  // `follow` has no use for them
                built.append((entry.id, try type.make(context)))
            } catch {
                failed.append(PluginFailure(pluginID: entry.id, reason: "\(error)"))
            }
        }
        self.transports = built
        self.failures = Mutex(failed)
    }

    /// Plugins that failed to build or to run, with their reasons.
    public var pluginFailures: [PluginFailure] { failures.withLock { $0 } }

    /// Runs every transport, the reader pool's deadline timer and the tap deadlines' timer until
    /// ``triggerGracefulShutdown()``, then stops the transports in reverse manifest order (each one awaited before the
    /// next is asked), fails waiting requests with `shuttingDown` and finishes the event streams.
    ///
    /// Transports start in manifest order: the next one's task is created once this one's `run()` has begun. Each
    /// runs in its own inner task group with the task that feeds its reader events into the pool, so that it alone
    /// can be stopped (a transport's `run()` stops on cancellation). Cancelling the task that called `run()`
    /// escalates: every transport is cancelled at once. Either way nothing outlives `run()`. Calling it again, or
    /// after ``shutdown()``, returns at once.
    public func run() async {
        let first = runState.withLock { state -> Bool in
            guard state == .notStarted else { return false }
            state = .running
            return true
        }
        guard first else { return }
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await self.pool.run() }
            group.addTask { await self.tapTimer.run() }
            await runTransports()
            // Only now: a tap that was already waiting when its reader's transport stopped fails here.
            await pool.shutdown()
            group.cancelAll()
        }
        events.finish()
        runState.withLock { $0 = .finished }
        finished.set()
    }

    /// Asks ``run()`` to stop gracefully and returns at once; `run()` returns once everything stopped.
    ///
    /// Safe to call from any task, any number of times, also before `run()` (which then starts nothing).
    public func triggerGracefulShutdown() {
        gracefulShutdownRequested.set()
    }

    /// Stops the kernel gracefully and returns once ``run()`` has returned (at once if it never started: the pool
    /// then shuts down and the event streams finish here).
    public func shutdown() async {
        triggerGracefulShutdown()
        let neverStarted = runState.withLock { state -> Bool in
            guard state == .notStarted else { return false }
            state = .finished
            return true
        }
        if neverStarted {
            await pool.shutdown()
            events.finish()
            finished.set()
        }
        await finished.wait()
    }

    /// Runs the kernel around `body`: starts ``run()`` in a task group, runs `body` with the kernel, then shuts
    /// down gracefully and waits until `run()` returned, also when `body` throws.
    ///
    /// Cancelling the calling task cancels `body` and escalates the shutdown.
    /// - Returns: what `body` returns.
    /// - Throws: what `body` throws.
    public func withRunning<T>(
        isolation: isolated (any Actor)? = #isolation,
        _ body: (Kernel) async throws -> T
    ) async throws -> T {
        let result = await withTaskGroup(of: Void.self, returning: Result<T, any Error>.self) { group in
            group.addTask { await self.run() }
            let result: Result<T, any Error>
            do {
                result = .success(try await body(self))
            } catch {
                result = .failure(error)
            }
            triggerGracefulShutdown()
            await group.waitForAll()
            return result
        }
        return try result.get()
    }

    /// The transports' part of ``run()``: start in order, wait for the graceful signal (or cancellation), stop in
    /// reverse order.
    private func runTransports() async {
        let stopRequests = transports.map { _ in AsyncSignal() }
        let stopped = transports.map { _ in AsyncSignal() }
        await withTaskGroup(of: Void.self) { group in
            var launched = 0
            for (index, (id, transport)) in transports.enumerated() {
                guard !gracefulShutdownRequested.isSet, !Task.isCancelled else { break }
                let started = AsyncSignal()
                group.addTask {
                    await self.serve(
                        transport,
                        id: id,
                        index: index,
                        started: started,
                        stop: stopRequests[index]
                    )
                    stopped[index].set()
                }
                await started.wait()
                launched += 1
            }
            // Returns on the graceful signal, or at once when the task of `run()` is cancelled (escalation: the
            // group's children are cancelled too, all at once).
            await gracefulShutdownRequested.wait()
            for index in (0..<launched).reversed() {
                stopRequests[index].set()
                await stopped[index].wait()
            }
        }
    }

    /// One transport: its `run()` and the task following its reader events, in an inner group that stops when
    /// `stop` is set or the task is cancelled.
    private func serve(
        _ transport: any Transport,
        id: String,
        index: Int,
        started: AsyncSignal,
        stop: AsyncSignal
    ) async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await self.follow(transport, index: index) }
            await withTaskGroup(of: Void.self) { running in
                running.addTask {
                    started.set()
                    do {
                        try await transport.run()
                    } catch  where !Task.isCancelled {
                        self.recordFailure(PluginFailure(pluginID: id, reason: "stopped: \(error)"))
                    } catch {}
                }
                await stop.wait()
                running.cancelAll()
            }
            // The reader events the transport sent while it stopped have been fed in; now stop following.
            group.cancelAll()
        }
    }

    /// Waits until at least `count` readers are in the pool (or the calling task is cancelled).
    public func waitForReaders(count: Int) async {
        let events = self.events.subscribe(bufferSize: 4096)
        if await pool.snapshot().readers.count >= count { return }
        for await event in events where event.kind == .readerAppeared {
            if await pool.snapshot().readers.count >= count { return }
        }
    }

    private func recordFailure(_ failure: PluginFailure) {
        failures.withLock { $0.append(failure) }
        events.publish(KernelEvent(.pluginFailed(pluginID: failure.pluginID, reason: failure.reason), time: clock.now))
    }

    /// Feeds a transport's reader events into the pool.
    private func follow(_ transport: any Transport, index: Int) async {
        for await event in transport.events {
            switch event {
            case .appeared(let info):
                readerTransports.withLock { $0[info.id] = index }
                await pool.readerAppeared(info)
            case .vanished(let id):
                await pool.readerVanished(id)
            case .fault(let id, let reason):
                await pool.readerFaulted(id, reason: reason)
            case .recovered(let id):
                await pool.readerRecovered(id)
            case .cardPresent, .cardRemoved:
                break
            }
        }
    }

    /// Readers, their lanes and states, and queue lengths.
    public func snapshot() async -> PoolSnapshot { await pool.snapshot() }

    /// Shows `lines` on the attendant display of `lane`, the lane's output sink: a ``KernelEvent/Kind/laneOutput(_:)``
    /// event for whatever drives that display (the CLI prints it), never a value handed to the app.
    public func show(onLane lane: LaneID, _ lines: [String]) {
        events.publish(KernelEvent(.laneOutput(lines.joined(separator: "\n")), lane: lane, time: clock.now))
    }

    /// Waits until `lane` can be served: a present, healthy reader that may serve it exists, free or busy (by the
    /// rule the scheduler leases by: the lane's readers, the shared pool when the lane overflows, only
    /// `pinnedReader` when given, extended length when needed).
    ///
    /// Event-driven: woken when a reader appears or recovers; time comes from the kernel's clock.
    /// - Parameters:
    ///   - timeout: how long to wait; `nil` waits until the task is cancelled or the kernel stops.
    /// - Returns: `true` as soon as the lane can be served (at once if it can now); `false` at the timeout, for a
    ///   lane not in the manifest, when the kernel shuts down or the task is cancelled.
    public func waitUntilServable(
        lane: LaneID,
        pinnedReader: ReaderID? = nil,
        needsExtendedLength: Bool = false,
        timeout: Duration?
    ) async -> Bool {
        guard let timeout else {
            return await pool.waitUntilServable(
                lane: lane,
                pinnedReader: pinnedReader,
                needsExtendedLength: needsExtendedLength
            )
        }
        // Answered at once when a reader serves the lane already: a zero or short timeout must not race that.
        if await pool.isServable(lane: lane, pinnedReader: pinnedReader, needsExtendedLength: needsExtendedLength) {
            return true
        }
        guard timeout > .zero else { return false }
        let deadline = clock.now + timeout
        return await withTaskGroup(of: Bool.self) { group in
            group.addTask {
                await self.pool.waitUntilServable(
                    lane: lane,
                    pinnedReader: pinnedReader,
                    needsExtendedLength: needsExtendedLength
                )
            }
            group.addTask {
                try? await self.clock.sleep(until: deadline)
                return false
            }
            let first = await group.next() ?? false
            group.cancelAll()
            return first
        }
    }

    /// Serves one tap on `lane`: waits for a suitable free reader (FIFO within the lane, fair across lanes),
    /// waits for a card on it, runs `body` over the card's channel, and always releases the reader.
    ///
    /// `package`: what `body` sees is clear card data; apps reach taps only through a capability's service, which
    /// returns what an app may see.
    ///
    /// - Throws: `ProximaError` — `noSuchLane`, `readerBusy` (fail-fast lane), `deadlineExceeded`, `cancelled`,
    ///   `readerVanished` / `readerFaulted` (when failover is off or no other reader was found in time),
    ///   `shuttingDown`, or whatever `body` throws. A capability's own error is thrown unchanged, or kept as the
    ///   ``ProximaCore/ProximaError/underlying`` cause when the kernel reports something else (the deadline passed,
    ///   the reader faulted or vanished meanwhile, failover gave up).
    package func tap<T: Sendable>(
        lane: LaneID,
        options: TapOptions = TapOptions(),
        _ body: @escaping @Sendable (any CardChannel, TapContext) async throws -> T
    ) async throws -> T {
        guard laneIDs.contains(lane) else {
            throw ProximaError(.noSuchLane, "lane \"\(lane)\" is not in the manifest", lane: lane)
        }
        let deadline = options.timeout.map { clock.now + $0 }
        // The failure of the last reader given up on, kept as the cause when the next attempt fails too.
        var abandoned: ProximaError?
        while true {
            do {
                return try await withDeadline(deadline, canceller: options.canceller, lane: lane) {
                    try await self.serveOnce(lane: lane, deadline: deadline, options: options, body)
                }
            } catch let error as ProximaError
                where options.failover && (error.code == .readerVanished || error.code == .readerFaulted)
            {
                abandoned = error
                continue  // the reader is out of rotation now; the next lease goes elsewhere
            } catch let error as ProximaError {
                throw abandoned.map { error.endingIn($0) } ?? error
            }
        }
    }

    private func serveOnce<T: Sendable>(
        lane: LaneID,
        deadline: Duration?,
        options: TapOptions,
        _ body: @escaping @Sendable (any CardChannel, TapContext) async throws -> T
    ) async throws -> T {
        let request = LeaseRequest(
            lane: lane,
            deadline: deadline,
            pinnedReader: options.reader,
            needsExtendedLength: options.needsExtendedLength
        )
        return try await pool.withLease(request) { lease in
            let reader = lease.reader.id
            guard let transport = self.transport(for: reader) else {
                throw ProximaError(
                    .readerVanished,
                    "no transport serves the reader any more",
                    reader: reader,
                    lane: lane
                )
            }
            let context = TapContext(
                lane: lane,
                reader: reader,
                tapID: self.nextTap.add(1, ordering: .relaxed).newValue,
                queueWait: lease.waited
            )
            self.events.publish(KernelEvent(.readyForTap, lane: lane, reader: reader, time: self.clock.now))
            options.onReadyForTap?(reader)
            do {
                // The whole tap on the reader's own thread when the transport offers one (PC/SC): connecting, the
                // capability's transmits and closing do not hop between it and the cooperative pool.
                let tapExecutor = transport.preferredTaskExecutor(for: reader)
                return try await withTaskExecutorPreference(tapExecutor) {
                    let channel = try await transport.connect(to: reader, options: options.connect)
                    self.events.publish(KernelEvent(.cardDetected, lane: lane, reader: reader, time: self.clock.now))
                    let result: T
                    do {
                        let bodyExecutor = channel.preferredTaskExecutor
                        if let bodyExecutor, bodyExecutor !== tapExecutor {
                            result = try await withTaskExecutorPreference(bodyExecutor) {
                                try await body(channel, context)
                            }
                        } else {
                            result = try await body(channel, context)
                        }
                    } catch {
                        await channel.close()
                        throw error
                    }
                    await channel.close()
                    self.events.publish(KernelEvent(.readCompleted, lane: lane, reader: reader, time: self.clock.now))
                    return result
                }
            } catch {
                let failure = Kernel.normalize(error, reader: reader, lane: lane)
                let (code, reason) =
                    switch failure {
                    case let e as ProximaError: (e.code, e.reason)
                    case let e as any ClassifiedError: (e.kernelCode, e.description)
                    default: (ProximaError.Code.pluginFailed, "\(type(of: failure))")
                    }
                self.events.publish(
                    KernelEvent(
                        .readFailed(code: code, reason: reason),
                        lane: lane,
                        reader: reader,
                        time: self.clock.now
                    )
                )
                throw failure
            }
        }
    }

    private func transport(for reader: ReaderID) -> (any Transport)? {
        guard let index = readerTransports.withLock({ $0[reader] }) else { return nil }
        return transports[index].transport
    }

    /// Runs `operation` but fails with `deadlineExceeded` when the kernel clock reaches `deadline` first, and ends it
    /// with its cancellation when `canceller` is cancelled; with neither, runs it in the calling task.
    private func withDeadline<T: Sendable>(
        _ deadline: Duration?,
        canceller: TaskCanceller?,
        lane: LaneID,
        _ operation: @escaping @Sendable () async throws -> T
    ) async throws -> T {
        guard deadline != nil || canceller != nil else { return try await operation() }
        // One child task, which the kernel's tap timer cancels at the deadline and the caller's canceller when it
        // is asked to (no sleeping or waiting child per tap): cancelling it leaves the caller's task as it was.
        let timer = tapTimer
        let cancellable: @Sendable () async throws -> T
        if let canceller {
            cancellable = { try await canceller.run(operation) }
        } else {
            cancellable = operation
        }
        let ending = await withTaskGroup(of: (result: Result<T, any Error>, expired: Bool).self) { group in
            group.addTask {
                guard let deadline else {
                    do {
                        return (.success(try await cancellable()), false)
                    } catch {
                        return (.failure(error), false)
                    }
                }
                return await timer.run(until: deadline, cancellable)
            }
            return await group.next()
        }
        guard let ending else { throw ProximaError(.cancelled, "tap cancelled", lane: lane) }
        guard ending.expired else { return try ending.result.get() }
        // The deadline came first. The tap sees the cancellation; what it failed with (a capability's error,
        // a reader's) stays reachable as the cause.
        var cause: (any Error)?
        if case .failure(let error) = ending.result, Self.isCause(error) { cause = error }
        throw ProximaError(
            .deadlineExceeded,
            "the tap did not finish before its deadline",
            lane: lane,
            underlying: cause
        )
    }

    /// Whether `error` says more than "the tap was cancelled".
    private static func isCause(_ error: any Error) -> Bool {
        if error is CancellationError { return false }
        if let proxima = error as? ProximaError, proxima.code == .cancelled, proxima.underlying == nil { return false }
        return true
    }

    /// A tap's error as the caller sees it: kernel and transport errors as `ProximaError` carrying reader and
    /// lane; a capability's own error type (`PaymentError`, …) unchanged, so the API layer can map it.
    ///
    /// A `ProximaError` keeps its ``ProximaCore/ProximaError/underlying`` cause (the reader pool puts the body's
    /// error there when the reader faulted or vanished meanwhile).
    static func normalize(_ error: any Error, reader: ReaderID, lane: LaneID) -> any Error {
        switch error {
        case let e as ProximaError: e.at(reader: reader, lane: lane)
        case is CancellationError: ProximaError(.cancelled, "tap cancelled", reader: reader, lane: lane)
        default: error
        }
    }
}

extension ProximaError {
    /// A copy whose chain of kernel errors ends in `cause`: set as ``underlying`` of the last `ProximaError` of the
    /// chain, unless the chain already ends in another error type (a capability's own cause wins).
    func endingIn(_ cause: ProximaError) -> ProximaError {
        let next: any Error
        switch underlying {
        case nil: next = cause
        case let inner as ProximaError: next = inner.endingIn(cause)
        default: return self
        }
        return ProximaError(code, reason, reader: reader, lane: lane, jsonPath: jsonPath, underlying: next)
    }
}
