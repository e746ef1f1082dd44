// Reader-pool scheduler benchmark.
//
// Topology: 64 readers, 16 lanes; lane i claims readers 4i…4i+3 by id, so every reader belongs to exactly one
// lane and the shared pool is empty (no overflow traffic). Requester tasks are spread round-robin over lanes.
//
// 1. Saturated: 1,000 requester tasks do lease → release cycles back to back (2,000,000 in total), so almost
//    every grant is a hand-off from a release to a queued waiter. Prints cycles/s, and sampled `lease`
//    latencies split by whether the grant queued; both include waiting behind ~1,000 jobs for the pool actor.
// 2. Free readers: 32 requester tasks (2 per lane, 4 readers per lane) so a reader is always free; prints
//    cycles/s and the p50/p99 latency of `lease` (sampled: 1 call in 16 is timed with ContinuousClock). The
//    latency includes waiting for the pool actor behind the other 31 tasks.
//    Then one requester task alone: the cost of a cycle without any contention.
// 3. Baselines in the same process: the same number of uncontended `Mutex<Int>` lock/unlock pairs, and of
//    trivial actor call pairs from 1,000 tasks (back-to-back calls to one actor mostly stay on its executor,
//    so this is the floor of an actor call, not of a suspension and resumption).
//
// Run: swift run -c release --scratch-path .build-sched SchedulerBenchmark [total-cycles]

import ProximaCore
import ProximaKernel
import Synchronization

let readerCount = 64
let laneCount = 16
let readersPerLane = readerCount / laneCount
let totalCycles = CommandLine.arguments.dropFirst().first.flatMap { Int($0) } ?? 2_000_000

func laneID(_ index: Int) -> LaneID { LaneID("lane-\(index)") }

func makePool() async -> ReaderPool {
    let lanes = (0..<laneCount).map { lane in
        LaneConfiguration(
            id: laneID(lane),
            readerIDs: (0..<readersPerLane).map { ReaderID("bench/\(lane * readersPerLane + $0)") },
            queuePolicy: .wait(maxWait: .seconds(600))
        )
    }
    let pool = ReaderPool(lanes: lanes, clock: .continuous, events: KernelEventBus())
    for reader in 0..<readerCount {
        await pool.readerAppeared(
            ReaderInfo(id: ReaderID("bench/\(reader)"), name: "Bench \(reader)", transport: "bench")
        )
    }
    return pool
}

func seconds(_ duration: Duration) -> Double {
    Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
}

func percentile(_ sorted: [Duration], _ p: Double) -> Duration {
    guard !sorted.isEmpty else { return .zero }
    return sorted[min(sorted.count - 1, Int((Double(sorted.count) * p).rounded(.down)))]
}

func micros(_ duration: Duration) -> String {
    let value = seconds(duration) * 1e6
    return "\((value * 10).rounded() / 10) µs"
}

func rate(_ count: Int, _ elapsed: Duration) -> Double { Double(count) / seconds(elapsed) }

func ratio(_ a: Double, _ b: Double) -> Double { (a / b * 10).rounded() / 10 }

func formatted(_ value: Double) -> String {
    let rounded = Int(value.rounded())
    var digits = String(rounded)
    var out = ""
    while digits.count > 3 {
        out = "," + digits.suffix(3) + out
        digits.removeLast(3)
    }
    return digits + out
}

struct PhaseResult {
    var elapsed: Duration
    var cycles: Int
    /// Sampled `lease` latencies of grants that did not wait (a reader was free).
    var freeLatencies: [Duration]
    /// Sampled `lease` latencies of grants that queued.
    var queuedLatencies: [Duration]
}

/// Runs `tasks` requesters doing `cyclesPerTask` lease → release cycles each; times 1 lease in `sampleEvery`.
/// The pool's deadline timer (`run()`) runs beside them, as in the kernel.
func runPhase(pool: ReaderPool, tasks: Int, cyclesPerTask: Int, sampleEvery: Int) async -> PhaseResult {
    await withTaskGroup(of: Void.self) { timer in
        timer.addTask { await pool.run() }
        let result = await measurePhase(
            pool: pool,
            tasks: tasks,
            cyclesPerTask: cyclesPerTask,
            sampleEvery: sampleEvery
        )
        timer.cancelAll()
        return result
    }
}

