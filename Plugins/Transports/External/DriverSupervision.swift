/// A token bucket: at most `burst` events at once, refilled at `ratePerSecond`.
public struct RateLimiter: Sendable {
    public let ratePerSecond: Double
    public let burst: Double
    private var tokens: Double
    private var last: ContinuousClock.Instant?

    public init(ratePerSecond: Double, burst: Double) {
        self.ratePerSecond = max(ratePerSecond, 0)
        self.burst = max(burst, 1)
        tokens = self.burst
    }

    /// Takes one token at `now`; `false` when the bucket is empty.
    public mutating func allow(at now: ContinuousClock.Instant) -> Bool {
        if let last {
            let elapsed = now - last
            let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) * 1e-18
            tokens = min(burst, tokens + max(seconds, 0) * ratePerSecond)
        }
        last = now
        guard tokens >= 1 else { return false }
        tokens -= 1
        return true
    }
}

/// The waits between restarts of a failing driver: `initial`, doubling up to `maximum`.
public struct RestartBackoff: Sendable {
    public let initial: Duration
    public let maximum: Duration
    private var current: Duration

    public init(initial: Duration, maximum: Duration) {
        self.initial = initial
        self.maximum = max(initial, maximum)
        current = initial
    }

    /// The wait before the next restart; the one after is twice as long.
    public mutating func next() -> Duration {
        let wait = current
        current = min(current * 2, maximum)
        return wait
    }

    /// Back to `initial`, after a session that ran well.
    public mutating func reset() { current = initial }
}

/// Opens after `threshold` failures within `window`: the driver is then left stopped for a cool-down, and its readers
/// stay out of rotation.
public struct CircuitBreaker: Sendable {
    public let threshold: Int
    public let window: Duration
    private var failures: [ContinuousClock.Instant] = []

    public init(threshold: Int, window: Duration) {
        self.threshold = max(threshold, 1)
        self.window = window
    }

    /// Failures counted in the window as of the last ``recordFailure(at:)``.
    public var recentFailures: Int { failures.count }

    /// Records a failure at `now`; `true` when the breaker opens with it.
    public mutating func recordFailure(at now: ContinuousClock.Instant) -> Bool {
        failures.removeAll { now - $0 > window }
        failures.append(now)
        return failures.count >= threshold
    }

    /// Forgets every failure (after the cool-down, the next session starts the count afresh).
    public mutating func reset() { failures = [] }
}
