internal import Dispatch
internal import Synchronization

/// One reader's executor: a serial dispatch queue, off Swift's cooperative pool, on which every pcsc-lite call for
/// that reader runs.
///
/// It has two faces over the one queue, because the runtime tells them apart by identity:
/// - as a `SerialExecutor` it is the `unownedExecutor` of the reader's ``PCSCReader`` actor, which owns the reader's
///   pcsc-lite context and card handles, so only code isolated to that actor (running on this queue) can reach
///   them. (swift-nio's `EventLoop+SerialExecutor.swift` gives an event loop's actors the same shape.)
/// - as a `TaskExecutor` (``taskExecutor``, SE-0417) it runs the nonisolated code of a task that prefers it: the
///   kernel runs a tap's body with that preference (``PCSCCardChannel/preferredTaskExecutor``), so a capability's
///   code runs on the reader's thread and each transmit stays on it instead of going pool → queue → pool.
///
/// **Blocking calls** go through ``perform(evenIfCancelled:_:abandoned:)``: the calling task suspends while the call
/// runs on the queue, so that it can give up on a call that does not return (a mute card: pcsc-lite cannot interrupt
/// `SCardTransmit` or `SCardConnect`). While such a call is under way the queue's thread is taken, so task jobs
/// enqueued on ``taskExecutor`` meanwhile (the tap that gave up on it, resumed) run on the global executor instead
/// of waiting behind it.
///
/// (`DispatchSerialQueue` is not available on Linux, hence this adapter.)
final class PCSCReaderExecutor: SerialExecutor {
    /// The task-executor face of the same queue.
    final class Tasks: TaskExecutor {
        fileprivate let core: Core

        fileprivate init(core: Core) { self.core = core }

        func enqueue(_ job: consuming ExecutorJob) {
            if core.inBlockingCall.load(ordering: .sequentiallyConsistent) {
                core.statistics.diverted.add(1, ordering: .relaxed)
                globalConcurrentExecutor.enqueue(job)
                return
            }
            let job = UnownedJob(job)
            let executor = asUnownedTaskExecutor()
            core.count(Job.task)
            core.queue.async { job.runSynchronously(on: executor) }
        }
    }

    /// What both faces share.
    fileprivate final class Core: Sendable {
        let queue: DispatchQueue
        /// Set on the queue around a blocking call (``PCSCReaderExecutor/perform(evenIfCancelled:_:abandoned:)``).
        let inBlockingCall = Atomic<Bool>(false)
        let statistics = PCSCExecutorStatistics()

        init(label: String) {
            queue = DispatchQueue(label: label, qos: .userInitiated)
            queue.setSpecific(key: PCSCReaderExecutor.queueKey, value: ObjectIdentifier(self))
        }

        var isCurrent: Bool { DispatchQueue.getSpecific(key: PCSCReaderExecutor.queueKey) == ObjectIdentifier(self) }

        func count(_ job: Job) {
            let onQueue = isCurrent
            switch (job, onQueue) {
            case (.actor, true): statistics.actorJobsFromQueue.add(1, ordering: .relaxed)
            case (.actor, false): statistics.actorJobsFromElsewhere.add(1, ordering: .relaxed)
            case (.task, true): statistics.taskJobsFromQueue.add(1, ordering: .relaxed)
            case (.task, false): statistics.taskJobsFromElsewhere.add(1, ordering: .relaxed)
            case (.blockingCall, true): statistics.blockingCallsFromQueue.add(1, ordering: .relaxed)
            case (.blockingCall, false): statistics.blockingCallsFromElsewhere.add(1, ordering: .relaxed)
            }
        }
    }

    fileprivate enum Job { case actor, task, blockingCall }

    /// Marks the queues of reader executors, for ``isIsolatingCurrentContext()``.
    fileprivate static let queueKey = DispatchSpecificKey<ObjectIdentifier>()

    private let core: Core
    /// The task-executor face: a task that prefers it runs its nonisolated code on this reader's queue.
    let taskExecutor: Tasks

    /// What this executor ran so far.
    var statistics: PCSCExecutorStatistics { core.statistics }

    init(label: String) {
        core = Core(label: label)
        taskExecutor = Tasks(core: core)
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let executor = asUnownedSerialExecutor()
        core.count(.actor)
        core.queue.async { job.runSynchronously(on: executor) }
    }

    func asUnownedSerialExecutor() -> UnownedSerialExecutor {
        UnownedSerialExecutor(ordinary: self)
    }

    /// Whether the current thread is running this executor's queue: what `assumeIsolated` asks of the reader's
    /// actor in a block that ``perform(evenIfCancelled:_:abandoned:)`` or ``submit(_:)`` put on the queue.
    func isIsolatingCurrentContext() -> Bool? { core.isCurrent }

    func checkIsolated() {
        dispatchPrecondition(condition: .onQueue(core.queue))
    }

