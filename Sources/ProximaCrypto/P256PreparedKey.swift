internal import COpenSSL
import ProximaCore
import Synchronization

extension P256 {
    /// A long-lived private key with its OpenSSL objects built once: the P-256 group, the scalar as a `BIGNUM` and
    /// the `EVP_PKEY`. For keys a reader holds for its whole life (Apple VAS merchant keys, the Smart Tap collector
    /// key), where ``PrivateKey`` rebuilds all three on every call.
    ///
    /// ECDH here is the scalar multiplication itself (`EC_POINT_mul` on the peer's point, its x coordinate): the
    /// same value as ``PrivateKey/sharedSecret(with:)`` (SEC 1 §3.3.1; P-256's cofactor is 1), without an
    /// `EVP_PKEY` for the peer. `Sendable`: the OpenSSL objects sit behind a `Mutex` (one operation at a time per
    /// key).
    public final class PreparedPrivateKey: Sendable {
        /// The key, for what the prepared operations do not cover.
        public let key: PrivateKey
        private let state: Mutex<PreparedState>

        /// Builds the OpenSSL objects of `key`.
        /// - Throws: ``CryptoError/Code/libraryFailure`` only if OpenSSL fails.
        public init(_ key: PrivateKey) throws {
            self.key = key
            state = Mutex(try PreparedState(key))
        }

        /// The ECDH shared secret with the point `encoded` (SEC 1, compressed `02|03 ‖ x` or uncompressed
        /// `04 ‖ x ‖ y`): the x coordinate of d·Q, 32 bytes.
        /// - Throws: ``CryptoError/Code/invalidKey`` when the bytes are no point of P-256 (or the point at
        ///   infinity); ``CryptoError/Code/libraryFailure`` if OpenSSL fails.
        public func sharedSecret(withPoint encoded: [UInt8]) throws -> [UInt8] {
            guard encoded.count == 33 || encoded.count == 65 else {
                throw CryptoError(.invalidKey, "P-256 point of \(encoded.count) bytes; expected 33 or 65")
            }
            return try state.withLock { try $0.sharedSecret(encoded) }
        }

        /// The ECDH shared secret with `publicKey`, as ``PrivateKey/sharedSecret(with:)``.
        public func sharedSecret(with publicKey: PublicKey) throws -> [UInt8] {
            try sharedSecret(withPoint: publicKey.x963Representation)
        }

        /// An ECDSA signature over SHA-256 of `message` with a random nonce, as ``PrivateKey/signature(for:)``.
        /// - Throws: ``CryptoError/Code/libraryFailure`` only if OpenSSL fails.
        public func signature(for message: [UInt8]) throws -> ECDSASignature {
            try state.withLock { try $0.signature(message) }
        }
    }
}

/// The OpenSSL objects of one prepared key, used only inside its `Mutex`.
final class PreparedState {
    let group: OpaquePointer
    let numbers: OpaquePointer
    let scalar: OpaquePointer
    let pkey: OwnedKey
    let result: OpaquePointer
    let peer: OpaquePointer
    let x: OpaquePointer

    init(_ key: P256.PrivateKey) throws {
        pkey = try makeKey(publicPoint: key.publicKey.x963Representation, privateScalar: key.rawRepresentation)
        guard let group = EC_GROUP_new_by_curve_name(NID_X9_62_prime256v1) else {
            throw libraryFailure("loading the P-256 group")
        }
        self.group = group
        guard let numbers = BN_CTX_secure_new(),
            let scalar = key.rawRepresentation.withUnsafeBufferPointer({ bytes in
                BN_secure_new().flatMap { number in BN_bin2bn(bytes.baseAddress, Int32(bytes.count), number) }
            }),
            let result = EC_POINT_new(group), let peer = EC_POINT_new(group), let x = BN_new()
        else {
            EC_GROUP_free(group)
            throw libraryFailure("allocating the prepared key's numbers")
        }
        BN_set_flags(scalar, BN_FLG_CONSTTIME)
        self.numbers = numbers
        self.scalar = scalar
        self.result = result
        self.peer = peer
        self.x = x
    }

    deinit {
        BN_clear_free(x)
        EC_POINT_clear_free(peer)
        EC_POINT_clear_free(result)
        BN_clear_free(scalar)
        BN_CTX_free(numbers)
        EC_GROUP_free(group)
    }

    func sharedSecret(_ encoded: [UInt8]) throws -> [UInt8] {
        let decoded = encoded.withUnsafeBufferPointer {
            EC_POINT_oct2point(group, peer, $0.baseAddress, $0.count, numbers)
        }
        guard decoded == 1, EC_POINT_is_at_infinity(group, peer) == 0, EC_POINT_is_on_curve(group, peer, numbers) == 1
        else {
            _ = drainOpenSSLErrors()
            throw CryptoError(.invalidKey, "the peer's P-256 point is not on the curve")
        }
        try check(EC_POINT_mul(group, result, nil, peer, scalar, numbers), "ECDH")
        try check(EC_POINT_get_affine_coordinates(group, result, x, nil, numbers), "ECDH x coordinate")
        var secret = [UInt8](repeating: 0, count: P256.scalarByteCount)
        let written = secret.withUnsafeMutableBufferPointer { BN_bn2binpad(x, $0.baseAddress, 32) }
        guard written == 32 else { throw libraryFailure("ECDH x coordinate") }
        return secret
    }

