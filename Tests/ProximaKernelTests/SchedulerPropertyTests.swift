import ProximaCore
import ProximaTestSupport
import Synchronization
import Testing

@testable import ProximaKernel

extension SplitMix64 {
    /// True with the given probability.
    fileprivate mutating func chance(_ probability: Double) -> Bool { nextUnit() < probability }
    fileprivate mutating func int(_ range: ClosedRange<Int>) -> Int { Int.random(in: range, using: &self) }
}

/// How a requester task ended, written by the task and read by the scenario driver.
enum RequestOutcome: Sendable {
    case granted(Lease)
    case failed(ProximaError.Code, at: Duration, reason: String)
    case other(String)
}

/// Outcomes of every request of a scenario, keyed by request index. Invariant: guarded by its `Mutex`;
/// `duplicates` lists requests that were resolved twice (which must never happen).
final class OutcomeBoard: Sendable {
    private struct State {
        var outcomes: [Int: RequestOutcome] = [:]
        var duplicates: [Int] = []
    }
    private let state = Mutex(State())

    func record(_ request: Int, _ outcome: RequestOutcome) {
        state.withLock { state in
            if state.outcomes[request] != nil { state.duplicates.append(request) }
            state.outcomes[request] = outcome
        }
    }

    var resolvedCount: Int { state.withLock { $0.outcomes.count } }
    var duplicates: [Int] { state.withLock { $0.duplicates } }
    func outcome(_ request: Int) -> RequestOutcome? { state.withLock { $0.outcomes[request] } }
}

/// Where a scenario is, readable from another task: a scenario that never finishes (an answer the pool never gives)
/// is reported with its seed and this, instead of hanging the test run.
final class ScenarioProgress: Sendable {
    private let text = Mutex("not started")

    func set(_ description: String) { text.withLock { $0 = description } }
    var description: String { text.withLock { $0 } }
}

/// One random scenario on a manual clock: random lanes sharing random readers, random arrivals, releases,
/// cancellations, faults, recoveries, disappearances and clock steps. After every action it lets the pool
/// settle, then checks the scheduler's promises against an independent model.
final class SchedulerScenario {
    struct Request {
        var lane: Int
        var pinned: Int?
        var needsExtended: Bool
        var arrival: Duration
        /// `nil` on a fail-fast lane.
        var deadline: Duration?
        var sawEligibleReader = false
        var cancelRequested = false
        var resolvedStep: Int?
        var lease: Lease?
    }

    let seed: UInt64
    var random: SplitMix64
    let clock = ManualClock()
    let board = OutcomeBoard()
    let pool: ReaderPool
    let lanes: [LaneConfiguration]
    let readerIDs: [ReaderID]
    let readerExtended: [Bool]
    var appeared: [Bool]
    var present: [Bool]
    var faulted: [Bool]
    var requests: [Request] = []
    var tasks: [Task<Void, Never>] = []
    var unresolved: Set<Int> = []
    /// Lease id → (request, reader) for every lease the model thinks is held.
    var held: [UInt64: (request: Int, reader: Int)] = [:]
    var released: [Lease] = []
    var step = 0
    var actions: [String] = []
    var failures: [String] = []

    init(seed: UInt64) {
        self.seed = seed
        var random = SplitMix64(seed: seed)
        let readerCount = random.int(2...5)
        let laneCount = random.int(1...4)
        readerIDs = (0..<readerCount).map { ReaderID("r\($0)") }
        readerExtended = (0..<readerCount).map { _ in random.chance(0.7) }
        var lanes: [LaneConfiguration] = []
        for lane in 0..<laneCount {
            let claimed = (0..<readerCount).filter { _ in random.chance(0.35) }.map { ReaderID("r\($0)") }
            lanes.append(
                LaneConfiguration(
                    id: LaneID("L\(lane)"),
                    readerIDs: claimed,
                    overflowToShared: random.chance(0.5),
                    queuePolicy: random.chance(0.15) ? .failFast : .wait(maxWait: .seconds(random.int(1...20)))
                )
            )
        }
        self.lanes = lanes
        appeared = (0..<readerCount).map { _ in random.chance(0.75) }
        present = appeared
        faulted = Array(repeating: false, count: readerCount)
        self.random = random
        pool = ReaderPool(lanes: lanes, clock: KernelClock(clock), events: KernelEventBus())
    }

