internal import Glibc
internal import Synchronization

/// The thread that serves one link (a ``DriverConnection``'s, or a remote agent's session) as a `TaskExecutor`
/// (SE-0417): a task that prefers it runs its nonisolated code on that thread, between the thread's polls.
///
/// **Why.** A call on a link is a frame written and an answer read by the link's thread. Without this, the answer
/// resumes the caller on the cooperative pool: one more thread wake-up per APDU, on top of the link thread's own, and
/// on a loaded machine each wake-up costs a scheduler round. A tap whose body prefers this executor (the kernel runs a
/// tap with ``ExternalCardChannel/preferredTaskExecutor``) writes its frame from the link's thread and is resumed by
/// it inline, after the read that brought the answer: one wake-up per APDU on this side, the one the data itself
/// causes. On an agent, the store's request is answered the same way, with no hop at all for an in-process card.
///
/// **The thread's side.** It calls ``runJobs()`` on every turn, ``beginPolling()`` (which says whether jobs wait, so
/// the poll must not sleep) and ``endPolling()`` around its `poll`, which includes ``wakeDescriptor``. A job enqueued
/// from another thread while it polls wakes it through the wake pipe; one enqueued by the thread itself (a
/// continuation resumed by a read) needs no wake-up. Jobs must not block: they are capability code and frame writes
/// (non-blocking), and whatever blocks belongs on its own executor.
///
/// **After the thread.** ``end()`` is called once, when the thread stops serving: jobs queued then, and every job
/// enqueued later (a tap still holding a channel to a driver that died), go to the global concurrent executor.
///
/// `Sendable`: the queue and the wake pipe's state sit behind `state`'s lock; the flags are atomics.
package final class LinkExecutor: TaskExecutor {
    private struct State {
        var jobs: [UnownedJob] = []
        var ended = false
    }

    private let state = Mutex(State())
    /// Set by the thread from just before it looks at the queue for the last time until its `poll` returned.
    private let polling = Atomic<Bool>(false)
    /// The serving thread (`pthread_self`), 0 until it called ``attachCurrentThread()``.
    private let owner = Atomic<UInt>(0)
    private let wakeRead: Int32
    private let wakeWrite: Int32
    private let counters = Counters()

    /// What the executor ran, for the benchmarks' hop counts.
    package struct Statistics: Hashable, Sendable {
        /// Jobs enqueued by the link's thread itself: code resumed where it already was, no thread switch.
        package var jobsFromThread = 0
        /// Jobs enqueued by another thread: a hop onto the link's thread.
        package var jobsFromElsewhere = 0
        /// Wake-ups written to the wake pipe (by jobs from elsewhere and by the link's users).
        package var wakeUps = 0
        /// Jobs sent to the global executor because the thread had ended.
        package var diverted = 0
    }

    private final class Counters: Sendable {
        let fromThread = Atomic<Int>(0)
        let fromElsewhere = Atomic<Int>(0)
        let wakeUps = Atomic<Int>(0)
        let diverted = Atomic<Int>(0)
    }

    /// - Throws: ``SystemCallError`` when the wake pipe cannot be made.
    package init() throws(SystemCallError) {
        (wakeRead, wakeWrite) = try DriverSystemCalls.wakePipe()
    }

    /// The read end of the wake pipe: the thread polls it for reading.
    package var wakeDescriptor: Int32 { wakeRead }

    package var statistics: Statistics {
        Statistics(
            jobsFromThread: counters.fromThread.load(ordering: .relaxed),
            jobsFromElsewhere: counters.fromElsewhere.load(ordering: .relaxed),
            wakeUps: counters.wakeUps.load(ordering: .relaxed),
            diverted: counters.diverted.load(ordering: .relaxed)
        )
    }

    package func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let queued = state.withLock { state -> Bool in
            guard !state.ended else { return false }
            state.jobs.append(job)
            return true
        }
        guard queued else {
            counters.diverted.add(1, ordering: .relaxed)
            globalConcurrentExecutor.enqueue(ExecutorJob(job))
            return
        }
        if owner.load(ordering: .relaxed) == UInt(pthread_self()) {
            counters.fromThread.add(1, ordering: .relaxed)
            return
        }
        counters.fromElsewhere.add(1, ordering: .relaxed)
        // Paired with beginPolling(): either the thread sees this job in the queue, or this sees it polling.
        if polling.load(ordering: .sequentiallyConsistent) { wake() }
    }

    /// Wakes the thread from `poll` (a no-op once the executor ended).
    package func wake() {
        state.withLock { state in
            guard !state.ended else { return }
            counters.wakeUps.add(1, ordering: .relaxed)
            DriverSystemCalls.wake(wakeWrite)
        }
    }

    // MARK: The thread's side

    /// Marks the calling thread as the one that serves the link.
    package func attachCurrentThread() {
        owner.store(UInt(pthread_self()), ordering: .relaxed)
    }

    /// Runs the queued jobs, and those they enqueue (a task resumed by a read starts a child, which writes the answer),
    /// for at most `rounds` batches, so that the link's I/O is never held up for long by code that keeps enqueuing.
    package func runJobs(rounds: Int = 8) {
        let executor = asUnownedTaskExecutor()
        for _ in 0..<rounds {
            let jobs = state.withLock { state -> [UnownedJob] in
                defer { state.jobs.removeAll(keepingCapacity: true) }
                return state.jobs
            }
            guard !jobs.isEmpty else { return }
            for job in jobs { job.runSynchronously(on: executor) }
        }
    }

    /// Called just before `poll`: returns whether jobs wait, in which case the poll must not sleep.
    package func beginPolling() -> Bool {
        polling.store(true, ordering: .sequentiallyConsistent)
        return state.withLock { !$0.jobs.isEmpty }
    }

    /// Called after `poll` returned; empties the wake pipe when `woken` (it was readable).
    package func endPolling(woken: Bool) {
        polling.store(false, ordering: .sequentiallyConsistent)
        if woken { DriverSystemCalls.drain(wakeRead) }
    }

    /// The thread stops serving: queued jobs and later ones go to the global executor; the wake pipe is closed.
    package func end() {
        let left = state.withLock { state -> [UnownedJob] in
            guard !state.ended else { return [] }
            state.ended = true
            DriverSystemCalls.close(wakeRead)
            DriverSystemCalls.close(wakeWrite)
            defer { state.jobs = [] }
            return state.jobs
        }
        counters.diverted.add(left.count, ordering: .relaxed)
        for job in left { globalConcurrentExecutor.enqueue(ExecutorJob(job)) }
    }
}
