import ProximaCore
import Synchronization
import Testing

@testable import ProximaKernel

// MARK: Helpers shared by the kernel's scheduler tests

func readerInfo(_ id: String, name: String? = nil, extended: Bool = true) -> ReaderInfo {
    ReaderInfo(id: ReaderID(id), name: name ?? "Reader \(id)", transport: "test", supportsExtendedLength: extended)
}

/// Polls `condition`, yielding between tries, until it holds; false if it never does within `tries`.
///
/// Used to let the pool's tasks settle after an injected action; never waits on wall-clock time.
func settle(tries: Int = 200_000, _ condition: () async -> Bool) async -> Bool {
    for _ in 0..<tries {
        if await condition() { return true }
        await Task.yield()
    }
    return await condition()
}

/// A task asking the pool for a lease, whose outcome the test reads without risking a hang: a scheduler bug
/// that never answers fails the test instead of blocking it.
struct LeaseWaiter: Sendable {
    final class Outcome: Sendable {
        let result = Mutex<Result<Lease, any Error>?>(nil)
    }

    struct NeverAnswered: Error {}

    let outcome: Outcome
    let task: Task<Void, Never>

    init(pool: ReaderPool, request: LeaseRequest, onGrant: @escaping @Sendable (Lease) -> Void = { _ in }) {
        let outcome = Outcome()
        self.outcome = outcome
        task = Task {
            do {
                let lease = try await pool.lease(request)
                onGrant(lease)
                outcome.result.withLock { $0 = .success(lease) }
            } catch {
                outcome.result.withLock { $0 = .failure(error) }
            }
        }
    }

    func cancel() { task.cancel() }

    var isFinished: Bool { outcome.result.withLock { $0 != nil } }

    /// The lease, once the pool answers.
    var value: Lease {
        get async throws {
            guard await settle({ isFinished }) else {
                Issue.record("the lease request never ended")
                throw NeverAnswered()
            }
            return try outcome.result.withLock { $0! }.get()
        }
    }

    /// The code the request failed with, or `nil` if it was granted (the lease is then released).
    func failureCode(pool: ReaderPool) async -> ProximaError.Code? {
        do {
            let lease = try await value
            await pool.release(lease)
            return nil
        } catch let error as ProximaError {
            return error.code
        } catch {
            Issue.record("unexpected error: \(error)")
            return nil
        }
    }
}

/// Records values from many tasks in order.
final class OrderRecorder<Value: Sendable>: Sendable {
    private let values = Mutex<[Value]>([])
    func append(_ value: Value) { values.withLock { $0.append(value) } }
    var all: [Value] { values.withLock { $0 } }
}

struct BodyError: Error, Equatable {}

struct PoolFixture {
    let clock = ManualClock()
    let events = KernelEventBus()
    let pool: ReaderPool
    /// The pool's deadline timer. A test-owned task because the fixture has no scope to hold a task group; it ends
    /// when the test shuts the pool down, and otherwise stays suspended on the pool's wake-up signal.
    let timer: Task<Void, Never>

    init(_ lanes: [LaneConfiguration]) {
        let pool = ReaderPool(lanes: lanes, clock: KernelClock(clock), events: events)
        self.pool = pool
        timer = Task { await pool.run() }
    }

    func appear(_ infos: ReaderInfo...) async {
        for info in infos { await pool.readerAppeared(info) }
    }

    func waitForWaiting(_ count: Int) async -> Bool {
        await settle { await pool.waitingCount == count }
    }

    /// Starts a task that leases for `request`, and waits until the pool has queued it.
    func startWaiter(_ request: LeaseRequest, onGrant: @escaping @Sendable (Lease) -> Void = { _ in }) async
        -> LeaseWaiter
    {
        let before = await pool.waitingCount
        let waiter = LeaseWaiter(pool: pool, request: request, onGrant: onGrant)
        let queued = await waitForWaiting(before + 1)
        #expect(queued, "the request for lane \(request.lane) never queued")
        return waiter
    }

    func state(of id: ReaderID) async -> PoolSnapshot.ReaderState? {
        await pool.snapshot().readers.first { $0.info.id == id }?.state
    }
}

