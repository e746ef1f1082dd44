import ProximaCore
import Testing

/// Bytes from hex written in a test (spaces allowed, either case); records an issue for a typo instead of
/// trapping, and returns no bytes.
public func bytes(_ hex: String, sourceLocation: SourceLocation = #_sourceLocation) -> [UInt8] {
    guard let value = [UInt8](hex: hex) else {
        Issue.record("test vector \"\(hex)\" is not valid hex", sourceLocation: sourceLocation)
        return []
    }
    return value
}

/// Lower-case hex without spaces, as Python's `bytes.hex()` prints it.
public func hex(_ bytes: [UInt8]) -> String { bytes.hexString.lowercased() }