    // MARK: Model

    var now: Duration { clock.now.offset }

    func claims(_ lane: Int, _ reader: Int) -> Bool { lanes[lane].readerIDs.contains(readerIDs[reader]) }

    func isShared(_ reader: Int) -> Bool { !lanes.indices.contains { claims($0, reader) } }

    func eligible(_ request: Request, _ reader: Int) -> Bool {
        if request.needsExtended && !readerExtended[reader] { return false }
        if let pinned = request.pinned { return pinned == reader }
        return claims(request.lane, reader) || (lanes[request.lane].overflowToShared && isShared(reader))
    }

    func isHeld(_ reader: Int) -> Bool { held.values.contains { $0.reader == reader } }
    func isHealthy(_ reader: Int) -> Bool { present[reader] && !faulted[reader] }
    func isIdle(_ reader: Int) -> Bool { isHealthy(reader) && !isHeld(reader) }

    func fail(_ message: String) {
        guard failures.count < 3 else { return }
        failures.append("seed \(seed) step \(step): \(message); recent actions: \(actions.suffix(8))")
    }

    // MARK: Driving

    private func drive(steps: Int, progress: ScenarioProgress) async {
        for (index, info) in readerInfos.enumerated() where appeared[index] { await pool.readerAppeared(info) }
        while step < steps && failures.isEmpty {
            step += 1
            progress.set("at step \(step) (replay the seed for its actions)")
            await randomAction()
            await settleAndCheck()
        }
        progress.set("draining after step \(step)")
        if failures.isEmpty { await drain() }
    }

    func run(steps: Int, progress: ScenarioProgress = ScenarioProgress()) async -> [String] {
        await withTaskGroup(of: Void.self) { timer in
            timer.addTask { [pool] in await pool.run() }
            await drive(steps: steps, progress: progress)
            let before = await pool.snapshot()
            progress.set("shutting the pool down; its timer ending")
            await pool.shutdown()  // ends the timer too
            progress.set(
                "after shutdown; before it \(before.waiting.count) waiting: \(before.waiting)"
            )
        }
        let context = "failures \(failures); \(progress.description); actions \(actions)"
        for (index, task) in tasks.enumerated() {
            progress.set(
                "awaiting the requester of #\(index) after shutdown: \(requests[index]), on the board "
                    + "\(String(describing: board.outcome(index))); \(context)"
            )
            await task.value
        }
        progress.set("waiting for the clock's sleepers to leave")
        if !(await settle { self.clock.sleeperCount == 0 }) { fail("the pool left \(clock.sleeperCount) sleepers") }
        if !board.duplicates.isEmpty { fail("requests resolved twice: \(board.duplicates)") }
        return failures
    }

    var readerInfos: [ReaderInfo] {
        readerIDs.indices.map { readerInfo(readerIDs[$0].rawValue, extended: readerExtended[$0]) }
    }

    func randomAction() async {
        let roll = random.int(0...99)
        switch roll {
        case 0..<35: await arrive()
        case 35..<57: await releaseOne()
        case 57..<72:
            let amount: Duration = random.chance(0.2) ? .milliseconds(500) : .seconds(random.int(1...6))
            actions.append("advance \(amount)")
            clock.advance(by: amount)
        case 72..<79: cancelOne()
        case 79..<84:
            let index = random.int(0...(readerIDs.count - 1))
            actions.append("fault r\(index)")
            await pool.readerFaulted(readerIDs[index], reason: "fault at step \(step)")
            if appeared[index] { faulted[index] = true }
        case 84..<89:
            let index = random.int(0...(readerIDs.count - 1))
            actions.append("recover r\(index)")
            await pool.readerRecovered(readerIDs[index])
            faulted[index] = false
        case 89..<93:
            let index = random.int(0...(readerIDs.count - 1))
            actions.append("vanish r\(index)")
            await pool.readerVanished(readerIDs[index])
            present[index] = false
        default:
            let index = random.int(0...(readerIDs.count - 1))
            await appear(index)
        }
        updateSawEligible()
    }

