import Synchronization

/// A clock that only moves when told to: the test double for everything in Proxima that takes a `Clock`.
///
/// Like NIO's `EmbeddedEventLoop`, it ships as code so tests and demos of timeouts and fairness never sleep for
/// real. Time starts at zero and moves forward with ``advance(by:)`` or ``advance(to:)``; every task sleeping
/// until a deadline that has been reached is resumed, in deadline order (ties in the order they went to sleep).
/// A sleeping task that is cancelled throws `CancellationError` at once and stops counting as a sleeper.
///
/// ```swift
/// let clock = ManualClock()
/// let sleeper = Task { try await clock.sleep(for: .seconds(5)) }
/// await clock.waitForSleepers(1)
/// clock.advance(by: .seconds(5))   // `sleeper` finishes
/// ```
///
/// Invariant (of `State`, only touched under its `Mutex`): `now` never decreases; every entry of `sleepers` is
/// a task inside ``sleep(until:tolerance:)`` that has not been resumed, and is `.registered` (continuation not
/// stored yet; it re-checks the deadline when it stores it), `.cancelled` (cancelled before that) or
/// `.suspended` with a deadline later than `now`; an entry leaves the table exactly when its continuation is
/// resumed or its cancellation is noticed. `suspendedCount` is the number of `.suspended` entries. Continuations
/// are resumed after the lock is dropped.
public final class ManualClock: Clock, Sendable {
    /// A point on a manual clock: the offset from the clock's zero.
    public struct Instant: InstantProtocol, Hashable, Sendable, CustomStringConvertible {
        /// Time since the clock's zero.
        public var offset: Duration

        public init(offset: Duration) { self.offset = offset }

        /// The clock's zero.
        public static var zero: Instant { Instant(offset: .zero) }

        public func advanced(by duration: Duration) -> Instant { Instant(offset: offset + duration) }
        public func duration(to other: Instant) -> Duration { other.offset - offset }
        public static func < (lhs: Instant, rhs: Instant) -> Bool { lhs.offset < rhs.offset }
        public var description: String { "ManualClock.Instant(\(offset))" }
    }

    private enum SleeperState {
        /// Registered, cancellation handler installed, continuation not stored yet.
        case registered
        /// Cancelled before its continuation was stored; the sleep throws as soon as it gets there.
        case cancelled
        case suspended(CheckedContinuation<Void, any Error>)
    }

    private struct Sleeper {
        var deadline: Instant
        var state: SleeperState
    }

    private struct CountWaiter {
        var target: Int
        var continuation: CheckedContinuation<Void, Never>?
    }

    private struct State {
        var now: Instant = .zero
        var nextID: UInt64 = 0
        var sleepers: [UInt64: Sleeper] = [:]
        var suspendedCount = 0
        var countWaiters: [UInt64: CountWaiter] = [:]

        /// Takes the count waiters whose target is met; the caller resumes them after unlocking.
        mutating func takeSatisfiedCountWaiters() -> [CheckedContinuation<Void, Never>] {
            guard !countWaiters.isEmpty else { return [] }
            var ready: [CheckedContinuation<Void, Never>] = []
            for (id, waiter) in countWaiters where waiter.target <= suspendedCount {
                if let continuation = waiter.continuation { ready.append(continuation) }
                countWaiters[id] = nil
            }
            return ready
        }
    }

    private let state = Mutex(State())

    /// A clock at zero with nobody asleep.
    public init() {}

    public var now: Instant { state.withLock { $0.now } }

    public var minimumResolution: Duration { .zero }

    /// The number of tasks currently suspended in ``sleep(until:tolerance:)``.
    public var sleeperCount: Int { state.withLock { $0.suspendedCount } }

    /// The deadlines of the suspended sleepers, earliest first (for diagnostics).
    public var pendingDeadlines: [Instant] {
        state.withLock { state in
            state.sleepers.values.compactMap { sleeper -> Instant? in
                if case .suspended = sleeper.state { return sleeper.deadline }
                return nil
            }.sorted()
        }
    }

