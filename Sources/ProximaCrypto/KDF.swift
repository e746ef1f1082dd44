internal import COpenSSL
import ProximaCore

/// Runs one `EVP_KDF` derivation.
private func deriveWithKDF(
    _ name: String,
    _ parameters: ParameterList,
    outputByteCount: Int
) throws -> [UInt8] {
    guard let kdf = EVP_KDF_fetch(nil, name, nil) else { throw libraryFailure("fetching KDF \(name)") }
    defer { EVP_KDF_free(kdf) }
    guard let context = EVP_KDF_CTX_new(kdf) else { throw libraryFailure("creating a \(name) context") }
    defer { EVP_KDF_CTX_free(context) }
    var output = [UInt8](repeating: 0, count: outputByteCount)
    let result = parameters.withParameters { params in
        output.withUnsafeMutableBufferPointer { EVP_KDF_derive(context, $0.baseAddress, outputByteCount, params) }
    }
    try check(result, "\(name) derivation")
    return output
}

/// HKDF (RFC 5869) through OpenSSL's `EVP_KDF` "HKDF", with Extract and Expand available separately because
/// HPKE's `LabeledExtract` and `LabeledExpand` (RFC 9180 §4) call them separately.
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
        let parameters = ParameterList()
        parameters.append("mode", int: EVP_KDF_HKDF_MODE_EXTRACT_ONLY)
        parameters.append("digest", utf8: digest.openSSLName)
        parameters.append("key", octets: inputKeyMaterial)
        // HMAC pads its key with zeros to the block size, so an empty salt and HashLen zeros give the same PRK;
        // passing the zeros keeps OpenSSL from treating the empty salt as "no salt given".
        parameters.append("salt", octets: salt.isEmpty ? [UInt8](repeating: 0, count: digest.byteCount) : salt)
        return try deriveWithKDF("HKDF", parameters, outputByteCount: digest.byteCount)
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
        let parameters = ParameterList()
        parameters.append("mode", int: EVP_KDF_HKDF_MODE_EXPAND_ONLY)
        parameters.append("digest", utf8: digest.openSSLName)
        parameters.append("key", octets: pseudoRandomKey)
        parameters.append("info", octets: info)
        return try deriveWithKDF("HKDF", parameters, outputByteCount: outputByteCount)
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
        let prk = try extract(salt: salt, inputKeyMaterial: inputKeyMaterial, digest: digest)
        return try expand(pseudoRandomKey: prk, info: info, outputByteCount: outputByteCount, digest: digest)
    }
}

/// The ANSI X9.63 key derivation function (SEC 1 v2 §3.6.1), through OpenSSL's `EVP_KDF` "X963KDF":
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
        let parameters = ParameterList()
        parameters.append("digest", utf8: digest.openSSLName)
        parameters.append("key", octets: sharedSecret)
        parameters.append("info", octets: sharedInfo)
        return try deriveWithKDF("X963KDF", parameters, outputByteCount: outputByteCount)
    }
}