// MARK: ReaderPool

@Suite struct ReaderPoolTests {
    @Test func grantsAFreeReaderAtOnce() async throws {
        let fixture = PoolFixture([LaneConfiguration(id: "A", readerIDs: ["r1"])])
        await fixture.appear(readerInfo("r1"))
        let lease = try await fixture.pool.lease(LeaseRequest(lane: "A"))
        #expect(lease.reader.id == "r1")
        #expect(lease.lane == "A")
        #expect(lease.waited == .zero)
        #expect(await fixture.pool.activeLeaseCount == 1)
        #expect(await fixture.state(of: "r1") == .leased)
        // A lease of another pool, even with the same id and slot, is not this pool's.
        let other = PoolFixture([LaneConfiguration(id: "A", readerIDs: ["r1"])])
        await other.appear(readerInfo("r1"))
        let foreign = try await other.pool.lease(LeaseRequest(lane: "A"))
        #expect(foreign.id == lease.id)
        #expect(foreign != lease)
        await fixture.pool.release(foreign)
        #expect(await fixture.pool.activeLeaseCount == 1)
        #expect(await fixture.pool.health(of: foreign) == .released)

        await fixture.pool.release(lease)
        await fixture.pool.release(lease)  // idempotent
        #expect(await fixture.pool.activeLeaseCount == 0)
        #expect(await fixture.state(of: "r1") == .idle)
        await other.pool.release(foreign)
    }

    @Test func unknownLaneFails() async {
        let fixture = PoolFixture([LaneConfiguration(id: "A")])
        await #expect(throws: ProximaError(.noSuchLane)) { try await fixture.pool.lease(LeaseRequest(lane: "B")) }
    }

    @Test func servesOneLaneInArrivalOrder() async throws {
        let fixture = PoolFixture([LaneConfiguration(id: "A", readerIDs: ["r1"])])
        await fixture.appear(readerInfo("r1"))
        let first = try await fixture.pool.lease(LeaseRequest(lane: "A"))
        let order = OrderRecorder<Int>()
        var tasks: [LeaseWaiter] = []
        for index in 0..<5 {
            tasks.append(await fixture.startWaiter(LeaseRequest(lane: "A")) { _ in order.append(index) })
        }
        var held = first
        fixture.clock.advance(by: .seconds(1))
        for index in 0..<5 {
            await fixture.pool.release(held)
            held = try await tasks[index].value
            #expect(held.waited == .seconds(1))
            #expect(order.all == Array(0...index))
        }
        await fixture.pool.release(held)
        #expect(await fixture.pool.activeLeaseCount == 0)
    }

