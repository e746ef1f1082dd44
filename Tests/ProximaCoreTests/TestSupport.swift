import ProximaCore
import Testing

/// `count` bytes counting up from `start` (wrapping), so that chunk boundaries are visible in failures.
func counting(_ count: Int, from start: UInt8 = 0) -> [UInt8] {
    (0..<count).map { start &+ UInt8(truncatingIfNeeded: $0) }
}
