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
/// Build it from a manifest, run it (`run()` returns when cancelled), and call ``tap(lane:options:_:)`` from any
/// task. Transports start in manifest order and stop in reverse order; one that fails is reported in
/// ``pluginFailures`` and as an event, and the rest go on.
public final class Kernel: Sendable {
    public let manifest: Manifest
    public let events: KernelEventBus
    public let clock: KernelClock
    public let pool: ReaderPool

    private let transports: [(id: String, transport: any Transport)]
    private let readerTransports = Mutex<[ReaderID: Int]>([:])
    private let failures: Mutex<[PluginFailure]>
    private let nextTap = Atomic<UInt64>(0)
    private let laneIDs: Set<LaneID>

    /// Builds every enabled transport of `manifest` (no I/O yet).
    public init(manifest: Manifest, registry: PluginRegistry, clock: KernelClock = .continuous) {
        self.manifest = manifest
        self.clock = clock
        let events = KernelEventBus()
        self.events = events
        self.pool = ReaderPool(lanes: manifest.lanes, clock: clock, events: events)
        self.laneIDs = Set(manifest.lanes.map(\.id))
        var built: [(String, any Transport)] = []
        var failed: [PluginFailure] = []
        for entry in manifest.plugins where entry.enabled {
            guard let type = registry.transportTypes[entry.type] else {
                failed.append(PluginFailure(pluginID: entry.id, reason: "unknown transport type \"\(entry.type)\""))
                continue
            }
            do {
                built.append((entry.id, try type.make(manifest.pluginContext(for: entry, clock: clock))))
            } catch {
                failed.append(PluginFailure(pluginID: entry.id, reason: "\(error)"))
            }
        }
        self.transports = built
        self.failures = Mutex(failed)
    }

    /// Plugins that failed to build or to run, with their reasons.
    public var pluginFailures: [PluginFailure] { failures.withLock { $0 } }

    /// Runs every transport until the calling task is cancelled, then stops them in reverse order and fails
    /// waiting requests with `shuttingDown`.
    ///
    /// Each transport runs in its own task so that shutdown can cancel them one at a time, last first: child
    /// tasks of a task group would all see the caller's cancellation at once. Every task is awaited before
    /// `run()` returns, so nothing outlives it.
    public func run() async {
        var runners: [Task<Void, Never>] = []
        var followers: [Task<Void, Never>] = []
        for (index, (id, transport)) in transports.enumerated() {
            followers.append(Task { await self.follow(transport, index: index) })
            // Start in manifest order: the next transport's task is created once this one's has begun.
            await withCheckedContinuation { (started: CheckedContinuation<Void, Never>) in
                runners.append(
                    Task {
                        started.resume()
                        do {
                            try await transport.run()
                        } catch  where !Task.isCancelled {
                            self.recordFailure(PluginFailure(pluginID: id, reason: "stopped: \(error)"))
                        } catch {}
                    }
                )
            }
        }
        await waitForCancellation()
        for runner in runners.reversed() {
            runner.cancel()
            await runner.value
        }
        for follower in followers { follower.cancel() }
        for follower in followers { await follower.value }
        await pool.shutdown()
        events.finish()
    }

    /// Returns when the calling task is cancelled (an `AsyncStream` iteration ends on cancellation).
    private func waitForCancellation() async {
        let never = AsyncStream<Void> { _ in }
        for await _ in never {}
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
        events.publish(KernelEvent(.readerFaulted(reason: failure.description), time: clock.now))
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

    /// Serves one tap on `lane`: waits for a suitable free reader (FIFO within the lane, fair across lanes),
    /// waits for a card on it, runs `body` over the card's channel, and always releases the reader.
    ///
    /// - Throws: `ProximaError` — `noSuchLane`, `readerBusy` (fail-fast lane), `deadlineExceeded`, `cancelled`,
    ///   `readerVanished` / `readerFaulted` (when failover is off or no other reader was found in time),
    ///   `shuttingDown`, or whatever `body` throws.
    public func tap<T: Sendable>(
        lane: LaneID,
        options: TapOptions = TapOptions(),
        _ body: @escaping @Sendable (any CardChannel, TapContext) async throws -> T
    ) async throws -> T {
        guard laneIDs.contains(lane) else {
            throw ProximaError(.noSuchLane, "lane \"\(lane)\" is not in the manifest", lane: lane)
        }
        let deadline = options.timeout.map { clock.now + $0 }
        while true {
            do {
                return try await withDeadline(deadline, lane: lane) {
                    try await self.serveOnce(lane: lane, deadline: deadline, options: options, body)
                }
            } catch let error as ProximaError
                where options.failover && (error.code == .readerVanished || error.code == .readerFaulted)
            {
                continue  // the reader is out of rotation now; the next lease goes elsewhere
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
                let channel = try await transport.connect(to: reader, options: options.connect)
                self.events.publish(KernelEvent(.cardDetected, lane: lane, reader: reader, time: self.clock.now))
                let result: T
                do {
                    // On the reader's own thread when the transport offers one (PC/SC), so the capability's
                    // transmits do not hop between it and the cooperative pool.
                    result = try await withTaskExecutorPreference(channel.preferredTaskExecutor) {
                        try await body(channel, context)
                    }
                } catch {
                    await channel.close()
                    throw error
                }
                await channel.close()
                self.events.publish(KernelEvent(.readCompleted, lane: lane, reader: reader, time: self.clock.now))
                return result
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

    /// Runs `operation` but fails with `deadlineExceeded` when the kernel clock reaches `deadline` first.
    private func withDeadline<T: Sendable>(
        _ deadline: Duration?,
        lane: LaneID,
        _ operation: @escaping @Sendable () async throws -> T
    ) async throws -> T {
        guard let deadline else { return try await operation() }
        return try await withThrowingTaskGroup(of: T?.self) { group in
            group.addTask { try await operation() }
            group.addTask {
                try await self.clock.sleep(until: deadline)
                return nil
            }
            defer { group.cancelAll() }
            guard let first = try await group.next() else {
                throw ProximaError(.cancelled, "tap cancelled", lane: lane)
            }
            guard let value = first else {
                throw ProximaError(.deadlineExceeded, "the tap did not finish before its deadline", lane: lane)
            }
            return value
        }
    }

    /// A tap's error as the caller sees it: kernel and transport errors as `ProximaError` carrying reader and
    /// lane; a capability's own error type (`PaymentError`, …) unchanged, so the API layer can map it.
    static func normalize(_ error: any Error, reader: ReaderID, lane: LaneID) -> any Error {
        switch error {
        case let e as ProximaError: e.at(reader: reader, lane: lane)
        case is CancellationError: ProximaError(.cancelled, "tap cancelled", reader: reader, lane: lane)
        default: error
        }
    }
}
