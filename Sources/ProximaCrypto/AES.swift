internal import COpenSSL
import ProximaCore

/// AES (FIPS 197) modes through OpenSSL's `EVP_Cipher` API, on ciphers fetched once for the process.
public enum AES {
    /// AES-GCM (NIST SP 800-38D) with a 16-byte tag.
    ///
    /// The key length picks AES-128, AES-192 or AES-256. The IV may have any non-zero length: 12 bytes is the
    /// standard choice (RFC 9180, JWE, COSE); other lengths go through GHASH, as Apple VAS does with 16 bytes.
    public enum GCM {
        /// The tag length appended by ``seal(_:key:iv:authenticating:)``.
        public static let tagByteCount = 16

        /// Encrypts and authenticates; returns the ciphertext followed by the 16-byte tag.
        ///
        /// - Parameters:
        ///   - plaintext: The message.
        ///   - key: 16, 24 or 32 bytes.
        ///   - iv: The nonce, at least 1 byte; never reuse one under the same key.
        ///   - aad: Additional data that is authenticated but not encrypted.
        /// - Throws: `ProximaError.invalidArgument` for a bad key or IV length;
        ///   ``CryptoError/Code/libraryFailure`` if OpenSSL fails.
        public static func seal(
            _ plaintext: [UInt8],
            key: [UInt8],
            iv: [UInt8],
            authenticating aad: [UInt8] = []
        ) throws -> [UInt8] {
            let sealed = try sealDetached(plaintext, key: key, iv: iv, authenticating: aad)
            return sealed.ciphertext + sealed.tag
        }

        /// Encrypts and authenticates, returning the ciphertext and the 16-byte tag separately.
        /// - Throws: As ``seal(_:key:iv:authenticating:)``.
        public static func sealDetached(
            _ plaintext: [UInt8],
            key: [UInt8],
            iv: [UInt8],
            authenticating aad: [UInt8] = []
        ) throws -> (ciphertext: [UInt8], tag: [UInt8]) {
            let context = try CipherContext(gcmKey: key, iv: iv, encrypting: true)
            try context.authenticate(aad)
            let ciphertext = try context.update(plaintext)
            _ = try context.finish()
            var tag = [UInt8](repeating: 0, count: tagByteCount)
            let result = tag.withUnsafeMutableBytes {
                EVP_CIPHER_CTX_ctrl(context.pointer, EVP_CTRL_AEAD_GET_TAG, Int32(tagByteCount), $0.baseAddress)
            }
            try check(result, "reading the AES-GCM tag")
            return (ciphertext, tag)
        }

        /// Checks the tag and decrypts a ciphertext followed by its 16-byte tag.
        ///
        /// - Parameters:
        ///   - ciphertextAndTag: The output of ``seal(_:key:iv:authenticating:)``.
        ///   - key: 16, 24 or 32 bytes.
        ///   - iv: The nonce used to seal.
        ///   - aad: The additional data used to seal.
        /// - Returns: The plaintext, released only after the tag verified.
        /// - Throws: ``CryptoError/Code/authenticationFailed`` when the input is shorter than a tag or the tag does
        ///   not match; `ProximaError.invalidArgument` for a bad key or IV length.
        public static func open(
            _ ciphertextAndTag: [UInt8],
            key: [UInt8],
            iv: [UInt8],
            authenticating aad: [UInt8] = []
        ) throws -> [UInt8] {
            guard ciphertextAndTag.count >= tagByteCount else {
                throw CryptoError(
                    .authenticationFailed,
                    "AES-GCM input of \(ciphertextAndTag.count) bytes is shorter than the \(tagByteCount)-byte tag"
                )
            }
            let split = ciphertextAndTag.count - tagByteCount
            return try open(
                ciphertext: Array(ciphertextAndTag[..<split]),
                tag: Array(ciphertextAndTag[split...]),
                key: key,
                iv: iv,
                authenticating: aad
            )
        }

        /// Checks the tag and decrypts a ciphertext whose tag travels separately.
        /// - Throws: ``CryptoError/Code/authenticationFailed`` when the tag is not 16 bytes or does not match;
        ///   `ProximaError.invalidArgument` for a bad key or IV length.
        public static func open(
            ciphertext: [UInt8],
            tag: [UInt8],
            key: [UInt8],
            iv: [UInt8],
            authenticating aad: [UInt8] = []
        ) throws -> [UInt8] {
            guard tag.count == tagByteCount else {
                throw CryptoError(.authenticationFailed, "AES-GCM tag of \(tag.count) bytes, expected \(tagByteCount)")
            }
            let context = try CipherContext(gcmKey: key, iv: iv, encrypting: false)
            try context.authenticate(aad)
            var plaintext = try context.update(ciphertext)
            var tagCopy = tag
            let setTag = tagCopy.withUnsafeMutableBytes {
                EVP_CIPHER_CTX_ctrl(context.pointer, EVP_CTRL_AEAD_SET_TAG, Int32(tagByteCount), $0.baseAddress)
            }
            try check(setTag, "setting the AES-GCM tag")
            guard (try? context.finish()) != nil else {
                OPENSSL_cleanse(&plaintext, plaintext.count)
                throw CryptoError(.authenticationFailed, "AES-GCM tag mismatch: wrong key, IV or AAD, or altered data")
            }
            return plaintext
        }
    }

