/// The simulator's time source: a duration since some fixed start, and a sleep until such a duration.
///
/// The simulator cannot import the kernel, so it takes time as this pair of closures; the kernel adapts its
/// `KernelClock` (same "elapsed since start" shape), tests pass a `ManualClock` through ``init(_:)``.
public struct SimulatorTime: Sendable {
    /// Elapsed time since the source's start.
    public var now: @Sendable () -> Duration
    /// Suspends until `now() >= instant`; throws `CancellationError` when the task is cancelled.
    public var sleepUntil: @Sendable (_ instant: Duration) async throws -> Void

    public init(
        now: @escaping @Sendable () -> Duration,
        sleepUntil: @escaping @Sendable (_ instant: Duration) async throws -> Void
    ) {
        self.now = now
        self.sleepUntil = sleepUntil
    }

    /// Time read from `clock`, counted from the moment this source is made.
    public init<C: Clock>(_ clock: C) where C.Duration == Duration {
        let start = clock.now
        now = { start.duration(to: clock.now) }
        sleepUntil = { instant in try await clock.sleep(until: start.advanced(by: instant), tolerance: nil) }
    }

    /// Monotonic wall time.
    public static var continuous: SimulatorTime { SimulatorTime(ContinuousClock()) }
}