    func appear(_ index: Int) async {
        actions.append("appear r\(index)")
        await pool.readerAppeared(readerInfos[index])
        if !present[index] { faulted[index] = false }
        present[index] = true
        appeared[index] = true
    }

    func updateSawEligible() {
        for index in unresolved where !requests[index].sawEligibleReader {
            if readerIDs.indices.contains(where: { eligible(requests[index], $0) && isHealthy($0) }) {
                requests[index].sawEligibleReader = true
            }
        }
    }

    func arrive() async {
        let lane = random.int(0...(lanes.count - 1))
        let pinned = random.chance(0.12) ? random.int(0...(readerIDs.count - 1)) : nil
        let needsExtended = random.chance(0.2)
        let explicit: Duration? = random.chance(0.3) ? now + .seconds(random.int(0...15)) : nil
        var deadline: Duration? = nil
        if case .wait(let maxWait) = lanes[lane].queuePolicy {
            deadline = min(explicit ?? .seconds(Int64.max / 4), now + maxWait)
        }
        var request = Request(
            lane: lane,
            pinned: pinned,
            needsExtended: needsExtended,
            arrival: now,
            deadline: deadline
        )
        let healthyEligible = readerIDs.indices.filter { eligible(request, $0) && isHealthy($0) }
        request.sawEligibleReader = !healthyEligible.isEmpty
        let idle = healthyEligible.filter { !isHeld($0) }
        let ownIdle = pinned == nil ? idle.filter { claims(lane, $0) } : idle

        let index = requests.count
        requests.append(request)
        unresolved.insert(index)
        actions.append(
            "arrive #\(index) L\(lane)\(pinned.map { " pinned r\($0)" } ?? "")\(needsExtended ? " ext" : "")"
                + "\(explicit.map { " deadline \($0)" } ?? "")"
        )
        let leaseRequest = LeaseRequest(
            lane: lanes[lane].id,
            deadline: explicit,
            pinnedReader: pinned.map { readerIDs[$0] },
            needsExtendedLength: needsExtended
        )
        tasks.append(
            Task { [pool, board, clock] in
                do {
                    board.record(index, .granted(try await pool.lease(leaseRequest)))
                } catch let error as ProximaError {
                    board.record(index, .failed(error.code, at: clock.now.offset, reason: error.reason))
                } catch {
                    board.record(index, .other("\(error)"))
                }
            }
        )
        await settleAndCheck()

        // What must have happened at arrival.
        let outcome = board.outcome(index)
        if !ownIdle.isEmpty || !idle.isEmpty {
            guard case .granted(let lease) = outcome else {
                return fail("#\(index) not granted at once although \(idle) were idle: \(String(describing: outcome))")
            }
            let expected = ownIdle.isEmpty ? idle : ownIdle
            if !expected.map({ readerIDs[$0] }).contains(lease.reader.id) {
                fail("#\(index) got \(lease.reader.id), expected one of \(expected) (own readers first)")
            }
            if lease.waited != .zero { fail("#\(index) granted at once but waited \(lease.waited)") }
        } else if deadline == nil {
            let code: ProximaError.Code = healthyEligible.isEmpty ? .readerUnavailable : .readerBusy
            guard case .failed(code, _, _) = outcome else {
                return fail("#\(index) on a fail-fast lane: expected \(code), got \(String(describing: outcome))")
            }
        } else if let deadline, deadline <= now {
            let code: ProximaError.Code = request.sawEligibleReader ? .deadlineExceeded : .readerUnavailable
            guard case .failed(code, _, _) = outcome else {
                return fail(
                    "#\(index) past its deadline at arrival: expected \(code), got \(String(describing: outcome))"
                )
            }
        } else if outcome != nil {
            fail("#\(index) should wait but ended: \(String(describing: outcome))")
        }
    }

