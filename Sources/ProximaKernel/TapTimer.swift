import Synchronization

/// Cancels one task from another: the task registers itself while it runs ``run(_:)``, and ``cancel()`` cancels
/// it then, or at once when it registers later. The tap deadlines (``TapTimer``) and `cancelRead()` use it instead
/// of racing the work against a second child task that sleeps or waits for a signal.
///
/// Invariant (of `State`, only touched under its `Mutex`): `task` is the task inside ``run(_:)``, set when it enters
/// and cleared before it leaves, so the task it names is alive whenever it is cancelled through it.
package final class TaskCanceller: Sendable {
    /// `@unchecked Sendable`: `UnsafeCurrentTask` is only used under the `Mutex`, while its task is inside `run`.
    private struct State: @unchecked Sendable {
        var task: UnsafeCurrentTask?
        var cancelled = false
    }

    private let state = Mutex(State())

    package init() {}

    /// Whether ``cancel()`` was called.
    package var isCancelled: Bool { state.withLock { $0.cancelled } }

    /// Runs `operation` in the current task, which ``cancel()`` cancels meanwhile (at once if it was called before).
    /// Call it in a task of its own (a task-group child): cancelling a task cannot be undone.
    package func run<T: Sendable>(_ operation: @Sendable () async throws -> T) async throws -> T {
        withUnsafeCurrentTask { task in
            state.withLock { state in
                state.task = task
                if state.cancelled { task?.cancel() }
            }
        }
        defer { state.withLock { $0.task = nil } }
        return try await operation()
    }

    /// Cancels the task inside ``run(_:)``, and any that enters it later.
    package func cancel() {
        state.withLock { state in
            state.cancelled = true
            state.task?.cancel()
        }
    }
}

/// The tap deadlines of a kernel, all on one timer: one task (``run()``, a child of the kernel's task group) sleeps
/// until the earliest deadline and cancels the taps whose deadline passed, instead of a sleeping child task per tap.
///
/// A tap that ends leaves its entry in the heap (dead); the timer drops dead entries when they reach the top, so a
/// steady stream of taps with the same timeout re-arms the timer about once per timeout rather than once per tap,
/// and a new deadline wakes the timer only when it is earlier than the one it sleeps until. Deadlines fire only
/// while ``run()`` runs (the reader pool's do too).
///
/// Invariant (of `State`, only touched under its `Mutex`): `live` holds the taps registered and not yet finished or
/// expired, each with one entry in `heap`; while ``run()`` sleeps on a deadline, `sleepingUntil` is no later than
/// the earliest live deadline, or `wakeup` is set.
final class TapTimer: Sendable {
    private struct State: Sendable {
        var heap = DeadlineHeap()
        var live: [UInt64: TaskCanceller] = [:]
        var nextSequence: UInt64 = 0
        /// The deadline ``run()`` sleeps until; `nil` when it waits for a first deadline (or is not running).
        var sleepingUntil: Duration?
    }

    /// A registered tap.
    struct Ticket: Sendable {
        fileprivate var sequence: UInt64
        fileprivate var canceller: TaskCanceller
    }

    private let clock: KernelClock
    private let state = Mutex(State())
    private let wakeup = AsyncSignal()

    init(clock: KernelClock) { self.clock = clock }

    /// Runs `operation` in the current task (a child of its own) and cancels it when the clock reaches `deadline`.
    /// - Returns: what `operation` returned or threw, and whether the deadline cancelled it.
    func run<T: Sendable>(
        until deadline: Duration,
        _ operation: @escaping @Sendable () async throws -> T
    ) async -> (result: Result<T, any Error>, expired: Bool) {
        let ticket = register(deadline)
        let result: Result<T, any Error>
        do {
            result = .success(try await ticket.canceller.run(operation))
        } catch {
            result = .failure(error)
        }
        return (result, finish(ticket))
    }

    private func register(_ deadline: Duration) -> Ticket {
        let canceller = TaskCanceller()
        if clock.now >= deadline {
            canceller.cancel()
            return Ticket(sequence: 0, canceller: canceller)
        }
        let (sequence, wake) = state.withLock { state -> (UInt64, Bool) in
            state.nextSequence += 1
            let sequence = state.nextSequence
            state.live[sequence] = canceller
            if state.heap.count > 2 * state.live.count + 64 { state.heap.compact { state.live[$0.sequence] != nil } }
            state.heap.push(DeadlineHeap.Entry(deadline: deadline, ref: WaiterRef(index: 0, sequence: sequence)))
            return (sequence, state.sleepingUntil.map { deadline < $0 } ?? true)
        }
        if wake { wakeup.set() }
        return Ticket(sequence: sequence, canceller: canceller)
    }

    /// Takes the tap off the books; whether its deadline passed first.
    private func finish(_ ticket: Ticket) -> Bool {
        if ticket.sequence != 0 { state.withLock { _ = $0.live.removeValue(forKey: ticket.sequence) } }
        return ticket.canceller.isCancelled
    }

    /// Sleeps until the earliest live deadline, cancels the taps it reaches, until cancelled.
    func run() async {
        while !Task.isCancelled {
            wakeup.reset()
            let now = clock.now
            let next = state.withLock { state -> Duration? in
                while let top = state.heap.min {
                    if let canceller = state.live[top.ref.sequence] {
                        guard top.deadline <= now else { break }
                        state.live[top.ref.sequence] = nil
                        canceller.cancel()
                    }
                    state.heap.popMin()
                }
                state.sleepingUntil = state.heap.min?.deadline
                return state.sleepingUntil
            }
            guard let next else {
                await wakeup.wait()
                continue
            }
            await withTaskGroup(of: Void.self) { group in
                group.addTask { [clock] in try? await clock.sleep(until: next) }
                group.addTask { [wakeup] in await wakeup.wait() }
                await group.next()
                group.cancelAll()
            }
        }
        state.withLock { $0.sleepingUntil = nil }
    }
}
