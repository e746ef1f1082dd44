internal import COpenSSL
import ProximaCore

/// SHA-2 fetched once for the process, and HMAC and HKDF built on it: OpenSSL 3.0 fetches an algorithm implicitly
/// on every `EVP_Digest(…, EVP_sha256(), …)`, `EVP_Q_mac` and `EVP_KDF_fetch`, which costs more than hashing the
/// few hundred bytes an mDL read hashes at a time.
///
/// Same outputs as ``DigestAlgorithm/hash(_:)``, ``HMAC`` and ``HKDF`` (tested against them): HMAC as RFC 2104
/// (`H((K ⊕ opad) ‖ H((K ⊕ ipad) ‖ m))`, a key longer than the block hashed first), HKDF as RFC 5869.
/// A fetched `EVP_MD` is immutable and OpenSSL allows sharing it across threads, hence `nonisolated(unsafe)`.
/// Later, ``DigestAlgorithm/hash(_:)``, ``HMAC`` and ``HKDF`` could use these directly.
nonisolated(unsafe) private let fetchedSHA256 = EVP_MD_fetch(nil, "SHA2-256", nil)
nonisolated(unsafe) private let fetchedSHA384 = EVP_MD_fetch(nil, "SHA2-384", nil)
nonisolated(unsafe) private let fetchedSHA512 = EVP_MD_fetch(nil, "SHA2-512", nil)

extension DigestAlgorithm {
    private var fetched: OpaquePointer? {
        switch self {
        case .sha256: fetchedSHA256
        case .sha384: fetchedSHA384
        case .sha512: fetchedSHA512
        }
    }

    /// The HMAC block size: 64 bytes for SHA-256, 128 for SHA-384 and SHA-512.
    var blockByteCount: Int { self == .sha256 ? 64 : 128 }

    /// ``hash(_:)`` with the digest fetched once.
    /// - Throws: ``CryptoError/Code/libraryFailure`` only if OpenSSL fails.
    package func hashFetched(_ data: [UInt8]) throws -> [UInt8] {
        try hashFetched(parts: [data])
    }

    /// The digest of the concatenation of `parts`.
    func hashFetched(parts: [[UInt8]]) throws -> [UInt8] {
        guard let md = fetched ?? messageDigest, let context = EVP_MD_CTX_new() else {
            throw libraryFailure("creating a \(self) context")
        }
        defer { EVP_MD_CTX_free(context) }
        try check(EVP_DigestInit_ex(context, md, nil), "initialising \(self)")
        for part in parts {
            try check(part.withNonNullPointer { EVP_DigestUpdate(context, $0, $1) }, "\(self) update")
        }
        var output = [UInt8](repeating: 0, count: byteCount)
        var length: UInt32 = 0
        try check(
            output.withUnsafeMutableBufferPointer { EVP_DigestFinal_ex(context, $0.baseAddress, &length) },
            "\(self)"
        )
        guard Int(length) == byteCount else { throw CryptoError(.libraryFailure, "\(self) gave \(length) bytes") }
        return output
    }

    /// HMAC (RFC 2104) of `message` under `key` with this digest.
    /// - Throws: ``CryptoError/Code/libraryFailure`` only if OpenSSL fails.
    package func hmacFetched(key: [UInt8], message: [UInt8]) throws -> [UInt8] {
        var block = key.count > blockByteCount ? try hashFetched(key) : key
        block += [UInt8](repeating: 0, count: blockByteCount - block.count)
        defer {
            for index in block.indices { block[index] = 0 }
        }
        let inner = try hashFetched(parts: [block.map { $0 ^ 0x36 }, message])
        return try hashFetched(parts: [block.map { $0 ^ 0x5C }, inner])
    }

    /// HKDF (RFC 5869): extract with `salt` (HashLen zeros when empty), expand with `info` to `outputByteCount`.
    /// - Throws: `ProximaError.invalidArgument` for a length outside 1…255·HashLen.
    package func hkdfFetched(
        inputKeyMaterial: [UInt8],
        salt: [UInt8],
        info: [UInt8],
        outputByteCount: Int
    ) throws -> [UInt8] {
        guard outputByteCount >= 1, outputByteCount <= 255 * byteCount else {
            throw ProximaError(
                .invalidArgument,
                "HKDF-Expand length \(outputByteCount) is outside 1…\(255 * byteCount)"
            )
        }
        let prk = try hmacFetched(
            key: salt.isEmpty ? [UInt8](repeating: 0, count: byteCount) : salt,
            message: inputKeyMaterial
        )
        var output: [UInt8] = []
        var previous: [UInt8] = []
        var counter: UInt8 = 1
        while output.count < outputByteCount {
            previous = try hmacFetched(key: prk, message: previous + info + [counter])
            output += previous
            counter &+= 1
        }
        return Array(output.prefix(outputByteCount))
    }
}
