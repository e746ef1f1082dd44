package import ProximaCore
import Synchronization

/// The scheduler: decides which request gets which reader, and when.
///
/// **Membership.** A reader belongs to every lane whose ``LaneConfiguration/claims(_:)`` accepts it; a reader
/// no lane claims sits in the shared pool, which lanes with `overflowToShared` may use once their own readers
/// are all busy. A request pinned to a reader is served by that reader only, whatever the lanes claim.
///
/// **Order.** Each lane queues its requests in arrival order. Whenever a reader becomes free (released,
/// appeared, recovered) it goes to the request that has waited longest among all the requests it could serve,
/// whatever their lane: FIFO within a lane, and lanes sharing readers take turns by age. Between actor steps
/// the pool never holds a waiting request and an idle healthy reader that could serve it.
///
/// **Failure.** A request fails with:
/// - `readerBusy` at once when its lane's policy is `.failFast` and every reader it could use is busy, or
///   `readerUnavailable` at once on such a lane when none of them is present and healthy;
/// - at its deadline (the earlier of ``LeaseRequest/deadline`` and arrival plus the lane's `maxWait`),
///   `readerUnavailable` if no healthy reader that could serve it was present at any moment of the wait (a
///   configuration or hardware problem), `deadlineExceeded` otherwise (the readers were busy);
/// - `cancelled` when its task is cancelled while waiting; `noSuchLane` for a lane not configured;
///   `shuttingDown` after ``shutdown()``.
///
/// **Health.** A faulted or vanished reader leaves rotation. If it is leased at the time, the lease stays held
/// until released, ``health(of:)`` reports the interruption to the holder (and ``withLease(_:isolation:_:)``
/// turns a failure of its body into `readerFaulted` / `readerVanished`), and the reader does not return to
/// rotation on release unless it recovered or reappeared meanwhile. A reader that reappears after vanishing
/// starts healthy.
///
/// **Time.** Deadlines use the injected ``KernelClock``. The pool's ``run()`` (a child of the kernel's task group)
/// sleeps until the earliest pending deadline and wakes early only when an earlier deadline arrives; deadlines fire
/// only while it runs. Call ``shutdown()`` to fail every waiter and end `run()`.
///
/// **Who may call what.** Reader events (``readerAppeared(_:)`` …), ``run()`` and ``shutdown()`` are `package`:
/// only the kernel (and the package's tests and benchmarks) feed the pool; an app sees it through ``Kernel``.
public actor ReaderPool {
    struct LaneSlot {
        let id: LaneID
        let configuration: LaneConfiguration
        /// `nil` for a fail-fast lane.
        let maxWait: Duration?
        /// Present or absent readers this lane claims.
        var own = ReaderSet()
        /// Waiting requests any reader of the lane can serve.
        var anyQueue = WaiterQueue()
        /// Waiting requests that need extended length (kept apart so a short-only reader skips them in O(1)).
        var extendedQueue = WaiterQueue()
        /// Live waiting requests of this lane, pinned ones included.
        var waiting = 0
    }

    struct ReaderSlot {
        var info: ReaderInfo
        /// False for a slot made only because a request pinned an unknown reader id.
        var hasAppeared = false
        var claimingLanes: [Int] = []
        var faultReason: String?
        /// The current lease, 0 when none.
        var leaseID: UInt64 = 0
        var holderLane = -1
        /// What happened to the reader during the current lease (reset at each grant).
        var interruption: LeaseHealth?
        /// Requests pinned to this reader, split like a lane's queues.
        var pinnedAny = WaiterQueue()
        var pinnedExtended = WaiterQueue()
        var pinnedWaiting = 0
    }

    struct WaiterSlot {
        /// 0 when the slot is free.
        var sequence: UInt64 = 0
        /// Shared with the request's cancellation handler, which may resume it first.
        var continuation: WaiterContinuation<Lease>?
        var lane = 0
        /// Slot of the pinned reader, or -1.
        var pinned = -1
        var needsExtended = false
        var arrival: Duration = .zero
        var deadline: Duration = .zero
        /// Whether a present, healthy reader that could serve the request existed at some point of the wait.
        var sawEligibleReader = false
    }

    // Invariants, true whenever the actor is not running a method:
    // - Reader slot `r` is free iff `present`, `healthy` and not `leased` contain it; `leased` contains it iff
    //   `readers[r].leaseID != 0`; `activeLeaseCount` is the number of such slots.
    // - A waiter is live iff `waiters[i].sequence != 0`. Each live waiter has exactly one entry in one queue (its
    //   lane's any / extended queue, or its pinned reader's any / extended queue) and one in `deadlines`;
    //   entries of dead waiters are skipped and dropped lazily. `waitingCount`, `lanes[l].waiting` and
    //   `readers[r].pinnedWaiting` count live waiters. A live waiter's continuation is stored, or was already
    //   resumed by its cancellation handler (then its task takes it off the books when it resumes on the pool).
    // - No live waiter has a free reader it could use (checked on arrival and whenever a reader frees up).
    // - While a waiter is live and `run()` runs, `run()` sleeps until `timerDeadline` ≤ the earliest live deadline,
    //   or is about to be woken by `timerWakeup`.
    // - `servableWaiters` holds only callers for whom no present, healthy reader that could serve them exists.
    private static let poolCount = Atomic<UInt64>(0)

    private let clock: KernelClock
    private let events: KernelEventBus
    /// Process-unique, stamped on every lease.
    private let poolID: UInt64

    private var lanes: [LaneSlot]
    private let laneIndex: [LaneID: Int]
    /// Lanes with `overflowToShared`, in configuration order.
    private let overflowLanes: [Int]

    private var readers: [ReaderSlot] = []
    private var readerIndex: [ReaderID: Int] = [:]
    private var present = ReaderSet()
    /// Readers without a fault (present or not).
    private var healthy = ReaderSet()
    private var leased = ReaderSet()
    private var extended = ReaderSet()
    /// Readers no lane claims.
    private var shared = ReaderSet()

    private var waiters: [WaiterSlot] = []
    private var freeWaiterSlots: [Int] = []
    private var nextSequence: UInt64 = 0
    private var deadlines = DeadlineHeap()
    /// The deadline ``run()`` sleeps until; `nil` while it waits for a first deadline or does not run.
    private var timerDeadline: Duration?
    /// Wakes ``run()`` when an earlier deadline arrives or the pool shuts down.
    private let timerWakeup = AsyncSignal()
    private var isRunning = false

    /// Callers of ``waitUntilServable(lane:pinnedReader:needsExtendedLength:)`` still waiting.
    private struct ServableWaiter {
        var lane: Int
        var pinned: Int
        var needsExtended: Bool
        var continuation: WaiterContinuation<Bool>
    }
    private var servableWaiters: [UInt64: ServableWaiter] = [:]
    private var nextServableID: UInt64 = 0

    private var nextLeaseID: UInt64 = 0
    private var isShutDown = false

    /// Leases granted and not yet released.
    public private(set) var activeLeaseCount = 0
    /// Requests waiting for a reader, over all lanes.
    public private(set) var waitingCount = 0

    /// Makes a pool with no readers yet; report them with ``readerAppeared(_:)``.
    ///
    /// - Parameters:
    ///   - lanes: the lanes, in manifest order (the first lane with a given id wins).
    ///   - clock: the kernel's clock, for deadlines and timestamps.
    ///   - events: where lease and reader events are published.
    package init(lanes: [LaneConfiguration], clock: KernelClock, events: KernelEventBus) {
        var slots: [LaneSlot] = []
        var index: [LaneID: Int] = [:]
        for configuration in lanes where index[configuration.id] == nil {
            index[configuration.id] = slots.count
            let maxWait: Duration? =
                switch configuration.queuePolicy {
                case .wait(let maxWait): max(maxWait, .zero)
                case .failFast: nil
                }
            slots.append(LaneSlot(id: configuration.id, configuration: configuration, maxWait: maxWait))
        }
        self.lanes = slots
        self.laneIndex = index
        self.overflowLanes = slots.indices.filter { slots[$0].configuration.overflowToShared }
        self.clock = clock
        self.events = events
        self.poolID = Self.poolCount.wrappingAdd(1, ordering: .relaxed).newValue
    }

    // MARK: Leasing

    /// Waits for a reader that can serve `request` and leases it.
    ///
    /// Grants at once when a suitable healthy reader is free (the lane's own readers before shared ones, the
    /// lowest slot first). Otherwise the request queues (see the type's documentation for order and failures).
    /// A task that is already cancelled gets no lease, even if a reader is free.
    /// - Returns: the lease; give it back with ``release(_:)``, or use ``withLease(_:isolation:_:)``.
    /// - Throws: `ProximaError` with code `noSuchLane`, `readerBusy`, `readerUnavailable`, `deadlineExceeded`,
    ///   `cancelled` or `shuttingDown`.
    public func lease(_ request: LeaseRequest) async throws -> Lease {
        guard !isShutDown else {
            throw ProximaError(.shuttingDown, "the reader pool is shut down; no new leases", lane: request.lane)
        }
        guard let lane = laneIndex[request.lane] else {
            throw ProximaError(
                .noSuchLane,
                "lane \(request.lane) is not configured; known lanes: "
                    + lanes.map(\.id.rawValue).joined(separator: ", "),
                lane: request.lane
            )
        }
        if Task.isCancelled {
            throw ProximaError(
                .cancelled,
                "the request for a reader of lane \(request.lane) was cancelled before it was made",
                reader: request.pinnedReader,
                lane: request.lane
            )
        }
        let now = clock.now
        var pinned = -1
        if let pinnedID = request.pinnedReader {
            pinned = slot(for: pinnedID)
            if isFree(pinned, needsExtended: request.needsExtendedLength) {
                return grant(reader: pinned, lane: lane, arrival: now, now: now)
            }
        } else if let reader = freeReader(lane: lane, needsExtended: request.needsExtendedLength) {
            return grant(reader: reader, lane: lane, arrival: now, now: now)
        }

        let eligibleExists = hasHealthyReader(lane: lane, pinned: pinned, needsExtended: request.needsExtendedLength)
        guard let maxWait = lanes[lane].maxWait else {
            let counts = readerCounts(lane: lane, pinned: pinned, needsExtended: request.needsExtendedLength)
            if eligibleExists {
                throw ProximaError(
                    .readerBusy,
                    "every reader lane \(request.lane) may use is busy (\(counts)) and the lane is fail-fast; "
                        + "retry later",
                    reader: request.pinnedReader,
                    lane: request.lane
                )
            }
            throw ProximaError(
                .readerUnavailable,
                "no healthy reader that can serve lane \(request.lane) is present (\(counts)); "
                    + "check that its readers are connected",
                reader: request.pinnedReader,
                lane: request.lane
            )
        }
        var deadline = now + maxWait
        if let requested = request.deadline, requested < deadline { deadline = requested }
        var slot = WaiterSlot()
        slot.lane = lane
        slot.pinned = pinned
        slot.needsExtended = request.needsExtendedLength
        slot.arrival = now
        slot.deadline = deadline
        slot.sawEligibleReader = eligibleExists
        if deadline <= now { throw expiryError(slot, now: now) }

        let continuation = WaiterContinuation<Lease>()
        slot.continuation = continuation
        let ref = enqueue(slot)
        do {
            return try await withTaskCancellationHandler {
                try await withCheckedThrowingContinuation { (stored: CheckedContinuation<Lease, any Error>) in
                    // Meant to run in the same actor job as `enqueue`, but under load the pool has been seen to
                    // answer a waiter before this ran (WaiterContinuation.answersBeforeStore, once in a loaded
                    // full test run; before, that request never returned): an answer or a cancellation that came
                    // first makes `store` resume at once.
                    continuation.store(stored)
                }
            } onCancel: {
                continuation.cancel()
            }
        } catch is CancellationError {
            // Back on the pool. The handler resumed the request directly; if no grant, expiry or shutdown took the
            // waiter off the books meanwhile, do it now.
            if isLive(ref) { _ = removeWaiter(ref) }
            throw cancellationError(slot, now: clock.now)
        }
    }

    /// Gives a lease back. The reader goes straight to the oldest waiting request it can serve, or becomes idle;
    /// a reader that faulted or vanished during the lease stays out of rotation.
    ///
    /// Releasing a lease twice, or a lease of another pool, does nothing.
    public func release(_ lease: Lease) {
        _ = finish(lease)
    }

    /// Leases a reader for `request`, runs `body` with the lease and releases it on every path (success, thrown
    /// error, cancellation).
    ///
    /// `body` runs in the caller's isolation, not on the pool.
    /// - Throws: what ``lease(_:)`` throws; what `body` throws, except that when the reader faulted or vanished
    ///   during the lease and `body` failed, the failure becomes `readerFaulted` / `readerVanished` (naming the
    ///   original error) unless it already is one of those, `cancelled`, `deadlineExceeded` or a
    ///   `CancellationError`.
    public func withLease<T: Sendable>(
        _ request: LeaseRequest,
        isolation: isolated (any Actor)? = #isolation,
        _ body: (Lease) async throws -> T
    ) async throws -> T {
        let lease = try await self.lease(request)
        let result: T
        do {
            result = try await body(lease)
        } catch {
            let health = await finish(lease)
            throw Self.translate(error, health: health, lease: lease)
        }
        _ = await finish(lease)
        return result
    }

    /// Whether the reader of `lease` faulted or vanished since the grant.
    ///
    /// The kernel checks it after a failed exchange to tell a reader problem from a card problem.
    public func health(of lease: Lease) -> LeaseHealth {
        guard lease.poolID == poolID, lease.slot >= 0, lease.slot < readers.count,
            readers[lease.slot].leaseID == lease.id
        else {
            return .released
        }
        return readers[lease.slot].interruption ?? .healthy
    }

    /// Fails every waiting request with `shuttingDown` (and every ``waitUntilServable(lane:pinnedReader:needsExtendedLength:)``
    /// with `false`), ends ``run()`` and refuses new requests.
    ///
    /// Leases already held stay valid and may still be released.
    package func shutdown() {
        guard !isShutDown else { return }
        isShutDown = true
        timerWakeup.set()
        for waiter in servableWaiters.values { waiter.continuation.answer { .success(false) } }
        servableWaiters.removeAll()
        let now = clock.now
        for index in waiters.indices where waiters[index].sequence != 0 {
            let ref = WaiterRef(index: index, sequence: waiters[index].sequence)
            let slot = removeWaiter(ref)
            slot.continuation?.answer {
                .failure(
                    ProximaError(
                        .shuttingDown,
                        "the reader pool shut down after the request waited \(now - slot.arrival) for lane "
                            + "\(lanes[slot.lane].id)",
                        lane: lanes[slot.lane].id
                    )
                )
            }
        }
        deadlines.removeAll()
        for index in lanes.indices {
            lanes[index].anyQueue.removeAll()
            lanes[index].extendedQueue.removeAll()
        }
        for index in readers.indices {
            readers[index].pinnedAny.removeAll()
            readers[index].pinnedExtended.removeAll()
        }
    }

    // MARK: Readers

    /// A reader became available (at start or hot-plugged), or reports new information.
    ///
    /// Lane membership is (re)computed from `info`. A reader that was absent comes back healthy; one that was
    /// already present keeps its fault state.
    package func readerAppeared(_ info: ReaderInfo) {
        let reader = slot(for: info.id)
        let wasPresent = present.contains(reader)
        for lane in readers[reader].claimingLanes { lanes[lane].own.remove(reader) }
        let claiming = lanes.indices.filter { lanes[$0].configuration.claims(info) }
        for lane in claiming { lanes[lane].own.insert(reader) }
        readers[reader].claimingLanes = claiming
        readers[reader].info = info
        readers[reader].hasAppeared = true
        shared.update(reader, to: claiming.isEmpty)
        extended.update(reader, to: info.supportsExtendedLength)
        present.insert(reader)
        if !wasPresent {
            readers[reader].faultReason = nil
            healthy.insert(reader)
        }
        publish(.readerAppeared, lane: holderLaneID(reader), reader: info.id)
        if healthy.contains(reader) { readerBecameHealthy(reader) }
    }

    /// A reader left (unplugged, daemon gone). It leaves rotation; a holder of its lease sees `readerVanished`.
    package func readerVanished(_ id: ReaderID) {
        guard let reader = readerIndex[id], present.contains(reader) else { return }
        present.remove(reader)
        if readers[reader].leaseID != 0 { readers[reader].interruption = .readerVanished }
        publish(.readerVanished, lane: holderLaneID(reader), reader: id)
    }

    /// A reader reported a fault. It leaves rotation until ``readerRecovered(_:)``; a holder of its lease sees
    /// `readerFaulted`.
    package func readerFaulted(_ id: ReaderID, reason: String) {
        guard let reader = readerIndex[id], readers[reader].hasAppeared else { return }
        readers[reader].faultReason = reason
        healthy.remove(reader)
        if readers[reader].leaseID != 0 { readers[reader].interruption = .readerFaulted(reason: reason) }
        publish(.readerFaulted(reason: reason), lane: holderLaneID(reader), reader: id)
    }

    /// A faulted reader works again and returns to rotation (once released, if it is leased).
    package func readerRecovered(_ id: ReaderID) {
        guard let reader = readerIndex[id], readers[reader].faultReason != nil else { return }
        readers[reader].faultReason = nil
        healthy.insert(reader)
        publish(.readerRecovered, lane: holderLaneID(reader), reader: id)
        if present.contains(reader) { readerBecameHealthy(reader) }
    }

    // MARK: Waiting for a lane to be servable

    /// Waits until a present, healthy reader that could serve such a request exists, free or busy: by the rule
    /// ``lease(_:)`` uses (the lane's own readers, the shared pool when the lane overflows, only `pinnedReader` when
    /// given, extended length when needed).
    ///
    /// Woken by the reader events that make a reader healthy (appeared, recovered); no polling. The kernel adds the
    /// timeout (``Kernel/waitUntilServable(lane:pinnedReader:needsExtendedLength:timeout:)``).
    /// - Returns: `true` once such a reader exists (at once if one does); `false` for a lane not configured, when
    ///   the pool shuts down, or when the task is cancelled.
    package func waitUntilServable(lane: LaneID, pinnedReader: ReaderID?, needsExtendedLength: Bool) async -> Bool {
        guard let query = servableQuery(lane, pinnedReader) else { return false }
        if hasHealthyReader(lane: query.lane, pinned: query.pinned, needsExtended: needsExtendedLength) { return true }
        return await waitUntilServable(lane: query.lane, pinned: query.pinned, needsExtendedLength: needsExtendedLength)
    }

    /// Whether a present, healthy reader that could serve such a request exists now (the rule of
    /// ``waitUntilServable(lane:pinnedReader:needsExtendedLength:)``, without waiting).
    package func isServable(lane: LaneID, pinnedReader: ReaderID?, needsExtendedLength: Bool) -> Bool {
        guard let query = servableQuery(lane, pinnedReader) else { return false }
        return hasHealthyReader(lane: query.lane, pinned: query.pinned, needsExtended: needsExtendedLength)
    }

    /// The lane's and pinned reader's slots for a servable check; `nil` once shut down or for a lane not configured.
    private func servableQuery(_ lane: LaneID, _ pinnedReader: ReaderID?) -> (lane: Int, pinned: Int)? {
        guard !isShutDown, let lane = laneIndex[lane] else { return nil }
        return (lane, pinnedReader.map { slot(for: $0) } ?? -1)
    }

    private func waitUntilServable(lane: Int, pinned: Int, needsExtendedLength: Bool) async -> Bool {
        guard !Task.isCancelled else { return false }
        nextServableID += 1
        let id = nextServableID
        let continuation = WaiterContinuation<Bool>()
        servableWaiters[id] = ServableWaiter(
            lane: lane,
            pinned: pinned,
            needsExtended: needsExtendedLength,
            continuation: continuation
        )
        defer { servableWaiters[id] = nil }
        do {
            return try await withTaskCancellationHandler {
                try await withCheckedThrowingContinuation { continuation.store($0) }
            } onCancel: {
                continuation.cancel()
            }
        } catch {
            return false
        }
    }

    /// `reader` is present and healthy now: answer every servable-waiter it could serve.
    private func wakeServableWaiters(for reader: Int) {
        let isExtended = extended.contains(reader)
        let isShared = shared.contains(reader)
        for (id, waiter) in servableWaiters {
            if waiter.needsExtended && !isExtended { continue }
            let serves =
                waiter.pinned >= 0
                ? waiter.pinned == reader
                : lanes[waiter.lane].own.contains(reader)
                    || (isShared && lanes[waiter.lane].configuration.overflowToShared)
            guard serves else { continue }
            servableWaiters[id] = nil
            waiter.continuation.answer { .success(true) }
        }
    }

    // MARK: Introspection

    /// What every reader and queue looks like now.
    public func snapshot() -> PoolSnapshot {
        var readerEntries: [PoolSnapshot.Reader] = []
        for (index, reader) in readers.enumerated() where reader.hasAppeared {
            let state: PoolSnapshot.ReaderState =
                if !present.contains(index) {
                    .vanished
                } else if let reason = reader.faultReason {
                    .faulted(reason: reason)
                } else if reader.leaseID != 0 {
                    .leased
                } else {
                    .idle
                }
            readerEntries.append(
                PoolSnapshot.Reader(
                    info: reader.info,
                    lanes: reader.claimingLanes.map { lanes[$0].id },
                    state: state,
                    leaseID: reader.leaseID == 0 ? nil : reader.leaseID,
                    holderLane: holderLaneID(index)
                )
            )
        }
        readerEntries.sort { $0.info.id < $1.info.id }
        var queueLengths: [LaneID: Int] = [:]
        for lane in lanes { queueLengths[lane.id] = lane.waiting }
        let waiting = waiters.filter { $0.sequence != 0 }.sorted { $0.sequence < $1.sequence }.map { slot in
            PoolSnapshot.WaitingRequest(
                lane: lanes[slot.lane].id,
                pinnedReader: slot.pinned >= 0 ? readers[slot.pinned].info.id : nil,
                needsExtendedLength: slot.needsExtended,
                arrival: slot.arrival,
                deadline: slot.deadline
            )
        }
        return PoolSnapshot(
            time: clock.now,
            readers: readerEntries,
            queueLengths: queueLengths,
            waiting: waiting,
            activeLeaseCount: activeLeaseCount,
            isShutDown: isShutDown
        )
    }

    // MARK: Internals: readers

    /// The slot of `id`, made (absent, never appeared) if the pool has not seen it.
    private func slot(for id: ReaderID) -> Int {
        if let index = readerIndex[id] { return index }
        let index = readers.count
        readers.append(ReaderSlot(info: ReaderInfo(id: id, name: "", transport: "", supportsExtendedLength: false)))
        readerIndex[id] = index
        healthy.insert(index)
        return index
    }

    private func isFree(_ reader: Int, needsExtended: Bool) -> Bool {
        present.contains(reader) && healthy.contains(reader) && !leased.contains(reader)
            && (!needsExtended || extended.contains(reader))
    }

    /// The lowest free reader in `candidates` (and supporting extended length if needed).
    private func firstFree(in candidates: ReaderSet, needsExtended: Bool) -> Int? {
        for index in candidates.words.indices {
            var bits = candidates.words[index] & present.word(index) & healthy.word(index) & ~leased.word(index)
            if needsExtended { bits &= extended.word(index) }
            if bits != 0 { return index << 6 | bits.trailingZeroBitCount }
        }
        return nil
    }

    private func freeReader(lane: Int, needsExtended: Bool) -> Int? {
        if let own = firstFree(in: lanes[lane].own, needsExtended: needsExtended) { return own }
        if lanes[lane].configuration.overflowToShared {
            return firstFree(in: shared, needsExtended: needsExtended)
        }
        return nil
    }

    /// Whether a present, healthy reader (free or not) could serve such a request.
    private func hasHealthyReader(lane: Int, pinned: Int, needsExtended: Bool) -> Bool {
        func any(_ candidates: ReaderSet) -> Bool {
            for index in candidates.words.indices {
                var bits = candidates.words[index] & present.word(index) & healthy.word(index)
                if needsExtended { bits &= extended.word(index) }
                if bits != 0 { return true }
            }
            return false
        }
        if pinned >= 0 {
            return present.contains(pinned) && healthy.contains(pinned)
                && (!needsExtended || extended.contains(pinned))
        }
        return any(lanes[lane].own) || (lanes[lane].configuration.overflowToShared && any(shared))
    }

    /// "N readers, M busy, K faulted" over the readers such a request could use.
    private func readerCounts(lane: Int, pinned: Int, needsExtended: Bool) -> String {
        var total = 0
        var busy = 0
        var faulted = 0
        func count(_ bits: UInt64, word: Int) {
            var bits = bits & present.word(word)
            if needsExtended { bits &= extended.word(word) }
            total += bits.nonzeroBitCount
            busy += (bits & leased.word(word) & healthy.word(word)).nonzeroBitCount
            faulted += (bits & ~healthy.word(word)).nonzeroBitCount
        }
        if pinned >= 0 {
            var only = ReaderSet()
            only.insert(pinned)
            for word in only.words.indices { count(only.words[word], word: word) }
        } else {
            let own = lanes[lane].own
            let overflow = lanes[lane].configuration.overflowToShared
            for word in 0..<max(own.words.count, overflow ? shared.words.count : 0) {
                count(own.word(word) | (overflow ? shared.word(word) : 0), word: word)
            }
        }
        return "\(total) readers, \(busy) busy, \(faulted) faulted"
    }

    private func holderLaneID(_ reader: Int) -> LaneID? {
        let lane = readers[reader].holderLane
        return lane >= 0 ? lanes[lane].id : nil
    }

    /// A present reader is healthy again (appeared or recovered): waiters that could use it have now seen a
    /// healthy reader, and if it is free it serves the oldest of them.
    private func readerBecameHealthy(_ reader: Int) {
        if !servableWaiters.isEmpty { wakeServableWaiters(for: reader) }
        if waitingCount > 0 {
            let isExtended = extended.contains(reader)
            func mark(_ queue: WaiterQueue) {
                queue.forEach { ref in
                    if waiters[ref.index].sequence == ref.sequence { waiters[ref.index].sawEligibleReader = true }
                }
            }
            var candidateLanes = readers[reader].claimingLanes
            if shared.contains(reader) { candidateLanes += overflowLanes }
            for lane in candidateLanes {
                mark(lanes[lane].anyQueue)
                if isExtended { mark(lanes[lane].extendedQueue) }
            }
            mark(readers[reader].pinnedAny)
            if isExtended { mark(readers[reader].pinnedExtended) }
        }
        if !leased.contains(reader) { readerFreed(reader) }
    }

    // MARK: Internals: grants

    private func grant(reader: Int, lane: Int, arrival: Duration, now: Duration) -> Lease {
        nextLeaseID += 1
        readers[reader].leaseID = nextLeaseID
        readers[reader].holderLane = lane
        readers[reader].interruption = nil
        leased.insert(reader)
        activeLeaseCount += 1
        let lease = Lease(
            id: nextLeaseID,
            reader: readers[reader].info,
            lane: lanes[lane].id,
            grantedAt: now,
            waited: now - arrival,
            slot: reader,
            poolID: poolID
        )
        if events.hasSubscribers {
            events.publish(
                KernelEvent(
                    .leaseGranted(leaseID: lease.id, waited: lease.waited),
                    lane: lease.lane,
                    reader: lease.reader.id,
                    time: now
                )
            )
        }
        return lease
    }

    /// Ends `lease` if it is current; returns what happened to its reader meanwhile.
    private func finish(_ lease: Lease) -> LeaseHealth {
        let reader = lease.slot
        guard lease.poolID == poolID, reader >= 0, reader < readers.count, readers[reader].leaseID == lease.id else {
            return .released
        }
        let health = readers[reader].interruption ?? .healthy
        readers[reader].leaseID = 0
        readers[reader].holderLane = -1
        readers[reader].interruption = nil
        leased.remove(reader)
        activeLeaseCount -= 1
        if events.hasSubscribers {
            events.publish(
                KernelEvent(
                    .leaseReleased(leaseID: lease.id),
                    lane: lease.lane,
                    reader: lease.reader.id,
                    time: clock.now
                )
            )
        }
        if present.contains(reader) && healthy.contains(reader) { readerFreed(reader) }
        return health
    }

    /// A present, healthy, unleased reader: hand it to the oldest waiter that can use it, or leave it idle.
    private func readerFreed(_ reader: Int) {
        while waitingCount > 0, let ref = takeOldestWaiter(for: reader) {
            let waiter = removeWaiter(ref)
            // Not taken: the request was cancelled and has resumed already; the next one gets the reader.
            let granted =
                waiter.continuation?.answer {
                    .success(grant(reader: reader, lane: waiter.lane, arrival: waiter.arrival, now: clock.now))
                } ?? false
            if granted { return }
        }
    }

    /// Removes and returns the oldest live waiter `reader` could serve, looking at the head of every queue it
    /// serves: its lanes (both queues when it has extended length), the overflow lanes if it is shared, and its
    /// pinned requests.
    private func takeOldestWaiter(for reader: Int) -> WaiterRef? {
        let isExtended = extended.contains(reader)
        // Where the best head so far sits: a lane (its any / extended queue) or this reader's pinned queues.
        var best: WaiterRef?
        var bestLane = -1
        var bestIsExtendedQueue = false
        func consider(_ lane: Int) {
            guard lanes[lane].waiting > 0 else { return }
            if let head = liveHead(&lanes[lane].anyQueue), head.sequence < best?.sequence ?? .max {
                (best, bestLane, bestIsExtendedQueue) = (head, lane, false)
            }
            if isExtended, let head = liveHead(&lanes[lane].extendedQueue), head.sequence < best?.sequence ?? .max {
                (best, bestLane, bestIsExtendedQueue) = (head, lane, true)
            }
        }
        for lane in readers[reader].claimingLanes { consider(lane) }
        if shared.contains(reader) {
            for lane in overflowLanes { consider(lane) }
        }
        if readers[reader].pinnedWaiting > 0 {
            if let head = liveHead(&readers[reader].pinnedAny), head.sequence < best?.sequence ?? .max {
                (best, bestLane, bestIsExtendedQueue) = (head, -1, false)
            }
            if isExtended, let head = liveHead(&readers[reader].pinnedExtended),
                head.sequence < best?.sequence ?? .max
            {
                (best, bestLane, bestIsExtendedQueue) = (head, -1, true)
            }
        }
        guard let best else { return nil }
        switch (bestLane >= 0, bestIsExtendedQueue) {
        case (true, true): lanes[bestLane].extendedQueue.removeFirst()
        case (true, false): lanes[bestLane].anyQueue.removeFirst()
        case (false, true): readers[reader].pinnedExtended.removeFirst()
        case (false, false): readers[reader].pinnedAny.removeFirst()
        }
        return best
    }

    /// Drops cancelled or expired entries at the head of `queue` and returns the live head.
    private func liveHead(_ queue: inout WaiterQueue) -> WaiterRef? {
        while let head = queue.first {
            if waiters[head.index].sequence == head.sequence { return head }
            queue.removeFirst()
        }
        return nil
    }

    // MARK: Internals: waiters

    private func isLive(_ ref: WaiterRef) -> Bool { waiters[ref.index].sequence == ref.sequence }

    private func enqueue(_ slot: WaiterSlot) -> WaiterRef {
        nextSequence += 1
        var slot = slot
        slot.sequence = nextSequence
        let index: Int
        if let free = freeWaiterSlots.popLast() {
            index = free
            waiters[index] = slot
        } else {
            index = waiters.count
            waiters.append(slot)
        }
        let ref = WaiterRef(index: index, sequence: nextSequence)
        if slot.pinned >= 0 {
            if readers[slot.pinned].pinnedWaiting == 0 {
                readers[slot.pinned].pinnedAny.removeAll()
                readers[slot.pinned].pinnedExtended.removeAll()
            }
            if slot.needsExtended {
                readers[slot.pinned].pinnedExtended.append(ref)
            } else {
                readers[slot.pinned].pinnedAny.append(ref)
            }
            readers[slot.pinned].pinnedWaiting += 1
        } else {
            if lanes[slot.lane].waiting == 0 {
                lanes[slot.lane].anyQueue.removeAll()
                lanes[slot.lane].extendedQueue.removeAll()
            }
            if slot.needsExtended {
                lanes[slot.lane].extendedQueue.append(ref)
            } else {
                lanes[slot.lane].anyQueue.append(ref)
            }
        }
        lanes[slot.lane].waiting += 1
        waitingCount += 1

        if deadlines.count > 2 * waitingCount + 64 { deadlines.compact(keeping: isLive) }
        deadlines.push(DeadlineHeap.Entry(deadline: slot.deadline, ref: ref))
        if timerDeadline.map({ slot.deadline < $0 }) ?? true { timerWakeup.set() }
        return ref
    }

    /// Frees the waiter's slot (its queue and heap entries die with it) and returns what it held.
    private func removeWaiter(_ ref: WaiterRef) -> WaiterSlot {
        let slot = waiters[ref.index]
        waiters[ref.index].sequence = 0
        waiters[ref.index].continuation = nil
        freeWaiterSlots.append(ref.index)
        lanes[slot.lane].waiting -= 1
        if slot.pinned >= 0 { readers[slot.pinned].pinnedWaiting -= 1 }
        waitingCount -= 1
        return slot
    }

    private func cancellationError(_ slot: WaiterSlot, now: Duration) -> ProximaError {
        ProximaError(
            .cancelled,
            "the request for a reader of lane \(lanes[slot.lane].id) was cancelled after waiting \(now - slot.arrival)",
            reader: slot.pinned >= 0 ? readers[slot.pinned].info.id : nil,
            lane: lanes[slot.lane].id
        )
    }

    private func expiryError(_ slot: WaiterSlot, now: Duration) -> ProximaError {
        let lane = lanes[slot.lane].id
        let pinnedID = slot.pinned >= 0 ? readers[slot.pinned].info.id : nil
        let target = pinnedID.map { "reader \($0) (pinned)" } ?? "a reader of lane \(lane)"
        let extendedNote = slot.needsExtended ? " with extended length" : ""
        let counts = readerCounts(lane: slot.lane, pinned: slot.pinned, needsExtended: slot.needsExtended)
        if !slot.sawEligibleReader {
            return ProximaError(
                .readerUnavailable,
                "waited \(now - slot.arrival) for \(target)\(extendedNote) but none was present and healthy "
                    + "(\(counts)); check the lane's reader mapping and that its readers are connected",
                reader: pinnedID,
                lane: lane
            )
        }
        return ProximaError(
            .deadlineExceeded,
            "waited \(now - slot.arrival) for \(target)\(extendedNote) (\(counts)); all were busy or out of rotation",
            reader: pinnedID,
            lane: lane
        )
    }

    // MARK: Deadline timer

    /// Fails waiting requests at their deadlines until the task is cancelled or the pool shuts down.
    ///
    /// The kernel runs it as a child of its task group; a pool used on its own (tests, benchmarks) needs it
    /// running for deadlines to fire (a deadline already past on arrival fails at once without it). It sleeps until
    /// the earliest live deadline and wakes early only when an earlier one arrives. A second concurrent call returns
    /// at once.
    package func run() async {
        guard !isRunning else { return }
        isRunning = true
        defer {
            isRunning = false
            timerDeadline = nil
        }
        while !isShutDown && !Task.isCancelled {
            expireDueWaiters()
            timerWakeup.reset()
            while let top = deadlines.min, !isLive(top.ref) { deadlines.popMin() }
            guard let earliest = deadlines.min?.deadline else {
                timerDeadline = nil
                await timerWakeup.wait()
                continue
            }
            timerDeadline = earliest
            await withTaskGroup(of: Void.self) { group in
                group.addTask { [clock] in try? await clock.sleep(until: earliest) }
                group.addTask { [timerWakeup] in await timerWakeup.wait() }
                await group.next()
                group.cancelAll()
            }
        }
    }

    private func expireDueWaiters() {
        let now = clock.now
        while let top = deadlines.min, top.deadline <= now {
            deadlines.popMin()
            guard isLive(top.ref) else { continue }
            let slot = removeWaiter(top.ref)
            slot.continuation?.answer { .failure(expiryError(slot, now: now)) }
        }
    }

    // MARK: Internals: events

    private func publish(_ kind: KernelEvent.Kind, lane: LaneID?, reader: ReaderID) {
        guard events.hasSubscribers else { return }
        events.publish(KernelEvent(kind, lane: lane, reader: reader, time: clock.now))
    }

    /// `error` as a holder whose reader faulted or vanished meanwhile should see it: the interruption, with
    /// `error` kept as its ``ProximaCore/ProximaError/underlying`` cause.
    static func translate(_ error: any Error, health: LeaseHealth, lease: Lease) -> any Error {
        guard let interruption = health.error(for: lease), !(error is CancellationError) else { return error }
        if let proxima = error as? ProximaError,
            [.readerFaulted, .readerVanished, .cancelled, .deadlineExceeded].contains(proxima.code)
        {
            return error
        }
        return ProximaError(
            interruption.code,
            "\(interruption.reason); the work on it failed with: \(error)",
            reader: lease.reader.id,
            lane: lease.lane,
            underlying: error
        )
    }
}
