import Synchronization

/// A flag tasks can wait for without polling: ``set()`` wakes every waiting task and makes later waits return at
/// once, until ``reset()``. A waiting task that is cancelled returns at once too; callers that care check
/// `Task.isCancelled` afterwards.
///
/// The kernel's lifecycle uses it for "start the next transport", "stop this one", "it stopped"; the reader pool's
/// deadline timer uses it to wake when an earlier deadline arrives.
///
/// Invariant (of `State`, only touched under its `Mutex`): `waiters` holds one entry per task inside ``wait()``
/// that has neither been woken nor seen its cancellation; the entry is `nil` until its continuation is stored.
/// Continuations are resumed after the lock is dropped, each exactly once.
final class AsyncSignal: Sendable {
    private struct State {
        var isSet = false
        var nextID: UInt64 = 0
        var waiters: [UInt64: CheckedContinuation<Void, Never>?] = [:]
    }

    private let state = Mutex(State())

    init() {}

    var isSet: Bool { state.withLock { $0.isSet } }

    /// Sets the flag and wakes every waiting task.
    func set() {
        let woken = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.isSet = true
            let stored = state.waiters.values.compactMap { $0 }
            state.waiters = state.waiters.filter { $0.value == nil }
            return stored
        }
        for continuation in woken { continuation.resume() }
    }

    /// Clears the flag; tasks that wait from now on sleep until the next ``set()``.
    func reset() { state.withLock { $0.isSet = false } }

    /// Returns once the flag is set, or at once if it is set already or the task is cancelled.
    func wait() async {
        let id = state.withLock { state -> UInt64 in
            state.nextID &+= 1
            state.waiters[state.nextID] = .some(nil)
            return state.nextID
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let resumeNow = state.withLock { state -> Bool in
                    // Gone means cancelled before the continuation was stored.
                    guard !state.isSet, state.waiters[id] != nil else {
                        state.waiters[id] = nil
                        return true
                    }
                    state.waiters[id] = continuation
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            let stored = state.withLock { state in state.waiters.removeValue(forKey: id) }
            if case let continuation?? = stored { continuation.resume() }
        }
    }
}

/// The continuation of one request waiting in the reader pool, shared by the pool (which answers it: a grant, an
/// expiry, shutdown) and the request's cancellation handler (which fails it at once, from whatever thread cancels
/// the task, without a hop to the pool). The pool removes a cancelled request from its books when the request's own
/// task resumes on it.
///
/// An answer that comes before the waiting task has stored its continuation is kept and delivered by ``store(_:)``.
/// The pool books a request and stores its continuation in what is meant to be one actor job, yet loaded full test
/// runs showed an answer arriving first (``answersBeforeStore`` counts them); when such an answer was dropped, as it
/// was before, the request never returned.
///
/// Invariant: `state` is only touched under its `Mutex`; the continuation is resumed exactly once, after the lock
/// is dropped.
final class WaiterContinuation<Value: Sendable>: Sendable {
    private enum State {
        /// Booked, continuation not stored yet.
        case pending
        case waiting(CheckedContinuation<Value, any Error>)
        /// Cancelled before the continuation was stored.
        case cancelled
        /// Answered before the continuation was stored; ``store(_:)`` delivers it.
        case answered(Result<Value, any Error>)
        /// Resumed.
        case done
    }

    private let state = Mutex(State.pending)

    /// How many answers, process-wide, came before their request's continuation was stored (see the type's notes).
    static var answersBeforeStore: Int { answeredEarly.load(ordering: .relaxed) }

    init() {}

    /// Stores the continuation of the waiting task and resumes it at once if the request was cancelled
    /// (`CancellationError`) or answered meanwhile.
    func store(_ continuation: CheckedContinuation<Value, any Error>) {
        let ready = state.withLock { state -> Result<Value, any Error>? in
            switch state {
            case .cancelled:
                state = .done
                return .failure(CancellationError())
            case .answered(let result):
                state = .done
                return result
            case .pending, .waiting, .done:
                state = .waiting(continuation)
                return nil
            }
        }
        if let ready { continuation.resume(with: ready) }
    }

    /// Answers the request with what `outcome` makes, unless it was cancelled or answered already; `outcome` runs
    /// only when the answer is taken (a grant is made only for a request that will receive it).
    /// - Returns: whether the request took this answer.
    @discardableResult
    func answer(_ outcome: () -> Result<Value, any Error>) -> Bool {
        let (taken, resume) = state.withLock {
            state -> (Bool, (CheckedContinuation<Value, any Error>, Result<Value, any Error>)?) in
            switch state {
            case .waiting(let continuation):
                state = .done
                return (true, (continuation, outcome()))
            case .pending:
                state = .answered(outcome())
                answeredEarly.add(1, ordering: .relaxed)
                return (true, nil)
            case .cancelled, .answered, .done:
                return (false, nil)
            }
        }
        if let (continuation, result) = resume { continuation.resume(with: result) }
        return taken
    }

    /// Resumes the waiting task with `CancellationError` (called from its cancellation handler); an answer given
    /// already stands.
    func cancel() {
        let continuation = state.withLock { state -> CheckedContinuation<Value, any Error>? in
            switch state {
            case .pending:
                state = .cancelled
                return nil
            case .waiting(let continuation):
                state = .done
                return continuation
            case .cancelled, .answered, .done:
                return nil
            }
        }
        continuation?.resume(throwing: CancellationError())
    }
}

private let answeredEarly = Atomic<Int>(0)
