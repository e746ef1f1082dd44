internal import COpenSSL
import ProximaCore

/// HKDF (RFC 5869) on OpenSSL's HMAC, with Extract and Expand available separately because HPKE's
/// `LabeledExtract` and `LabeledExpand` (RFC 9180 §4) call them separately.
///
/// Written here over ``HMAC`` (RFC 5869 §2.2–2.3 are two loops of it) rather than through `EVP_KDF` "HKDF": the
/// latter looks the KDF and its digest up by name and builds a parameter list on every call, which cost more than the
/// three HMACs of a 48-byte key.
public enum HKDF {
    /// HKDF-Extract (RFC 5869 §2.2): `PRK = HMAC-Hash(salt, IKM)`.
    ///
    /// - Parameters:
    ///   - salt: The salt; empty means a string of `HashLen` zero bytes, as RFC 5869 specifies.
    ///   - inputKeyMaterial: The input keying material (may be empty).
    ///   - digest: The hash function, SHA-256 unless given.
    /// - Returns: The pseudorandom key, `digest.byteCount` bytes.
    /// - Throws: ``CryptoError/Code/libraryFailure`` only if OpenSSL fails.
    public static func extract(
        salt: [UInt8],
        inputKeyMaterial: [UInt8],
        digest: DigestAlgorithm = .sha256
    ) throws -> [UInt8] {
        // HMAC pads its key with zeros to the block size, so an empty salt and HashLen zeros give the same PRK.
        try HMAC.authenticationCode(for: [inputKeyMaterial], key: salt, digest: digest)
    }

    /// HKDF-Expand (RFC 5869 §2.3).
    ///
    /// - Parameters:
    ///   - pseudoRandomKey: The PRK, normally the output of ``extract(salt:inputKeyMaterial:digest:)``.
    ///   - info: Context and application-specific information (may be empty).
    ///   - outputByteCount: L, from 1 to 255 × `HashLen`.
    ///   - digest: The hash function, SHA-256 unless given.
    /// - Throws: `ProximaError.invalidArgument` when L is out of range or the PRK is empty;
    ///   ``CryptoError/Code/libraryFailure`` if OpenSSL fails.
    public static func expand(
        pseudoRandomKey: [UInt8],
        info: [UInt8],
        outputByteCount: Int,
        digest: DigestAlgorithm = .sha256
    ) throws -> [UInt8] {
        let limit = 255 * digest.byteCount
        guard outputByteCount >= 1, outputByteCount <= limit else {
            throw ProximaError(.invalidArgument, "HKDF-Expand length \(outputByteCount) is outside 1…\(limit)")
        }
        guard !pseudoRandomKey.isEmpty else {
            throw ProximaError(.invalidArgument, "HKDF-Expand needs a non-empty pseudorandom key")
        }
        // T(i) = HMAC(PRK, T(i−1) ‖ info ‖ i), T(0) empty; OKM = the first L bytes of T(1) ‖ T(2) ‖ …
        var output: [UInt8] = []
        output.reserveCapacity(outputByteCount + digest.byteCount)
        var block: [UInt8] = []
        var counter: UInt8 = 1
        while output.count < outputByteCount {
            block = try HMAC.authenticationCode(for: [block, info, [counter]], key: pseudoRandomKey, digest: digest)
            output += block
            counter &+= 1
        }
        OPENSSL_cleanse(&block, block.count)
        let extra = output.count - outputByteCount
        if extra > 0 {
            output.withUnsafeMutableBufferPointer { OPENSSL_cleanse($0.baseAddress! + outputByteCount, extra) }
            output.removeLast(extra)
        }
        return output
    }

    /// Extract then Expand (RFC 5869 §2).
    /// - Throws: As ``expand(pseudoRandomKey:info:outputByteCount:digest:)``.
    public static func deriveKey(
        inputKeyMaterial: [UInt8],
        salt: [UInt8],
        info: [UInt8],
        outputByteCount: Int,
        digest: DigestAlgorithm = .sha256
    ) throws -> [UInt8] {
        var prk = try extract(salt: salt, inputKeyMaterial: inputKeyMaterial, digest: digest)
        defer { OPENSSL_cleanse(&prk, prk.count) }
        return try expand(pseudoRandomKey: prk, info: info, outputByteCount: outputByteCount, digest: digest)
    }
}

/// The ANSI X9.63 key derivation function (SEC 1 v2 §3.6.1), on OpenSSL's digest fetched once (one hash per block;
/// `EVP_KDF` "X963KDF" would look the KDF and digest up by name on every call):
/// `K = Hash(Z || Counter || SharedInfo)` for Counter = 1, 2, … (32-bit big-endian), truncated to the length.
/// Apple VAS derives its AES key this way from the ECDH shared secret.
public enum X963KDF {
    /// - Parameters:
    ///   - sharedSecret: Z, the shared secret (for example the 32-byte ECDH x-coordinate); must not be empty.
    ///   - sharedInfo: SharedInfo (may be empty).
    ///   - outputByteCount: The key length, from 1 to 1 MiB.
    ///   - digest: The hash function, SHA-256 unless given.
    /// - Throws: `ProximaError.invalidArgument` for an empty secret or a length out of range;
    ///   ``CryptoError/Code/libraryFailure`` if OpenSSL fails.
    public static func deriveKey(
        sharedSecret: [UInt8],
        sharedInfo: [UInt8],
        outputByteCount: Int,
        digest: DigestAlgorithm = .sha256
    ) throws -> [UInt8] {
        guard !sharedSecret.isEmpty else {
            throw ProximaError(.invalidArgument, "X9.63 KDF needs a non-empty shared secret")
        }
        guard outputByteCount >= 1, outputByteCount <= 1 << 20 else {
            throw ProximaError(.invalidArgument, "X9.63 KDF length \(outputByteCount) is outside 1…1048576")
        }
        var output: [UInt8] = []
        output.reserveCapacity(outputByteCount + digest.byteCount)
        var counter: UInt32 = 1
        while output.count < outputByteCount {
            let counterBytes = [
                UInt8(counter >> 24), UInt8(counter >> 16 & 0xFF), UInt8(counter >> 8 & 0xFF), UInt8(counter & 0xFF),
            ]
            var input = sharedSecret + counterBytes + sharedInfo
            output += try digest.hash(input)
            OPENSSL_cleanse(&input, input.count)
            counter += 1
        }
        let extra = output.count - outputByteCount
        if extra > 0 {
            output.withUnsafeMutableBufferPointer { OPENSSL_cleanse($0.baseAddress! + outputByteCount, extra) }
            output.removeLast(extra)
        }
        return output
    }
}