    /// Runs the blocking `work` on the queue and returns its value.
    ///
    /// When the calling task is cancelled first, returns `nil` at once without waiting for `work`; `work`'s value
    /// then goes to `abandoned`, on the queue, so whatever it opened is closed. `work` does not start at all when
    /// the task was cancelled before the queue reached it, unless `evenIfCancelled` (a close, which must happen).
    func perform<Value: Sendable>(
        evenIfCancelled: Bool = false,
        _ work: @escaping @Sendable () -> Value,
        abandoned: @escaping @Sendable (Value) -> Void
    ) async -> Value? {
        let handoff = Handoff<Value>()
        let core = core
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Value?, Never>) in
                guard handoff.install(continuation) || evenIfCancelled else { return }
                core.count(.blockingCall)
                core.queue.async {
                    // Set before looking at the handoff, so that a cancellation either is seen here or finds the
                    // flag set and resumes its task elsewhere (Tasks.enqueue).
                    core.inBlockingCall.store(true, ordering: .sequentiallyConsistent)
                    guard evenIfCancelled || !handoff.isCancelled else {
                        core.inBlockingCall.store(false, ordering: .sequentiallyConsistent)
                        return
                    }
                    let value = work()
                    core.inBlockingCall.store(false, ordering: .sequentiallyConsistent)
                    if !handoff.deliver(value) { abandoned(value) }
                }
            }
        } onCancel: {
            handoff.cancel()
        }
    }

    /// Runs `work` on the queue, after whatever is in flight there, without waiting for it.
    func submit(_ work: @escaping @Sendable () -> Void) {
        core.queue.async(execute: work)
    }
}

/// Counts of what one reader's executor ran, for the PC/SC benchmark's hop count and the tests: a job or call
/// enqueued from another thread is a hop onto the reader's thread; one enqueued from the queue itself stays on it.
package final class PCSCExecutorStatistics: Sendable {
    /// The counts at one moment.
    package struct Snapshot: Hashable, Sendable {
        /// Jobs of the ``PCSCReader`` actor's own methods.
        package var actorJobsFromElsewhere = 0
        package var actorJobsFromQueue = 0
        /// Jobs of tasks that prefer the reader's task executor (a tap's body).
        package var taskJobsFromElsewhere = 0
        package var taskJobsFromQueue = 0
        /// Blocking pcsc-lite calls (connect, transmit, close).
        package var blockingCallsFromElsewhere = 0
        package var blockingCallsFromQueue = 0
        /// Task jobs sent to the global executor because the reader's thread was in a blocking call.
        package var diverted = 0

        /// No counts.
        package static let zero = Snapshot()

        /// Everything enqueued on the reader's queue from another thread: the hops onto it.
        package var hopsOntoQueue: Int { actorJobsFromElsewhere + taskJobsFromElsewhere + blockingCallsFromElsewhere }

        package static func - (lhs: Snapshot, rhs: Snapshot) -> Snapshot { lhs.combined(with: rhs, by: -) }
        package static func + (lhs: Snapshot, rhs: Snapshot) -> Snapshot { lhs.combined(with: rhs, by: +) }

        private func combined(with other: Snapshot, by operation: (Int, Int) -> Int) -> Snapshot {
            Snapshot(
                actorJobsFromElsewhere: operation(actorJobsFromElsewhere, other.actorJobsFromElsewhere),
                actorJobsFromQueue: operation(actorJobsFromQueue, other.actorJobsFromQueue),
                taskJobsFromElsewhere: operation(taskJobsFromElsewhere, other.taskJobsFromElsewhere),
                taskJobsFromQueue: operation(taskJobsFromQueue, other.taskJobsFromQueue),
                blockingCallsFromElsewhere: operation(blockingCallsFromElsewhere, other.blockingCallsFromElsewhere),
                blockingCallsFromQueue: operation(blockingCallsFromQueue, other.blockingCallsFromQueue),
                diverted: operation(diverted, other.diverted)
            )
        }
    }

    fileprivate let actorJobsFromElsewhere = Atomic<Int>(0)
    fileprivate let actorJobsFromQueue = Atomic<Int>(0)
    fileprivate let taskJobsFromElsewhere = Atomic<Int>(0)
    fileprivate let taskJobsFromQueue = Atomic<Int>(0)
    fileprivate let blockingCallsFromElsewhere = Atomic<Int>(0)
    fileprivate let blockingCallsFromQueue = Atomic<Int>(0)
    fileprivate let diverted = Atomic<Int>(0)

    package func snapshot() -> Snapshot {
        Snapshot(
            actorJobsFromElsewhere: actorJobsFromElsewhere.load(ordering: .relaxed),
            actorJobsFromQueue: actorJobsFromQueue.load(ordering: .relaxed),
            taskJobsFromElsewhere: taskJobsFromElsewhere.load(ordering: .relaxed),
            taskJobsFromQueue: taskJobsFromQueue.load(ordering: .relaxed),
            blockingCallsFromElsewhere: blockingCallsFromElsewhere.load(ordering: .relaxed),
            blockingCallsFromQueue: blockingCallsFromQueue.load(ordering: .relaxed),
            diverted: diverted.load(ordering: .relaxed)
        )
    }
}