    func releaseOne() async {
        if random.chance(0.1), let old = released.randomElement(using: &random) {
            actions.append("release again lease \(old.id)")
            await pool.release(old)
            return
        }
        guard let id = held.keys.sorted().randomElement(using: &random), let entry = held[id],
            let lease = requests[entry.request].lease
        else { return }
        actions.append("release #\(entry.request) (\(lease.reader.id))")
        held[id] = nil
        released.append(lease)
        await pool.release(lease)
    }

    func cancelOne() {
        guard let index = unresolved.sorted().randomElement(using: &random) else { return }
        actions.append("cancel #\(index)")
        requests[index].cancelRequested = true
        tasks[index].cancel()
    }

    /// Waits until every request is either queued in the pool or has recorded its outcome, every requested
    /// cancellation has been answered, and every request whose deadline has come has ended.
    func settled() async -> Bool {
        let waiting = await pool.waitingCount
        guard waiting + board.resolvedCount == requests.count else { return false }
        let now = self.now
        for index in unresolved where board.outcome(index) == nil {
            if requests[index].cancelRequested { return false }
            if let deadline = requests[index].deadline, deadline <= now { return false }
        }
        return true
    }

    func settleAndCheck() async {
        guard await settle(tries: 100_000, { await self.settled() }) else {
            let waiting = await pool.waitingCount
            return fail(
                "did not settle: \(waiting) waiting + \(board.resolvedCount) resolved of \(requests.count); "
                    + "unresolved \(unresolved.sorted().filter { board.outcome($0) == nil }.map { (i: $0, request: requests[$0]) })"
            )
        }
        var handOffs: [(request: Int, reader: Int)] = []
        for index in unresolved.sorted() {
            guard let outcome = board.outcome(index) else { continue }
            unresolved.remove(index)
            requests[index].resolvedStep = step
            let request = requests[index]
            switch outcome {
            case .granted(let lease):
                guard let readerIndex = readerIDs.firstIndex(of: lease.reader.id) else {
                    fail("#\(index) got unknown reader \(lease.reader.id)")
                    continue
                }
                if request.cancelRequested { fail("#\(index) was granted after its cancellation") }
                if !eligible(request, readerIndex) { fail("#\(index) got reader r\(readerIndex) it cannot use") }
                if !isHealthy(readerIndex) { fail("#\(index) got r\(readerIndex), which is absent or faulted") }
                if lease.lane != lanes[request.lane].id { fail("#\(index) lease names lane \(lease.lane)") }
                if let deadline = request.deadline, lease.grantedAt > deadline {
                    fail("#\(index) granted at \(lease.grantedAt), after its deadline \(deadline)")
                }
                if lease.waited != lease.grantedAt - request.arrival {
                    fail("#\(index) waited \(lease.waited) is wrong")
                }
                if let other = held.values.first(where: { $0.reader == readerIndex }) {
                    fail("r\(readerIndex) leased to #\(index) while #\(other.request) holds it")
                }
                held[lease.id] = (index, readerIndex)
                requests[index].lease = lease
                if request.arrival != now || lease.waited != .zero { handOffs.append((index, readerIndex)) }
            case .failed(let code, let at, let reason):
                if request.cancelRequested {
                    if code != .cancelled { fail("#\(index) cancelled but failed with \(code)") }
                } else if let deadline = request.deadline {
                    let expected: ProximaError.Code = request.sawEligibleReader ? .deadlineExceeded : .readerUnavailable
                    if code != expected { fail("#\(index) failed with \(code) (\(reason)), expected \(expected)") }
                    if at < deadline { fail("#\(index) failed at \(at), before its deadline \(deadline)") }
                } else if request.arrival != now {
                    fail("#\(index) on a fail-fast lane failed later than at arrival")
                }
            case .other(let description):
                fail("#\(index) failed with a non-Proxima error: \(description)")
            }
        }
        // Oldest first: a reader handed over from the queue goes to the oldest request that can use it.
        for handOff in handOffs {
            for older in unresolved where older < handOff.request && eligible(requests[older], handOff.reader) {
                fail("r\(handOff.reader) went to #\(handOff.request) while older #\(older) still waits for it")
            }
        }
        await checkSnapshot()
    }

