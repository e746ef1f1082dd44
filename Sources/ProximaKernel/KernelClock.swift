/// The kernel's view of time: a duration since the kernel started, from any injected `Clock`.
///
/// Type-erasing the clock to "elapsed since start" keeps the kernel non-generic while tests still drive it
/// with a ``ProximaCore/ManualClock`` and production with `ContinuousClock`.
public struct KernelClock: Sendable {
    private let nowFn: @Sendable () -> Duration
    private let sleepFn: @Sendable (Duration) async throws -> Void

    public init<C: Clock>(_ clock: C) where C.Duration == Duration {
        let start = clock.now
        nowFn = { start.duration(to: clock.now) }
        sleepFn = { target in try await clock.sleep(until: start.advanced(by: target), tolerance: nil) }
    }

    /// The default: monotonic wall time.
    public static var continuous: KernelClock { KernelClock(ContinuousClock()) }

    /// Elapsed time since this clock was made.
    public var now: Duration { nowFn() }

    /// Suspends until `now >= instant`; throws `CancellationError` when cancelled.
    public func sleep(until instant: Duration) async throws { try await sleepFn(instant) }
}