    func signature(_ message: [UInt8]) throws -> P256.ECDSASignature {
        guard let context = EVP_MD_CTX_new() else { throw libraryFailure("creating a signing context") }
        defer { EVP_MD_CTX_free(context) }
        try check(EVP_DigestSignInit(context, nil, EVP_sha256(), nil, pkey.pointer), "initialising ECDSA")
        var der = [UInt8](repeating: 0, count: 80)
        var length = der.count
        let result = message.withNonNullPointer { pointer, count in
            der.withUnsafeMutableBufferPointer { EVP_DigestSign(context, $0.baseAddress, &length, pointer, count) }
        }
        try check(result, "ECDSA signing")
        return try P256.ECDSASignature(derRepresentation: Array(der[..<length]))
    }
}

extension P256 {
    /// The ECDH shared secret of `privateKey` with the point `encoded` (SEC 1, 33 or 65 bytes), on one P-256 group
    /// kept for the process: for ephemeral keys, used once, where a ``PreparedPrivateKey`` would not pay off and
    /// ``PrivateKey/sharedSecret(with:)`` builds two `EVP_PKEY`s and a group per call. Same value as the latter.
    /// - Throws: ``CryptoError/Code/invalidKey`` when the bytes are no point of P-256;
    ///   ``CryptoError/Code/libraryFailure`` if OpenSSL fails.
    public static func sharedSecret(privateKey: PrivateKey, point encoded: [UInt8]) throws -> [UInt8] {
        guard encoded.count == 33 || encoded.count == 65 else {
            throw CryptoError(.invalidKey, "P-256 point of \(encoded.count) bytes; expected 33 or 65")
        }
        return try ephemeralGroup.withLock { state in
            if state == nil { state = try EphemeralGroupState() }
            guard let ready = state else { throw libraryFailure("loading the P-256 group") }
            return try ready.sharedSecret(scalar: privateKey.rawRepresentation, point: encoded)
        }
    }
}

/// The process's P-256 group for ephemeral ECDH, made on first use.
private let ephemeralGroup = Mutex<EphemeralGroupState?>(nil)

/// A group, a `BN_CTX` and scratch numbers, used only inside ``ephemeralGroup``'s `Mutex`.
final class EphemeralGroupState {
    let group: OpaquePointer
    let numbers: OpaquePointer
    let scalar: OpaquePointer
    let result: OpaquePointer
    let peer: OpaquePointer
    let x: OpaquePointer

    init() throws {
        guard let group = EC_GROUP_new_by_curve_name(NID_X9_62_prime256v1) else {
            throw libraryFailure("loading the P-256 group")
        }
        guard let numbers = BN_CTX_secure_new(), let scalar = BN_secure_new(), let result = EC_POINT_new(group),
            let peer = EC_POINT_new(group), let x = BN_new()
        else {
            EC_GROUP_free(group)
            throw libraryFailure("allocating ECDH numbers")
        }
        BN_set_flags(scalar, BN_FLG_CONSTTIME)
        self.group = group
        self.numbers = numbers
        self.scalar = scalar
        self.result = result
        self.peer = peer
        self.x = x
    }

    deinit {
        BN_clear_free(x)
        EC_POINT_clear_free(peer)
        EC_POINT_clear_free(result)
        BN_clear_free(scalar)
        BN_CTX_free(numbers)
        EC_GROUP_free(group)
    }

    func sharedSecret(scalar bytes: [UInt8], point encoded: [UInt8]) throws -> [UInt8] {
        defer { BN_clear(scalar) }
        guard bytes.withUnsafeBufferPointer({ BN_bin2bn($0.baseAddress, Int32($0.count), scalar) }) != nil else {
            throw libraryFailure("loading the private scalar")
        }
        let decoded = encoded.withUnsafeBufferPointer {
            EC_POINT_oct2point(group, peer, $0.baseAddress, $0.count, numbers)
        }
        guard decoded == 1, EC_POINT_is_at_infinity(group, peer) == 0, EC_POINT_is_on_curve(group, peer, numbers) == 1
        else {
            _ = drainOpenSSLErrors()
            throw CryptoError(.invalidKey, "the peer's P-256 point is not on the curve")
        }
        try check(EC_POINT_mul(group, result, nil, peer, scalar, numbers), "ECDH")
        try check(EC_POINT_get_affine_coordinates(group, result, x, nil, numbers), "ECDH x coordinate")
        var secret = [UInt8](repeating: 0, count: P256.scalarByteCount)
        let written = secret.withUnsafeMutableBufferPointer { BN_bn2binpad(x, $0.baseAddress, 32) }
        guard written == 32 else { throw libraryFailure("ECDH x coordinate") }
        return secret
    }
}
