internal import COpenSSL
import ProximaCore

/// Bytes from OpenSSL's CSPRNG (`RAND_bytes`, seeded from the operating system).
public enum SecureRandom {
    /// `count` random bytes.
    /// - Throws: `ProximaError.invalidArgument` for a negative count; ``CryptoError/Code/libraryFailure`` when the
    ///   generator cannot deliver (no entropy source), never a weaker fallback.
    public static func bytes(count: Int) throws -> [UInt8] {
        guard count >= 0 else { throw ProximaError(.invalidArgument, "cannot make \(count) random bytes") }
        let length = try int32Length(count, "random output")
        var output = [UInt8](repeating: 0, count: count)
        guard count > 0 else { return output }
        let result = output.withUnsafeMutableBufferPointer { RAND_bytes($0.baseAddress, length) }
        try check(result, "RAND_bytes")
        return output
    }
}