    /// Suspends until the clock has been advanced to `deadline` or later.
    ///
    /// Returns at once when `deadline` is not in the future.
    /// - Throws: `CancellationError` when the task is cancelled before or during the sleep.
    public func sleep(until deadline: Instant, tolerance: Duration? = nil) async throws {
        try Task.checkCancellation()
        let id: UInt64? = state.withLock { state in
            guard deadline > state.now else { return nil }
            state.nextID &+= 1
            state.sleepers[state.nextID] = Sleeper(deadline: deadline, state: .registered)
            return state.nextID
        }
        guard let id else { return }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                enum Outcome { case suspended([CheckedContinuation<Void, Never>]), resume, cancelled }
                let outcome: Outcome = state.withLock { state in
                    guard let sleeper = state.sleepers[id] else { return .resume }
                    if case .cancelled = sleeper.state {
                        state.sleepers[id] = nil
                        return .cancelled
                    }
                    if sleeper.deadline <= state.now {
                        // The clock passed the deadline between registration and here.
                        state.sleepers[id] = nil
                        return .resume
                    }
                    state.sleepers[id]?.state = .suspended(continuation)
                    state.suspendedCount += 1
                    return .suspended(state.takeSatisfiedCountWaiters())
                }
                switch outcome {
                case .suspended(let ready):
                    for waiter in ready { waiter.resume() }
                case .resume:
                    continuation.resume()
                case .cancelled:
                    continuation.resume(throwing: CancellationError())
                }
            }
        } onCancel: {
            let continuation: CheckedContinuation<Void, any Error>? = state.withLock { state in
                guard let sleeper = state.sleepers[id] else { return nil }
                switch sleeper.state {
                case .registered:
                    state.sleepers[id]?.state = .cancelled
                    return nil
                case .cancelled:
                    return nil
                case .suspended(let continuation):
                    state.sleepers[id] = nil
                    state.suspendedCount -= 1
                    return continuation
                }
            }
            continuation?.resume(throwing: CancellationError())
        }
    }

    /// Moves the clock forward by `duration` and wakes every sleeper whose deadline has been reached.
    ///
    /// A negative duration is ignored: a manual clock never goes back.
    public func advance(by duration: Duration) {
        advance(toOffset: nil, by: duration)
    }

    /// Moves the clock to `instant` (if that is later than now) and wakes every sleeper whose deadline has been
    /// reached, earliest deadline first.
    public func advance(to instant: Instant) {
        advance(toOffset: instant, by: .zero)
    }

    private func advance(toOffset target: Instant?, by duration: Duration) {
        let due: [CheckedContinuation<Void, any Error>] = state.withLock { state in
            let newNow = target ?? state.now.advanced(by: duration)
            guard newNow > state.now else { return [] }
            state.now = newNow
            var due: [(deadline: Instant, id: UInt64, continuation: CheckedContinuation<Void, any Error>)] = []
            for (id, sleeper) in state.sleepers where sleeper.deadline <= newNow {
                if case .suspended(let continuation) = sleeper.state {
                    due.append((sleeper.deadline, id, continuation))
                }
            }
            for entry in due { state.sleepers[entry.id] = nil }
            state.suspendedCount -= due.count
            due.sort { ($0.deadline, $0.id) < ($1.deadline, $1.id) }
            return due.map(\.continuation)
        }
        for continuation in due { continuation.resume() }
    }

    /// Suspends until at least `count` tasks are asleep on this clock (or the calling task is cancelled).
    ///
    /// Use it before ``advance(by:)`` when the code under test must have reached its sleep first.
    public func waitForSleepers(_ count: Int) async {
        let id: UInt64? = state.withLock { state in
            guard state.suspendedCount < count else { return nil }
            state.nextID &+= 1
            state.countWaiters[state.nextID] = CountWaiter(target: count, continuation: nil)
            return state.nextID
        }
        guard let id else { return }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let resumeNow = state.withLock { state -> Bool in
                    // Gone means met or cancelled meanwhile.
                    guard let waiter = state.countWaiters[id], waiter.target > state.suspendedCount else {
                        state.countWaiters[id] = nil
                        return true
                    }
                    state.countWaiters[id]?.continuation = continuation
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            let continuation = state.withLock { state in state.countWaiters.removeValue(forKey: id)?.continuation }
            continuation?.resume()
        }
    }
}