    /// AES-CTR (NIST SP 800-38A §6.5) with a 16-byte initial counter block incremented as a 128-bit big-endian
    /// integer. Encryption and decryption are the same operation. CTR has no integrity: pair it with a MAC.
    public enum CTR {
        /// Encrypts (or decrypts) `data`.
        ///
        /// - Parameters:
        ///   - data: The input, of any length.
        ///   - key: 16, 24 or 32 bytes.
        ///   - iv: The 16-byte initial counter block.
        /// - Throws: `ProximaError.invalidArgument` for a bad key or IV length;
        ///   ``CryptoError/Code/libraryFailure`` if OpenSSL fails.
        public static func encrypt(_ data: [UInt8], key: [UInt8], iv: [UInt8]) throws -> [UInt8] {
            let context = try CipherContext(ctrKey: key, iv: iv)
            var output = try context.update(data)
            output += try context.finish()
            return output
        }

        /// The same as ``encrypt(_:key:iv:)``, named for the reader.
        public static func decrypt(_ data: [UInt8], key: [UInt8], iv: [UInt8]) throws -> [UInt8] {
            try encrypt(data, key: key, iv: iv)
        }
    }
}

/// One `EVP_CIPHER_CTX`, freed with this object. Not `Sendable`: it lives inside one call.
private final class CipherContext {
    let pointer: OpaquePointer
    private let encrypting: Bool

    private static func keyBits(_ key: [UInt8], _ mode: String) throws -> Int {
        guard [16, 24, 32].contains(key.count) else {
            throw ProximaError(.invalidArgument, "AES-\(mode) key of \(key.count) bytes; expected 16, 24 or 32")
        }
        return key.count * 8
    }

    /// A context for `cipher` (fetched once for the process, ``OpenSSLAlgorithms``) with `key` and `iv` set.
    /// - Parameter setIVLength: Whether to set an IV length other than the mode's default first (GCM).
    private init(cipher: OpaquePointer, key: [UInt8], iv: [UInt8], encrypting: Bool, setIVLength: Bool) throws {
        guard let pointer = EVP_CIPHER_CTX_new() else { throw libraryFailure("creating a cipher context") }
        self.pointer = pointer
        self.encrypting = encrypting
        let enc: Int32 = encrypting ? 1 : 0
        if setIVLength {
            try check(EVP_CipherInit_ex2(pointer, cipher, nil, nil, enc, nil), "initialising the cipher")
            let length = try int32Length(iv.count, "IV")
            try check(EVP_CIPHER_CTX_ctrl(pointer, EVP_CTRL_AEAD_SET_IVLEN, length, nil), "setting the IV length")
        }
        let result = key.withUnsafeBufferPointer { keyPointer in
            iv.withUnsafeBufferPointer {
                EVP_CipherInit_ex2(
                    pointer,
                    setIVLength ? nil : cipher,
                    keyPointer.baseAddress,
                    $0.baseAddress,
                    enc,
                    nil
                )
            }
        }
        try check(result, "setting the key and IV")
    }

    convenience init(gcmKey key: [UInt8], iv: [UInt8], encrypting: Bool) throws {
        let algorithms = try OpenSSLAlgorithms.shared()
        let cipher =
            switch try Self.keyBits(key, "GCM") {
            case 128: algorithms.aes128GCM
            case 192: algorithms.aes192GCM
            default: algorithms.aes256GCM
            }
        guard !iv.isEmpty else { throw ProximaError(.invalidArgument, "AES-GCM IV must not be empty") }
        // 12 bytes is GCM's default IV length; only another length needs setting before the IV.
        try self.init(cipher: cipher, key: key, iv: iv, encrypting: encrypting, setIVLength: iv.count != 12)
    }

    convenience init(ctrKey key: [UInt8], iv: [UInt8]) throws {
        let algorithms = try OpenSSLAlgorithms.shared()
        let cipher =
            switch try Self.keyBits(key, "CTR") {
            case 128: algorithms.aes128CTR
            case 192: algorithms.aes192CTR
            default: algorithms.aes256CTR
            }
        guard iv.count == 16 else {
            throw ProximaError(.invalidArgument, "AES-CTR counter block of \(iv.count) bytes; expected 16")
        }
        try self.init(cipher: cipher, key: key, iv: iv, encrypting: true, setIVLength: false)
    }

    deinit { EVP_CIPHER_CTX_free(pointer) }

    /// Feeds additional authenticated data (GCM only).
    func authenticate(_ aad: [UInt8]) throws {
        guard !aad.isEmpty else { return }
        let length = try int32Length(aad.count, "AAD")
        var written: Int32 = 0
        let result = aad.withUnsafeBufferPointer { EVP_CipherUpdate(pointer, nil, &written, $0.baseAddress, length) }
        try check(result, "authenticating the AAD")
    }

    func update(_ input: [UInt8]) throws -> [UInt8] {
        guard !input.isEmpty else { return [] }
        let length = try int32Length(input.count, "cipher input")
        // Stream modes write exactly as many bytes as they read; one spare block covers any mode.
        var output = [UInt8](repeating: 0, count: input.count + 16)
        var written: Int32 = 0
        let result = input.withUnsafeBufferPointer { inputPointer in
            output.withUnsafeMutableBufferPointer {
                EVP_CipherUpdate(pointer, $0.baseAddress, &written, inputPointer.baseAddress, length)
            }
        }
        try check(result, encrypting ? "encrypting" : "decrypting")
        output.removeLast(output.count - Int(written))
        return output
    }

    /// Finishes the operation; for GCM decryption this is where the tag is checked.
    func finish() throws -> [UInt8] {
        var output = [UInt8](repeating: 0, count: 16)
        var written: Int32 = 0
        let result = output.withUnsafeMutableBufferPointer { EVP_CipherFinal_ex(pointer, $0.baseAddress, &written) }
        guard result == 1 else {
            // A GCM tag mismatch queues nothing worth keeping; clear so the thread's next call starts clean.
            throw libraryFailure(encrypting ? "finishing encryption" : "finishing decryption")
        }
        output.removeLast(output.count - Int(written))
        return output
    }
}
