internal import Foundation
internal import ProximaCore

/// Draws the delays until the next card arrives on one reader, per its ``SimulatorConfiguration/Arrival``.
struct ArrivalSampler: Sendable {
    let arrival: SimulatorConfiguration.Arrival
    private var generator: SplitMix64

    init(_ arrival: SimulatorConfiguration.Arrival) {
        self.arrival = arrival
        generator = SplitMix64(seed: arrival.seed)
    }

    /// The next delay: zero, the fixed interval, or an exponential variate with the interval as mean.
    mutating func nextDelay() -> Duration {
        switch arrival.pattern {
        case .immediate:
            return .zero
        case .fixed:
            return arrival.interval
        case .poisson:
            // Inverse transform: −ln(1 − U) is exponential with mean 1; 1 − U lies in (0, 1], so ln is finite.
            let uniform = generator.nextUnit()
            let meanSeconds =
                Double(arrival.interval.components.seconds) + Double(arrival.interval.components.attoseconds) * 1e-18
            let seconds = -log(1 - uniform) * meanSeconds
            return .nanoseconds(Int64((seconds * 1e9).rounded()))
        }
    }
}