    @Test func failFastLaneFailsWhenBusy() async throws {
        let fixture = PoolFixture([LaneConfiguration(id: "A", readerIDs: ["r1"], queuePolicy: .failFast)])
        await #expect(throws: ProximaError(.readerUnavailable)) {
            try await fixture.pool.lease(LeaseRequest(lane: "A"))
        }
        await fixture.appear(readerInfo("r1"))
        let lease = try await fixture.pool.lease(LeaseRequest(lane: "A"))
        do {
            _ = try await fixture.pool.lease(LeaseRequest(lane: "A"))
            Issue.record("a busy fail-fast lane granted a lease")
        } catch let error as ProximaError {
            #expect(error.code == .readerBusy)
            #expect(error.lane == "A")
            #expect(error.reason.contains("1 readers, 1 busy, 0 faulted"))
        }
        await fixture.pool.release(lease)
    }

    @Test func deadlinePassesOnTheManualClock() async throws {
        let fixture = PoolFixture([
            LaneConfiguration(id: "A", readerIDs: ["r1"], queuePolicy: .wait(maxWait: .seconds(10)))
        ])
        await fixture.appear(readerInfo("r1"))
        let held = try await fixture.pool.lease(LeaseRequest(lane: "A"))
        let byPolicy = await fixture.startWaiter(LeaseRequest(lane: "A"))
        let byRequest = await fixture.startWaiter(LeaseRequest(lane: "A", deadline: .seconds(4)))

        fixture.clock.advance(by: .seconds(3))
        #expect(await fixture.pool.waitingCount == 2)
        fixture.clock.advance(by: .seconds(1))
        #expect(await byRequest.failureCode(pool: fixture.pool) == .deadlineExceeded)
        #expect(await fixture.pool.waitingCount == 1)

        fixture.clock.advance(by: .seconds(5))
        #expect(await fixture.pool.waitingCount == 1)
        fixture.clock.advance(by: .seconds(1))
        do {
            _ = try await byPolicy.value
            Issue.record("the request outlived its deadline")
        } catch let error as ProximaError {
            #expect(error.code == .deadlineExceeded)
            #expect(error.lane == "A")
            #expect(error.reason.contains("waited 10.0 seconds"))
            #expect(error.reason.contains("1 readers, 1 busy, 0 faulted"))
        }
        #expect(await fixture.pool.waitingCount == 0)
        await fixture.pool.release(held)
        #expect(await fixture.state(of: "r1") == .idle)
    }

    @Test func deadlineWithoutAnyReaderIsUnavailable() async throws {
        let fixture = PoolFixture([
            LaneConfiguration(id: "A", readerIDs: ["r1"], queuePolicy: .wait(maxWait: .seconds(2)))
        ])
        let waiter = await fixture.startWaiter(LeaseRequest(lane: "A"))
        fixture.clock.advance(by: .seconds(2))
        #expect(await waiter.failureCode(pool: fixture.pool) == .readerUnavailable)
        // A deadline already past fails at once, without queueing.
        await #expect(throws: ProximaError(.readerUnavailable)) {
            try await fixture.pool.lease(LeaseRequest(lane: "A", deadline: .seconds(1)))
        }
    }

    @Test func readerAppearingLateServesTheWaiter() async throws {
        let fixture = PoolFixture([LaneConfiguration(id: "A", readerNamePatterns: ["ACS ACR122U*"])])
        let waiter = await fixture.startWaiter(LeaseRequest(lane: "A"))
        await fixture.appear(readerInfo("other", name: "Identiv uTrust"))
        #expect(await fixture.pool.waitingCount == 1)
        await fixture.appear(readerInfo("acs", name: "ACS ACR122U PICC Interface 00 00"))
        let lease = try await waiter.value
        #expect(lease.reader.id == "acs")
        await fixture.pool.release(lease)
    }

    @Test func cancellingAWaiterRemovesIt() async throws {
        let fixture = PoolFixture([LaneConfiguration(id: "A", readerIDs: ["r1"])])
        await fixture.appear(readerInfo("r1"))
        let held = try await fixture.pool.lease(LeaseRequest(lane: "A"))
        let cancelled = await fixture.startWaiter(LeaseRequest(lane: "A"))
        let next = await fixture.startWaiter(LeaseRequest(lane: "A"))
        cancelled.cancel()
        #expect(await cancelled.failureCode(pool: fixture.pool) == .cancelled)
        #expect(await fixture.pool.waitingCount == 1)
        await fixture.pool.release(held)
        let lease = try await next.value
        #expect(lease.reader.id == "r1")
        await fixture.pool.release(lease)
        #expect(await fixture.pool.activeLeaseCount == 0)
    }

    @Test func cancelledTaskGetsNoLease() async throws {
        let fixture = PoolFixture([LaneConfiguration(id: "A", readerIDs: ["r1"])])
        await fixture.appear(readerInfo("r1"))
        let held = try await fixture.pool.lease(LeaseRequest(lane: "A"))
        let task = Task { [pool = fixture.pool] in
            withUnsafeCurrentTask { $0?.cancel() }
            return try await pool.lease(LeaseRequest(lane: "A"))
        }
        await #expect(throws: ProximaError(.cancelled)) { try await task.value }
        #expect(await fixture.pool.waitingCount == 0)
        await fixture.pool.release(held)
        // Not even a free reader goes to a cancelled task.
        let again = Task { [pool = fixture.pool] in
            withUnsafeCurrentTask { $0?.cancel() }
            return try await pool.lease(LeaseRequest(lane: "A"))
        }
        await #expect(throws: ProximaError(.cancelled)) { try await again.value }
        #expect(await fixture.pool.activeLeaseCount == 0)
    }

    @Test func withLeaseReleasesWhenTheBodyThrows() async throws {
        let fixture = PoolFixture([LaneConfiguration(id: "A", readerIDs: ["r1"])])
        await fixture.appear(readerInfo("r1"))
        await #expect(throws: BodyError()) {
            try await fixture.pool.withLease(LeaseRequest(lane: "A")) { _ in throw BodyError() }
        }
        #expect(await fixture.pool.activeLeaseCount == 0)
        let value = try await fixture.pool.withLease(LeaseRequest(lane: "A")) { lease in lease.reader.id.rawValue }
        #expect(value == "r1")
        #expect(await fixture.pool.activeLeaseCount == 0)
        #expect(await fixture.state(of: "r1") == .idle)
    }

    @Test func withLeaseReleasesOnCancellation() async throws {
        let fixture = PoolFixture([LaneConfiguration(id: "A", readerIDs: ["r1"])])
        await fixture.appear(readerInfo("r1"))
        let task = Task { [pool = fixture.pool, clock = fixture.clock] in
            try await pool.withLease(LeaseRequest(lane: "A")) { _ in
                try await clock.sleep(for: .seconds(60))
            }
        }
        await fixture.clock.waitForSleepers(1)
        #expect(await fixture.pool.activeLeaseCount == 1)
        task.cancel()
        await #expect(throws: CancellationError.self) { try await task.value }
        #expect(await fixture.pool.activeLeaseCount == 0)
        #expect(await fixture.state(of: "r1") == .idle)
    }

    @Test func faultedLeasedReaderStaysOutUntilRecovered() async throws {
        let fixture = PoolFixture([LaneConfiguration(id: "A", readerIDs: ["r1"])])
        await fixture.appear(readerInfo("r1"))
        let lease = try await fixture.pool.lease(LeaseRequest(lane: "A"))
        await fixture.pool.readerFaulted("r1", reason: "RF field error")
        #expect(await fixture.pool.health(of: lease) == .readerFaulted(reason: "RF field error"))
        #expect(LeaseHealth.readerFaulted(reason: "x").error(for: lease)?.code == .readerFaulted)
        let snapshot = await fixture.pool.snapshot()
        #expect(snapshot.readers.first?.state == .faulted(reason: "RF field error"))
        #expect(snapshot.readers.first?.leaseID == lease.id)
        #expect(snapshot.readers.first?.holderLane == "A")

        let waiter = await fixture.startWaiter(LeaseRequest(lane: "A"))
        await fixture.pool.release(lease)
        #expect(await fixture.pool.health(of: lease) == .released)
        #expect(await fixture.pool.activeLeaseCount == 0)
        #expect(await fixture.pool.waitingCount == 1)
        #expect(await fixture.state(of: "r1") == .faulted(reason: "RF field error"))

        await fixture.pool.readerRecovered("r1")
        let next = try await waiter.value
        #expect(next.reader.id == "r1")
        #expect(await fixture.pool.health(of: next) == .healthy)
        await fixture.pool.release(next)
        #expect(await fixture.state(of: "r1") == .idle)
    }

    @Test func readerRecoveredDuringTheLeaseReturnsOnRelease() async throws {
        let fixture = PoolFixture([LaneConfiguration(id: "A", readerIDs: ["r1"])])
        await fixture.appear(readerInfo("r1"))
        let lease = try await fixture.pool.lease(LeaseRequest(lane: "A"))
        await fixture.pool.readerFaulted("r1", reason: "glitch")
        await fixture.pool.readerRecovered("r1")
        // The holder still learns that its reader faulted.
        #expect(await fixture.pool.health(of: lease) == .readerFaulted(reason: "glitch"))
        await fixture.pool.release(lease)
        #expect(await fixture.state(of: "r1") == .idle)
    }

    @Test func withLeaseReportsAFaultAsTheFailure() async throws {
        let fixture = PoolFixture([LaneConfiguration(id: "A", readerIDs: ["r1"])])
        await fixture.appear(readerInfo("r1"))
        do {
            try await fixture.pool.withLease(LeaseRequest(lane: "A")) { lease in
                await fixture.pool.readerFaulted(lease.reader.id, reason: "USB reset")
                throw ProximaError(.transmitFailed, "link down")
            }
            Issue.record("withLease succeeded")
        } catch let error as ProximaError {
            #expect(error.code == .readerFaulted)
            #expect(error.reader == "r1")
            #expect(error.reason.contains("USB reset"))
            #expect(error.reason.contains("link down"))
        }
        #expect(await fixture.pool.activeLeaseCount == 0)
    }

    @Test func vanishedReaderLeavesAndComesBack() async throws {
        let fixture = PoolFixture([LaneConfiguration(id: "A", readerIDs: ["r1"])])
        await fixture.appear(readerInfo("r1"))
        let lease = try await fixture.pool.lease(LeaseRequest(lane: "A"))
        await fixture.pool.readerVanished("r1")
        #expect(await fixture.pool.health(of: lease) == .readerVanished)
        let waiter = await fixture.startWaiter(LeaseRequest(lane: "A"))
        await fixture.pool.release(lease)
        #expect(await fixture.state(of: "r1") == .vanished)
        #expect(await fixture.pool.waitingCount == 1)

        await fixture.appear(readerInfo("r1"))
        let next = try await waiter.value
        #expect(next.reader.id == "r1")
        await fixture.pool.release(next)

        // A reader that comes back after vanishing while faulted starts healthy.
        await fixture.pool.readerFaulted("r1", reason: "stuck")
        await fixture.pool.readerVanished("r1")
        await fixture.appear(readerInfo("r1"))
        #expect(await fixture.state(of: "r1") == .idle)
    }

    @Test func pinnedRequestUsesOnlyItsReader() async throws {
        let fixture = PoolFixture([
            LaneConfiguration(id: "A", readerIDs: ["r1"]),
            LaneConfiguration(id: "B", readerIDs: ["r2"]),
        ])
        await fixture.appear(readerInfo("r1"), readerInfo("r2"))
        // Pinned bypasses lane membership: lane A may use B's reader when it names it.
        let pinned = try await fixture.pool.lease(LeaseRequest(lane: "A", pinnedReader: "r2"))
        #expect(pinned.reader.id == "r2")
        #expect(pinned.lane == "A")
        // r1 is free, but a request pinned to the busy r2 waits for r2.
        let waiter = await fixture.startWaiter(LeaseRequest(lane: "A", pinnedReader: "r2"))
        #expect(await fixture.state(of: "r1") == .idle)
        await fixture.pool.release(pinned)
        let next = try await waiter.value
        #expect(next.reader.id == "r2")
        await fixture.pool.release(next)

        // A reader nobody has seen yet: wait for it.
        let ghost = await fixture.startWaiter(LeaseRequest(lane: "B", pinnedReader: "r9"))
        await fixture.appear(readerInfo("r9"))
        let late = try await ghost.value
        #expect(late.reader.id == "r9")
        await fixture.pool.release(late)
    }

    @Test func overflowLaneUsesTheSharedPool() async throws {
        let fixture = PoolFixture([
            LaneConfiguration(id: "A", readerIDs: ["own"], overflowToShared: true),
            LaneConfiguration(id: "B", readerIDs: ["b"], queuePolicy: .failFast),
        ])
        await fixture.appear(readerInfo("shared1"), readerInfo("own"), readerInfo("b"))
        let snapshot = await fixture.pool.snapshot()
        #expect(snapshot.readers.first { $0.info.id == "shared1" }?.isShared == true)
        #expect(snapshot.readers.first { $0.info.id == "own" }?.lanes == ["A"])

        let first = try await fixture.pool.lease(LeaseRequest(lane: "A"))
        #expect(first.reader.id == "own", "own readers come first")
        let second = try await fixture.pool.lease(LeaseRequest(lane: "A"))
        #expect(second.reader.id == "shared1")
        let onB = try await fixture.pool.lease(LeaseRequest(lane: "B"))
        #expect(onB.reader.id == "b")
        // B does not overflow: with its own reader busy it fails although shared1 is free again.
        await fixture.pool.release(second)
        await #expect(throws: ProximaError(.readerBusy)) { try await fixture.pool.lease(LeaseRequest(lane: "B")) }

        // A waiter of A gets a shared reader when one frees up.
        let third = try await fixture.pool.lease(LeaseRequest(lane: "A"))
        #expect(third.reader.id == "shared1")
        let waiter = await fixture.startWaiter(LeaseRequest(lane: "A"))
        await fixture.pool.release(third)
        let handedOver = try await waiter.value
        #expect(handedOver.reader.id == "shared1")
        for lease in [first, onB, handedOver] { await fixture.pool.release(lease) }
        #expect(await fixture.pool.activeLeaseCount == 0)
    }

    @Test func extendedLengthRequestsWaitForACapableReader() async throws {
        let fixture = PoolFixture([LaneConfiguration(id: "A", readerNamePatterns: ["*"])])
        await fixture.appear(readerInfo("short", extended: false))
        let waiter = await fixture.startWaiter(LeaseRequest(lane: "A", needsExtendedLength: true))
        // A plain request behind it may take the short-only reader.
        let plain = try await fixture.pool.lease(LeaseRequest(lane: "A"))
        #expect(plain.reader.id == "short")
        await fixture.appear(readerInfo("long", extended: true))
        let lease = try await waiter.value
        #expect(lease.reader.id == "long")
        await fixture.pool.release(lease)
        await fixture.pool.release(plain)
    }

    @Test func shutdownFailsWaitersAndNewRequests() async throws {
        let fixture = PoolFixture([LaneConfiguration(id: "A", readerIDs: ["r1"])])
        await fixture.appear(readerInfo("r1"))
        let held = try await fixture.pool.lease(LeaseRequest(lane: "A"))
        let waiters = [
            await fixture.startWaiter(LeaseRequest(lane: "A")),
            await fixture.startWaiter(LeaseRequest(lane: "A", deadline: .seconds(5))),
        ]
        await fixture.clock.waitForSleepers(1)  // the deadline timer
        await fixture.pool.shutdown()
        for waiter in waiters { #expect(await waiter.failureCode(pool: fixture.pool) == .shuttingDown) }
        #expect(await settle { fixture.clock.sleeperCount == 0 }, "the timer task was not stopped")
        await #expect(throws: ProximaError(.shuttingDown)) { try await fixture.pool.lease(LeaseRequest(lane: "A")) }
        await fixture.pool.release(held)
        let snapshot = await fixture.pool.snapshot()
        #expect(snapshot.isShutDown)
        #expect(snapshot.activeLeaseCount == 0)
        #expect(snapshot.waiting.isEmpty)
    }

    @Test func earlierDeadlineRearmsTheTimer() async throws {
        let fixture = PoolFixture([
            LaneConfiguration(id: "A", readerIDs: ["r1"], queuePolicy: .wait(maxWait: .seconds(100)))
        ])
        await fixture.appear(readerInfo("r1"))
        let held = try await fixture.pool.lease(LeaseRequest(lane: "A"))
        let late = await fixture.startWaiter(LeaseRequest(lane: "A"))
        let early = await fixture.startWaiter(LeaseRequest(lane: "A", deadline: .seconds(2)))
        #expect(await settle { fixture.clock.pendingDeadlines == [.zero.advanced(by: .seconds(2))] })
        fixture.clock.advance(by: .seconds(2))
        #expect(await early.failureCode(pool: fixture.pool) == .deadlineExceeded)
        #expect(await settle { fixture.clock.pendingDeadlines == [.zero.advanced(by: .seconds(100))] })
        await fixture.pool.release(held)
        let lease = try await late.value
        await fixture.pool.release(lease)
    }

    @Test func publishesLeaseAndReaderEvents() async throws {
        let fixture = PoolFixture([LaneConfiguration(id: "A", readerIDs: ["r1"])])
        let stream = fixture.events.subscribe()
        await fixture.appear(readerInfo("r1"))
        let lease = try await fixture.pool.lease(LeaseRequest(lane: "A"))
        await fixture.pool.readerFaulted("r1", reason: "hot")
        await fixture.pool.readerRecovered("r1")
        await fixture.pool.release(lease)
        await fixture.pool.readerVanished("r1")
        fixture.events.finish()
        var kinds: [KernelEvent.Kind] = []
        var lanes: [LaneID?] = []
        for await event in stream {
            kinds.append(event.kind)
            lanes.append(event.lane)
            #expect(event.reader == "r1")
        }
        #expect(
            kinds == [
                .readerAppeared, .leaseGranted(leaseID: lease.id, waited: .zero), .readerFaulted(reason: "hot"),
                .readerRecovered, .leaseReleased(leaseID: lease.id), .readerVanished,
            ]
        )
        #expect(lanes == [nil, "A", "A", "A", "A", nil])
    }

    @Test func snapshotListsQueues() async throws {
        let fixture = PoolFixture([
            LaneConfiguration(id: "A", readerIDs: ["r1"]),
            LaneConfiguration(id: "B", readerIDs: ["r1"]),
        ])
        await fixture.appear(readerInfo("r1"))
        let held = try await fixture.pool.lease(LeaseRequest(lane: "A"))
        let waiters = [
            await fixture.startWaiter(LeaseRequest(lane: "B")),
            await fixture.startWaiter(LeaseRequest(lane: "B", needsExtendedLength: true)),
        ]
        let snapshot = await fixture.pool.snapshot()
        #expect(snapshot.queueLengths == ["A": 0, "B": 2])
        #expect(snapshot.waiting.map(\.needsExtendedLength) == [false, true])
        #expect(snapshot.readers.map(\.lanes) == [["A", "B"]])
        await fixture.pool.release(held)
        for waiter in waiters {
            let lease = try await waiter.value
            await fixture.pool.release(lease)
        }
    }
}

