import Synchronization

/// What a test waited for did not happen within its limit. The limits are generous: they turn a hang into a
/// failure that says what was awaited; they are no timing assertions.
public struct WaitTimeout: Error, CustomStringConvertible {
    public let description: String

    public init(_ description: String) { self.description = description }
}

/// Checks `condition` every `interval` until it holds.
///
/// Only for state that announces no event: another process's (pcscd's PID, its socket) or a snapshot. Where an
/// event, stream or continuation exists, wait for that instead (``firstElement(_:of:within:where:)``).
/// - Throws: ``WaitTimeout`` naming `what` once `limit` has passed.
public func waitUntil(
    _ what: String,
    within limit: Duration = .seconds(10),
    checkingEvery interval: Duration = .milliseconds(20),
    _ condition: @Sendable () async -> Bool
) async throws {
    let clock = ContinuousClock()
    let end = clock.now + limit
    while !(await condition()) {
        guard clock.now < end else { throw WaitTimeout("not within \(limit): \(what)") }
        try await clock.sleep(for: interval)
    }
}

/// The first element of `sequence` that matches `predicate`.
///
/// - Throws: ``WaitTimeout`` naming `what` when none came within `limit` or the sequence ended first.
public func firstElement<Events: AsyncSequence & Sendable>(
    _ what: String,
    of sequence: Events,
    within limit: Duration = .seconds(10),
    where predicate: @escaping @Sendable (Events.Element) -> Bool
) async throws -> Events.Element where Events.Element: Sendable {
    try await withThrowingTaskGroup(of: Events.Element?.self) { group in
        group.addTask {
            for try await element in sequence where predicate(element) { return element }
            return nil
        }
        group.addTask {
            try? await Task.sleep(for: limit)
            return nil
        }
        defer { group.cancelAll() }
        guard let first = try await group.next(), let element = first else {
            throw WaitTimeout("not within \(limit): \(what)")
        }
        return element
    }
}

/// The outcome of `task`, waited for at most `limit`.
///
/// The task is only observed, never cancelled: a task that hangs in a call that ignores cancellation (a blocking C
/// call, a card that never answers) makes this throw instead of hanging the test; the caller then frees it.
/// - Throws: ``WaitTimeout`` naming `what` when `task` has not finished within `limit`.
public func outcome<Success: Sendable, Failure: Error>(
    of task: Task<Success, Failure>,
    _ what: String,
    within limit: Duration = .seconds(10)
) async throws -> Result<Success, Failure> {
    let race = Race<Result<Success, Failure>>()
    // The observer is unstructured on purpose: awaiting `task.result` cannot be cancelled, so as a child task of a
    // group it would keep the group, and the test, waiting after the deadline. It ends when `task` does.
    Task { race.finish(with: await task.result) }
    let result = await withTaskGroup(of: Void.self) { group in
        group.addTask {
            try? await Task.sleep(for: limit)  // cancelled with the test, or below once the task has finished
            race.finish(with: nil)
        }
        let result = await race.value()
        group.cancelAll()
        return result
    }
    guard let result else { throw WaitTimeout("not within \(limit): \(what)") }
    return result
}

/// The first of several finishers wins; ``value()`` waits for it.
///
/// Invariant: `state` is only touched under its `Mutex`; the continuation is resumed exactly once, after the lock is
/// dropped.
private final class Race<Value: Sendable>: Sendable {
    private struct State {
        var outcome: Value??
        var waiter: CheckedContinuation<Value?, Never>?
    }

    private let state = Mutex(State(outcome: nil, waiter: nil))

    func finish(with value: Value?) {
        let waiter = state.withLock { state -> CheckedContinuation<Value?, Never>? in
            guard state.outcome == nil else { return nil }
            state.outcome = .some(value)
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume(returning: value)
    }

    func value() async -> Value? {
        await withCheckedContinuation { continuation in
            let ready = state.withLock { state -> Value?? in
                if let outcome = state.outcome { return outcome }
                state.waiter = continuation
                return nil
            }
            if let ready { continuation.resume(returning: ready) }
        }
    }
}