    func checkSnapshot() async {
        let snapshot = await pool.snapshot()
        if snapshot.activeLeaseCount != held.count {
            fail("pool has \(snapshot.activeLeaseCount) leases, model \(held.count)")
        }
        for entry in snapshot.readers {
            guard let index = readerIDs.firstIndex(of: entry.info.id) else { continue }
            let holder = held.first { $0.value.reader == index }
            let expected: PoolSnapshot.ReaderState
            if !present[index] {
                expected = .vanished
            } else if faulted[index] {
                guard case .faulted = entry.state else {
                    fail("r\(index) should be faulted, is \(entry.state)")
                    continue
                }
                expected = entry.state
            } else {
                expected = holder == nil ? .idle : .leased
            }
            if entry.state != expected { fail("r\(index) is \(entry.state), model says \(expected)") }
            if entry.leaseID != holder?.key {
                fail("r\(index) lease \(String(describing: entry.leaseID)), model \(String(describing: holder?.key))")
            }
        }
        let waiting = unresolved.sorted()
        if snapshot.waiting.count != waiting.count {
            return fail("pool lists \(snapshot.waiting.count) waiting requests, model \(waiting.count)")
        }
        for (listed, index) in zip(snapshot.waiting, waiting) {
            let request = requests[index]
            if listed.lane != lanes[request.lane].id || listed.arrival != request.arrival
                || listed.deadline != request.deadline || listed.needsExtendedLength != request.needsExtended
                || listed.pinnedReader != request.pinned.map({ readerIDs[$0] })
            {
                fail("waiting #\(index) is listed as \(listed)")
            }
        }
        // The scheduler's invariant: nobody waits while an idle healthy reader could serve them.
        let idleReaders = snapshot.readers.filter { $0.state == .idle }.compactMap {
            readerIDs.firstIndex(of: $0.info.id)
        }
        for index in waiting {
            for reader in idleReaders where eligible(requests[index], reader) {
                fail("#\(index) waits while r\(reader) sits idle")
            }
        }
    }

    /// Brings every reader back, releases every lease and lets every remaining request end; then nothing may
    /// be leased, queued or out of rotation.
    func drain() async {
        step += 1
        for index in readerIDs.indices {
            if !present[index] { await appear(index) }
            if faulted[index] {
                actions.append("recover r\(index)")
                await pool.readerRecovered(readerIDs[index])
                faulted[index] = false
            }
        }
        updateSawEligible()
        await settleAndCheck()
        var rounds = 0
        while (!held.isEmpty || !unresolved.isEmpty) && failures.isEmpty && rounds < 100 {
            rounds += 1
            for (id, entry) in held.sorted(by: { $0.key < $1.key }) {
                guard let lease = requests[entry.request].lease else { continue }
                step += 1
                actions.append("release #\(entry.request)")
                held[id] = nil
                await pool.release(lease)
                await settleAndCheck()
            }
            if held.isEmpty && !unresolved.isEmpty {
                step += 1
                actions.append("advance 25 seconds")
                clock.advance(by: .seconds(25))
                await settleAndCheck()
            }
        }
        let snapshot = await pool.snapshot()
        if snapshot.activeLeaseCount != 0 || !snapshot.waiting.isEmpty {
            fail("after draining: \(snapshot.activeLeaseCount) leases, \(snapshot.waiting.count) waiting")
        }
        for entry in snapshot.readers where entry.state != .idle {
            fail("after draining \(entry.info.id) is \(entry.state)")
        }
    }
}

