internal import COpenSSL
import ProximaCore

/// The SHA-2 hash functions Proxima uses (FIPS 180-4).
public enum DigestAlgorithm: String, Sendable, CaseIterable, CustomStringConvertible {
    case sha256 = "SHA2-256"
    case sha384 = "SHA2-384"
    case sha512 = "SHA2-512"

    /// The digest length in bytes: 32, 48 or 64.
    public var byteCount: Int {
        switch self {
        case .sha256: 32
        case .sha384: 48
        case .sha512: 64
        }
    }

    public var description: String {
        switch self {
        case .sha256: "SHA-256"
        case .sha384: "SHA-384"
        case .sha512: "SHA-512"
        }
    }

    /// The OpenSSL name used to fetch the digest (the `rawValue`).
    var openSSLName: String { rawValue }

    var messageDigest: OpaquePointer? {
        switch self {
        case .sha256: EVP_sha256()
        case .sha384: EVP_sha384()
        case .sha512: EVP_sha512()
        }
    }

    /// The digest of `data`.
    /// - Throws: ``CryptoError/Code/libraryFailure`` only if OpenSSL fails (allocation).
    public func hash(_ data: [UInt8]) throws -> [UInt8] {
        var output = [UInt8](repeating: 0, count: byteCount)
        var length: UInt32 = 0
        let result = data.withNonNullPointer { input, count in
            output.withUnsafeMutableBufferPointer {
                EVP_Digest(input, count, $0.baseAddress, &length, messageDigest, nil)
            }
        }
        try check(result, "\(self) digest")
        guard Int(length) == byteCount else { throw CryptoError(.libraryFailure, "\(self) gave \(length) bytes") }
        return output
    }
}

/// SHA-256 (FIPS 180-4).
public enum SHA256 {
    public static let byteCount = 32
    /// - Throws: ``CryptoError/Code/libraryFailure`` only if OpenSSL fails.
    public static func hash(_ data: [UInt8]) throws -> [UInt8] { try DigestAlgorithm.sha256.hash(data) }
}

/// SHA-384 (FIPS 180-4).
public enum SHA384 {
    public static let byteCount = 48
    /// - Throws: ``CryptoError/Code/libraryFailure`` only if OpenSSL fails.
    public static func hash(_ data: [UInt8]) throws -> [UInt8] { try DigestAlgorithm.sha384.hash(data) }
}

/// SHA-512 (FIPS 180-4).
public enum SHA512 {
    public static let byteCount = 64
    /// - Throws: ``CryptoError/Code/libraryFailure`` only if OpenSSL fails.
    public static func hash(_ data: [UInt8]) throws -> [UInt8] { try DigestAlgorithm.sha512.hash(data) }
}

/// HMAC (RFC 2104) over a SHA-2 digest, through OpenSSL's `EVP_MAC`.
public enum HMAC {
    /// The authentication code of `data` under `key`.
    ///
    /// - Parameters:
    ///   - data: The message.
    ///   - key: The key, of any length (an empty key is allowed, as RFC 2104 allows it).
    ///   - digest: The hash function, SHA-256 unless given.
    /// - Throws: ``CryptoError/Code/libraryFailure`` only if OpenSSL fails.
    public static func authenticationCode(
        for data: [UInt8],
        key: [UInt8],
        digest: DigestAlgorithm = .sha256
    ) throws -> [UInt8] {
        var output = [UInt8](repeating: 0, count: digest.byteCount)
        var length = 0
        let outputCount = output.count
        let result = key.withNonNullPointer { keyPointer, keyCount in
            data.withNonNullPointer { dataPointer, dataCount in
                output.withUnsafeMutableBufferPointer { out in
                    EVP_Q_mac(
                        nil,
                        "HMAC",
                        nil,
                        digest.openSSLName,
                        nil,
                        keyPointer,
                        keyCount,
                        dataPointer,
                        dataCount,
                        out.baseAddress,
                        outputCount,
                        &length
                    )
                }
            }
        }
        guard result != nil, length == digest.byteCount else { throw libraryFailure("HMAC-\(digest)") }
        return output
    }

    /// Whether `code` is the authentication code of `data` under `key`, compared in constant time.
    /// - Throws: ``CryptoError/Code/libraryFailure`` only if OpenSSL fails.
    public static func isValidAuthenticationCode(
        _ code: [UInt8],
        for data: [UInt8],
        key: [UInt8],
        digest: DigestAlgorithm = .sha256
    ) throws -> Bool {
        constantTimeEquals(try authenticationCode(for: data, key: key, digest: digest), code)
    }
}
