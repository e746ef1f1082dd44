internal import COpenSSL
import ProximaCore
import Synchronization

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

    /// The digest as OpenSSL fetched it once for the process (``OpenSSLAlgorithms``), or `nil` if it could not.
    var messageDigest: OpaquePointer? { try? OpenSSLAlgorithms.shared().digest(self) }

    /// The digest of `data`.
    /// - Throws: ``CryptoError/Code/libraryFailure`` only if OpenSSL fails (allocation).
    public func hash(_ data: [UInt8]) throws -> [UInt8] {
        let algorithm = try OpenSSLAlgorithms.shared().digest(self)
        var output = [UInt8](repeating: 0, count: byteCount)
        var length: UInt32 = 0
        let result = data.withNonNullPointer { input, count in
            output.withUnsafeMutableBufferPointer { EVP_Digest(input, count, $0.baseAddress, &length, algorithm, nil) }
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
///
/// Each call duplicates a context made once per digest with the digest already set (``HMACTemplates``) and keys the
/// copy: no algorithm is looked up by name, as `EVP_Q_mac` does on every call.
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
        try authenticationCode(for: [data], key: key, digest: digest)
    }

    /// The authentication code of the concatenation of `parts` under `key`, without concatenating them first (HKDF's
    /// blocks, a Smart Tap bundle's IV and ciphertext).
    static func authenticationCode(
        for parts: [[UInt8]],
        key: [UInt8],
        digest: DigestAlgorithm = .sha256
    ) throws -> [UInt8] {
        let context = try HMACTemplates.shared().keyed(digest, key)
        defer { EVP_MAC_CTX_free(context) }
        for part in parts where !part.isEmpty {
            let result = part.withUnsafeBufferPointer { EVP_MAC_update(context, $0.baseAddress, $0.count) }
            try check(result, "HMAC-\(digest)")
        }
        var output = [UInt8](repeating: 0, count: digest.byteCount)
        var length = 0
        let outputCount = output.count
        let result = output.withUnsafeMutableBufferPointer {
            EVP_MAC_final(context, $0.baseAddress, &length, outputCount)
        }
        guard result == 1, length == digest.byteCount else { throw libraryFailure("HMAC-\(digest)") }
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

/// One HMAC context per digest, its digest set and keyed with a placeholder, made once for the process; calls use
/// keyed duplicates. (A context never keyed cannot be duplicated in OpenSSL 3.0: its digest contexts are empty.)
///
/// `@unchecked Sendable`: the templates are only ever duplicated, under the lock, never used or changed.
final class HMACTemplates: @unchecked Sendable {
    private let templates: Mutex<[DigestAlgorithm: OpaquePointer]>

    private init?() {
        guard let algorithms = try? OpenSSLAlgorithms.shared() else { return nil }
        var made: [DigestAlgorithm: OpaquePointer] = [:]
        for digest in DigestAlgorithm.allCases {
            guard let context = EVP_MAC_CTX_new(algorithms.hmac) else { return nil }
            let parameters = ParameterList()
            parameters.append("digest", utf8: digest.openSSLName)
            var placeholder: UInt8 = 0
            let result = parameters.withParameters { EVP_MAC_init(context, &placeholder, 1, $0) }
            guard result == 1 else {
                EVP_MAC_CTX_free(context)
                return nil
            }
            made[digest] = context
        }
        templates = Mutex(made)
    }

    private static let made = HMACTemplates()

    static func shared() throws -> HMACTemplates {
        guard let made else { throw libraryFailure("preparing HMAC contexts") }
        return made
    }

    /// A new context for `digest` keyed with `key`; the caller frees it.
    func keyed(_ digest: DigestAlgorithm, _ key: [UInt8]) throws -> OpaquePointer {
        let copy = templates.withLock { $0[digest].flatMap { EVP_MAC_CTX_dup($0) } }
        guard let copy else { throw libraryFailure("duplicating an HMAC-\(digest) context") }
        let result = key.withNonNullPointer { EVP_MAC_init(copy, $0, $1, nil) }
        guard result == 1 else {
            EVP_MAC_CTX_free(copy)
            throw libraryFailure("keying HMAC-\(digest)")
        }
        return copy
    }
}
