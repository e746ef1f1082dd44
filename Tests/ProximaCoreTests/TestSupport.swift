import ProximaCore
import Testing

/// Bytes from hex written in a test (spaces allowed); records an issue for a typo instead of trapping.
func bytes(_ hex: String, sourceLocation: SourceLocation = #_sourceLocation) -> [UInt8] {
    guard let value = [UInt8](hex: hex) else {
        Issue.record("test vector \"\(hex)\" is not valid hex", sourceLocation: sourceLocation)
        return []
    }
    return value
}

/// `count` bytes counting up from `start` (wrapping), so that chunk boundaries are visible in failures.
func counting(_ count: Int, from start: UInt8 = 0) -> [UInt8] {
    (0..<count).map { start &+ UInt8(truncatingIfNeeded: $0) }
}