func measurePhase(pool: ReaderPool, tasks: Int, cyclesPerTask: Int, sampleEvery: Int) async -> PhaseResult {
    let clock = ContinuousClock()
    let start = clock.now
    let samples = await withTaskGroup(of: ([Duration], [Duration]).self) { group in
        for task in 0..<tasks {
            group.addTask {
                let request = LeaseRequest(lane: laneID(task % laneCount))
                var free: [Duration] = []
                var queued: [Duration] = []
                free.reserveCapacity(cyclesPerTask / sampleEvery + 1)
                for cycle in 0..<cyclesPerTask {
                    do {
                        if cycle % sampleEvery == 0 {
                            let before = clock.now
                            let lease = try await pool.lease(request)
                            let latency = before.duration(to: clock.now)
                            if lease.waited == .zero { free.append(latency) } else { queued.append(latency) }
                            await pool.release(lease)
                        } else {
                            let lease = try await pool.lease(request)
                            await pool.release(lease)
                        }
                    } catch {
                        fatalError("lease failed: \(error)")
                    }
                }
                return (free, queued)
            }
        }
        var free: [Duration] = []
        var queued: [Duration] = []
        for await (f, q) in group {
            free += f
            queued += q
        }
        return (free, queued)
    }
    let elapsed = start.duration(to: clock.now)
    return PhaseResult(
        elapsed: elapsed,
        cycles: tasks * cyclesPerTask,
        freeLatencies: samples.0.sorted(),
        queuedLatencies: samples.1.sorted()
    )
}

actor TrivialActor {
    private var count = 0
    func enter() -> Int {
        count += 1
        return count
    }
    func leave(_ value: Int) { count -= value & 1 }
}

func actorBaseline(tasks: Int, cyclesPerTask: Int) async -> Duration {
    let target = TrivialActor()
    let clock = ContinuousClock()
    let start = clock.now
    await withTaskGroup(of: Void.self) { group in
        for _ in 0..<tasks {
            group.addTask {
                for _ in 0..<cyclesPerTask {
                    let value = await target.enter()
                    await target.leave(value)
                }
            }
        }
    }
    return start.duration(to: clock.now)
}

func mutexBaseline(cycles: Int) -> Duration {
    let mutex = Mutex(0)
    let clock = ContinuousClock()
    let start = clock.now
    for cycle in 0..<cycles {
        mutex.withLock { $0 &+= cycle }
    }
    let elapsed = start.duration(to: clock.now)
    precondition(mutex.withLock { $0 } != -1)
    return elapsed
}

func report(_ title: String, _ result: PhaseResult) {
    print("\(title): \(formatted(Double(result.cycles))) cycles in \(result.elapsed)")
    print("  throughput: \(formatted(rate(result.cycles, result.elapsed))) lease+release cycles/s")
    let free = result.freeLatencies
    if !free.isEmpty {
        print(
            "  lease latency, granted without queueing (\(free.count) samples): p50 \(micros(percentile(free, 0.5))), "
                + "p99 \(micros(percentile(free, 0.99))), max \(micros(free.last ?? .zero))"
        )
    }
    let queued = result.queuedLatencies
    if !queued.isEmpty {
        print(
            "  lease latency, queued (\(queued.count) samples): p50 \(micros(percentile(queued, 0.5))), "
                + "p99 \(micros(percentile(queued, 0.99)))"
        )
    }
}

func main() async {
    print(
        "SchedulerBenchmark: \(readerCount) readers, \(laneCount) lanes × \(readersPerLane) readers, shared pool empty"
    )

    let saturatedTasks = 1_000
    let saturatedPool = await makePool()
    let saturated = await runPhase(
        pool: saturatedPool,
        tasks: saturatedTasks,
        cyclesPerTask: totalCycles / saturatedTasks,
        sampleEvery: 16
    )
    report("saturated, \(saturatedTasks) requester tasks", saturated)
    let leftover = await saturatedPool.activeLeaseCount
    precondition(leftover == 0, "leaked \(leftover) leases")

    let freeTasks = laneCount * 2
    let freePool = await makePool()
    let free = await runPhase(pool: freePool, tasks: freeTasks, cyclesPerTask: totalCycles / freeTasks, sampleEvery: 16)
    report("readers always free, \(freeTasks) requester tasks", free)

    let singlePool = await makePool()
    let single = await runPhase(pool: singlePool, tasks: 1, cyclesPerTask: totalCycles / 4, sampleEvery: 4)
    report("one requester task (no contention on the pool)", single)

    let mutexElapsed = mutexBaseline(cycles: totalCycles)
    let mutexRate = rate(totalCycles, mutexElapsed)
    print("baseline Mutex<Int> lock/unlock, 1 thread: \(formatted(mutexRate)) /s")
    let actorElapsed = await actorBaseline(tasks: saturatedTasks, cyclesPerTask: totalCycles / saturatedTasks)
    let actorRate = rate(totalCycles, actorElapsed)
    print("baseline trivial actor call pair, \(saturatedTasks) tasks: \(formatted(actorRate)) pairs/s")

    let saturatedRate = rate(saturated.cycles, saturated.elapsed)
    let freeRate = rate(free.cycles, free.elapsed)
    let singleRate = rate(single.cycles, single.elapsed)
    print("ratios (how many baseline operations fit in one lease+release cycle):")
    print("  actor call pair / saturated pool cycle: \(ratio(actorRate, saturatedRate))×")
    print("  actor call pair / free-reader pool cycle: \(ratio(actorRate, freeRate))×")
    print("  actor call pair / uncontended pool cycle: \(ratio(actorRate, singleRate))×")
    print("  Mutex lock+unlock / saturated pool cycle: \(ratio(mutexRate, saturatedRate))×")
}

await main()