// MARK: ManualClock

@Suite struct ManualClockTests {
    @Test func wakesSleepersInDeadlineOrder() async throws {
        let clock = ManualClock()
        let woken = OrderRecorder<Int>()
        var tasks: [Task<Void, any Error>] = []
        for seconds in [3, 1, 2] {
            tasks.append(
                Task {
                    try await clock.sleep(until: .zero.advanced(by: .seconds(seconds)))
                    woken.append(seconds)
                }
            )
        }
        await clock.waitForSleepers(3)
        #expect(clock.pendingDeadlines.map(\.offset) == [.seconds(1), .seconds(2), .seconds(3)])
        clock.advance(by: .milliseconds(1500))
        try await tasks[1].value
        #expect(woken.all == [1])
        #expect(clock.sleeperCount == 2)
        clock.advance(to: .zero.advanced(by: .seconds(3)))
        for task in tasks { try await task.value }
        #expect(Set(woken.all) == [1, 2, 3])
        #expect(clock.now.offset == .seconds(3))
        // Time never goes back; a sleep into the past returns at once.
        clock.advance(to: .zero)
        #expect(clock.now.offset == .seconds(3))
        try await clock.sleep(until: .zero.advanced(by: .seconds(1)))
    }

    @Test func cancellingASleeperThrowsAndRemovesIt() async throws {
        let clock = ManualClock()
        let task = Task { try await clock.sleep(for: .seconds(10)) }
        await clock.waitForSleepers(1)
        task.cancel()
        await #expect(throws: CancellationError.self) { try await task.value }
        #expect(clock.sleeperCount == 0)
        let early = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            try await clock.sleep(for: .seconds(10))
        }
        await #expect(throws: CancellationError.self) { try await early.value }
        #expect(clock.sleeperCount == 0)
    }

    @Test func waitForSleepersReturnsOnceEnoughSleep() async throws {
        let clock = ManualClock()
        await clock.waitForSleepers(0)
        let sleepers = (0..<4).map { _ in Task { try await clock.sleep(for: .seconds(1)) } }
        await clock.waitForSleepers(4)
        #expect(clock.sleeperCount == 4)
        clock.advance(by: .seconds(1))
        for sleeper in sleepers { try await sleeper.value }
        #expect(clock.sleeperCount == 0)
    }
}