@Suite struct SchedulerPropertyTests {
    /// 2,400 random scenarios of 50 steps in four parallel batches; a failure names the seed to replay.
    @Test(arguments: 0..<4)
    func randomScenariosKeepTheSchedulerPromises(batch: Int) async {
        for offset in 0..<600 {
            let seed = UInt64(batch * 600 + offset) &* 0x2545_F491_4F6C_DD1D &+ 1
            let progress = ScenarioProgress()
            let scenario = Task { await SchedulerScenario(seed: seed).run(steps: 50, progress: progress) }
            // On a manual clock a scenario takes milliseconds; the limit only turns a lost answer into a failure.
            guard let failures = try? await outcome(of: scenario, "scenario", within: .seconds(120)).get() else {
                let early = WaiterContinuation<Lease>.answersBeforeStore
                Issue.record(
                    "seed \(seed) did not finish within 120 s (answers before store so far: \(early)); it was \(progress.description)"
                )
                return
            }
            #expect(failures.isEmpty, "\(failures.joined(separator: "\n"))")
            if !failures.isEmpty { return }
        }
        // Evidence for WaiterContinuation's early-answer path, which the pool's design says is never taken; printed,
        // not asserted, since other suites' pools in this process count too (WaiterContinuationTests add 2 or 3).
        let early = WaiterContinuation<Lease>.answersBeforeStore
        print("scheduler batch \(batch): answers before store, process-wide: \(early)")
    }

    /// Replays one seed (set it to a failing seed while debugging).
    @Test func replaysOneSeed() async {
        let failures = await SchedulerScenario(seed: 42).run(steps: 200)
        #expect(failures.isEmpty, "\(failures.joined(separator: "\n"))")
    }

    /// Four equally loaded lanes sharing two readers, more arrivals than the readers can serve: each lane's mean
    /// wait stays within 1.5× of every other's.
    @Test(arguments: [UInt64(1), 2, 3, 4, 5])
    func lanesSharingReadersWaitAlike(seed: UInt64) async throws {
        var random = SplitMix64(seed: seed)
        let clock = ManualClock()
        let laneIDs: [LaneID] = ["A", "B", "C", "D"]
        let pool = ReaderPool(
            lanes: laneIDs.map {
                LaneConfiguration(id: $0, readerIDs: ["s0", "s1"], queuePolicy: .wait(maxWait: .seconds(100_000)))
            },
            clock: KernelClock(clock),
            events: KernelEventBus()
        )
        await pool.readerAppeared(readerInfo("s0"))
        await pool.readerAppeared(readerInfo("s1"))
        let leases = OrderRecorder<Lease>()
        var tasks: [Task<Void, any Error>] = []
        var released: Set<UInt64> = []

        func heldLeases() -> [Lease] { leases.all.filter { !released.contains($0.id) } }

        /// Releases every held lease; each goes straight to the oldest waiter, so wait for those grants.
        func releaseAll() async {
            let current = heldLeases()
            let waitingBefore = await pool.waitingCount
            let grantsBefore = leases.all.count
            for lease in current {
                released.insert(lease.id)
                await pool.release(lease)
            }
            let expected = grantsBefore + min(current.count, waitingBefore)
            #expect(await settle { leases.all.count == expected })
        }

        for _ in 0..<60 {
            await releaseAll()
            for lane in laneIDs.shuffled(using: &random) {
                let before = await pool.waitingCount + leases.all.count
                tasks.append(
                    Task {
                        let lease = try await pool.lease(LeaseRequest(lane: lane))
                        leases.append(lease)
                    }
                )
                #expect(await settle { await pool.waitingCount + leases.all.count == before + 1 })
            }
            clock.advance(by: .seconds(1))
        }
        while await pool.waitingCount > 0 || !heldLeases().isEmpty {
            await releaseAll()
            clock.advance(by: .seconds(1))
        }
        for task in tasks { try await task.value }

        let all = leases.all
        #expect(all.count == 240)
        var means: [LaneID: Double] = [:]
        for lane in laneIDs {
            let waits = all.filter { $0.lane == lane }.map { Double($0.waited.components.seconds) }
            #expect(waits.count == 60)
            means[lane] = waits.reduce(0, +) / Double(max(1, waits.count))
        }
        let highest = means.values.max() ?? 0
        let lowest = means.values.min() ?? 0
        #expect(lowest > 0)
        #expect(highest / max(lowest, 1e-9) <= 1.5, "mean waits per lane: \(means)")
        await pool.shutdown()
    }
}
