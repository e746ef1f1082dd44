internal import COpenSSL
import ProximaCore
import Synchronization

// The one fast path of P-256, in two parts that every user (Apple VAS, Google Smart Tap, HPKE, JWT ES256, store and
// forward's batch signatures, the mdoc and COSE ECDSA users of EC.swift) goes through without knowing it:
//
// - ECDH and key generation are scalar multiplications on one P-256 group made for the process (``P256Group``): no
//   `EVP_PKEY` is built for either side, so a key used once (an ephemeral key, a phone's point) costs only the
//   multiplication and decoding its point.
// - ECDSA needs OpenSSL's `EVP_PKEY`: those of the keys that sign or verify are kept in ``P256KeyCache`` with a
//   signing or verifying context already initialised, duplicated for each use. Only keys that sign or verify enter it:
//   ephemeral keys never do either, so no key used once lingers there.
//
// The cache sits beside the key values, not inside them: a class (the OpenSSL handle) stored inside `P256.PublicKey`
// or `P256.PrivateKey` made copies of values holding them crash at run time (a bad retain in an outlined copy of a
// `Result<PaymentService, …>`, Swift 6.3.1), so the values stay plain bytes and look their OpenSSL objects up here.

/// The P-256 group, made once for the process.
///
/// `@unchecked Sendable`: the group is never modified after `init`; OpenSSL's point operations take it as
/// `const EC_GROUP *` and may run on it from several threads at once (openssl-threads(7): concurrent read-only use
/// is safe). Everything an operation writes (its `BN_CTX`, points, numbers) is made for that one call.
final class P256Group: @unchecked Sendable {
    let group: OpaquePointer
    /// The field prime p, the curve's b and (p + 1)/4, with p's Montgomery context: public values, read only, for
    /// decompressing points (``decompress(_:into:_:)``).
    private let prime: OpaquePointer
    private let b: OpaquePointer
    private let rootExponent: OpaquePointer
    private let montgomery: OpaquePointer

    private init?() {
        guard let group = EC_GROUP_new_by_curve_name(NID_X9_62_prime256v1) else { return nil }
        guard let prime = BN_new(), let a = BN_new(), let b = BN_new(), let rootExponent = BN_new(),
            let montgomery = BN_MONT_CTX_new(), let numbers = BN_CTX_new()
        else { return nil }
        defer {
            BN_CTX_free(numbers)
            BN_free(a)
        }
        // p ≡ 3 (mod 4) for P-256, so a square root of v is v^((p+1)/4) when v has one.
        guard EC_GROUP_get_curve(group, prime, a, b, numbers) == 1, BN_rshift(rootExponent, prime, 2) == 1,
            BN_add_word(rootExponent, 1) == 1, BN_MONT_CTX_set(montgomery, prime, numbers) == 1
        else { return nil }
        self.group = group
        self.prime = prime
        self.b = b
        self.rootExponent = rootExponent
        self.montgomery = montgomery
    }

    private static let made = P256Group()

    /// The process's group.
    /// - Throws: ``CryptoError/Code/libraryFailure`` when OpenSSL cannot make P-256.
    static func shared() throws -> P256Group {
        guard let made else { throw libraryFailure("loading the P-256 group") }
        return made
    }

    /// Calls `body` with a fresh `BN_CTX` and two fresh points, all cleared and freed afterwards (intermediates of a
    /// scalar multiplication are secret).
    private func withScratch<R>(_ body: (OpaquePointer, OpaquePointer, OpaquePointer) throws -> R) throws -> R {
        guard let numbers = BN_CTX_secure_new() else { throw libraryFailure("allocating a BN_CTX") }
        defer { BN_CTX_free(numbers) }
        guard let first = EC_POINT_new(group) else { throw libraryFailure("allocating an EC point") }
        defer { EC_POINT_clear_free(first) }
        guard let second = EC_POINT_new(group) else { throw libraryFailure("allocating an EC point") }
        defer { EC_POINT_clear_free(second) }
        BN_CTX_start(numbers)
        defer { BN_CTX_end(numbers) }
        return try body(numbers, first, second)
    }

    /// Loads a 32-byte scalar into a constant-time `BIGNUM` from `numbers`.
    private func loadScalar(_ scalar: [UInt8], _ numbers: OpaquePointer) throws -> OpaquePointer {
        guard let number = BN_CTX_get(numbers),
            scalar.withUnsafeBufferPointer({ BN_bin2bn($0.baseAddress, Int32($0.count), number) }) != nil
        else { throw libraryFailure("loading the private scalar") }
        BN_set_flags(number, BN_FLG_CONSTTIME)
        return number
    }

    /// Decodes a SEC 1 point (compressed or uncompressed) into `point`, checking it is on the curve and not at
    /// infinity.
    private func decode(_ encoded: [UInt8], into point: OpaquePointer, _ numbers: OpaquePointer) throws {
        if encoded.count == 33, encoded[0] == 0x02 || encoded[0] == 0x03 {
            return try decompress(encoded, into: point, numbers)
        }
        guard !(encoded.count == 1 && encoded[0] == 0x00) else {
            throw CryptoError(.invalidKey, "P-256 public key is the point at infinity")
        }
        let decoded = encoded.withUnsafeBufferPointer {
            EC_POINT_oct2point(group, point, $0.baseAddress, $0.count, numbers)
        }
        guard decoded == 1 else {
            _ = drainOpenSSLErrors()
            throw CryptoError(.invalidKey, "P-256 public key is not a point on the curve (or a coordinate is ≥ p)")
        }
        guard EC_POINT_is_at_infinity(group, point) == 0 else {
            throw CryptoError(.invalidKey, "P-256 public key is the point at infinity")
        }
        guard EC_POINT_is_on_curve(group, point, numbers) == 1 else {
            _ = drainOpenSSLErrors()
            throw CryptoError(.invalidKey, "P-256 public key is not a point on the curve")
        }
    }

    /// Decompresses `02|03 ‖ x` (SEC 1 §2.3.4): y² = x³ − 3x + b, y = (y²)^((p+1)/4) checked by squaring, the y of
    /// the given parity.
    ///
    /// The same result as `EC_POINT_oct2point`, whose square root (`BN_mod_sqrt`) builds p's Montgomery context and
    /// runs OpenSSL's constant-time exponentiation on every call, about half the cost of the ECDH that follows. The
    /// point is public, so the exponentiation here is the ordinary one, on the context made once.
    private func decompress(_ encoded: [UInt8], into point: OpaquePointer, _ numbers: OpaquePointer) throws {
        guard let x = BN_CTX_get(numbers), let square = BN_CTX_get(numbers), let y = BN_CTX_get(numbers),
            let squared = BN_CTX_get(numbers)
        else { throw libraryFailure("allocating numbers to decompress a point") }
        let loaded = encoded.withUnsafeBufferPointer { BN_bin2bn($0.baseAddress! + 1, 32, x) }
        guard loaded != nil else { throw libraryFailure("loading a point's x coordinate") }
        guard BN_cmp(x, prime) < 0 else {
            throw CryptoError(.invalidKey, "P-256 public key is not a point on the curve (or a coordinate is ≥ p)")
        }
        // x³ − 3x + b = (x² − 3)·x + b (mod p).
        try check(BN_mod_sqr(square, x, prime, numbers), "decompressing a point")
        try check(BN_sub_word(square, 3), "decompressing a point")
        try check(BN_mod_mul(square, square, x, prime, numbers), "decompressing a point")
        try check(BN_mod_add(square, square, b, prime, numbers), "decompressing a point")
        try check(BN_mod_exp_mont(y, square, rootExponent, prime, numbers, montgomery), "decompressing a point")
        try check(BN_mod_sqr(squared, y, prime, numbers), "decompressing a point")
        guard BN_cmp(squared, square) == 0 else {
            throw CryptoError(.invalidKey, "P-256 public key is not a point on the curve (no y for this x)")
        }
        if (BN_is_odd(y) == 1) != (encoded[0] == 0x03) {
            guard BN_is_zero(y) == 0 else {
                throw CryptoError(.invalidKey, "P-256 public key is not a point on the curve (y = 0 has no odd form)")
            }
            try check(BN_sub(y, prime, y), "decompressing a point")
        }
        guard EC_POINT_set_affine_coordinates(group, point, x, y, numbers) == 1 else {
            _ = drainOpenSSLErrors()
            throw CryptoError(.invalidKey, "P-256 public key is not a point on the curve")
        }
    }

    private func uncompressed(_ point: OpaquePointer, _ numbers: OpaquePointer) throws -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 65)
        let written = out.withUnsafeMutableBufferPointer {
            EC_POINT_point2oct(group, point, POINT_CONVERSION_UNCOMPRESSED, $0.baseAddress, 65, numbers)
        }
        guard written == 65 else { throw libraryFailure("encoding an EC point") }
        return out
    }

    /// Decodes a SEC 1 point, checks that it is on the curve and not at infinity, and returns it uncompressed.
    func validatedUncompressedPoint(_ encoded: [UInt8]) throws -> [UInt8] {
        try withScratch { numbers, point, _ in
            try decode(encoded, into: point, numbers)
            // An uncompressed point that decoded (both coordinates below p, on the curve) is its own encoding;
            // writing it again costs a field inversion (the affine conversion), a fifth of the ECDH after it.
            if encoded.count == 65, encoded[0] == 0x04 { return encoded }
            return try uncompressed(point, numbers)
        }
    }

    /// d·G, uncompressed, for a scalar already checked to lie in 1…n−1.
    func publicPoint(forScalar scalar: [UInt8]) throws -> [UInt8] {
        try withScratch { numbers, point, _ in
            let number = try loadScalar(scalar, numbers)
            defer { BN_clear(number) }
            try check(EC_POINT_mul(group, point, number, nil, nil, numbers), "computing the public key")
            return try uncompressed(point, numbers)
        }
    }

    /// The x coordinate of d·Q (SEC 1 §3.3.1; P-256's cofactor is 1), for Q given in SEC 1 (33 or 65 bytes) and
    /// checked here, and d already checked to lie in 1…n−1.
    func sharedSecret(scalar: [UInt8], point encoded: [UInt8]) throws -> [UInt8] {
        try withScratch { numbers, peer, result in
            try decode(encoded, into: peer, numbers)
            let number = try loadScalar(scalar, numbers)
            defer { BN_clear(number) }
            try check(EC_POINT_mul(group, result, nil, peer, number, numbers), "ECDH")
            guard let x = BN_CTX_get(numbers) else { throw libraryFailure("allocating the ECDH x coordinate") }
            defer { BN_clear(x) }
            try check(EC_POINT_get_affine_coordinates(group, result, x, nil, numbers), "ECDH x coordinate")
            var secret = [UInt8](repeating: 0, count: P256.scalarByteCount)
            let written = secret.withUnsafeMutableBufferPointer { BN_bn2binpad(x, $0.baseAddress, 32) }
            guard written == 32 else { throw libraryFailure("ECDH x coordinate") }
            return secret
        }
    }

    /// A fresh scalar in 1…n−1 from OpenSSL's private random generator (candidates outside the range are drawn
    /// again, FIPS 186-4 B.4.2) and its public point.
    func generate() throws -> (scalar: [UInt8], point: [UInt8]) {
        var scalar = [UInt8](repeating: 0, count: P256.scalarByteCount)
        repeat {
            let drawn = scalar.withUnsafeMutableBufferPointer { RAND_priv_bytes($0.baseAddress, 32) }
            guard drawn == 1 else { throw libraryFailure("drawing a P-256 private scalar") }
        } while !P256.isValidScalar(scalar)
        return (scalar, try publicPoint(forScalar: scalar))
    }
}

/// The `EVP_PKEY`s of the P-256 keys that sign or verify, each with its operation context initialised once.
///
/// Importing a key into OpenSSL and initialising a signing or verifying context (which looks the ECDSA
/// implementation up in the provider store) cost about as much as the signature itself; the keys that sign or verify
/// again and again are few (a Smart Tap collector, a store's reader identity, a processor's or token issuer's key,
/// the issuers of mdoc and COSE signatures). Bounded: when one side is full it starts again empty, so a stream of
/// one-off keys cannot grow it. Private keys are keyed by their public point, never by their scalar.
final class P256KeyCache: Sendable {
    static let shared = P256KeyCache(capacity: 64)

    private let capacity: Int
    private let verifiers = Mutex<[[UInt8]: PreparedKey]>([:])
    private let signers = Mutex<[[UInt8]: PreparedKey]>([:])

    init(capacity: Int) { self.capacity = capacity }

    /// The verifying key of a validated uncompressed point.
    func verifier(for point: [UInt8]) throws -> PreparedKey {
        if let key = verifiers.withLock({ $0[point] }) { return key }
        let key = try PreparedKey(publicPoint: point, privateScalar: nil)
        insert(key, at: point, into: verifiers)
        return key
    }

    /// The signing key of `key`.
    func signer(for key: P256.PrivateKey) throws -> PreparedKey {
        let point = key.publicKey.x963Representation
        if let prepared = signers.withLock({ $0[point] }), prepared.holds(key.rawRepresentation) { return prepared }
        let prepared = try PreparedKey(publicPoint: point, privateScalar: key.rawRepresentation)
        insert(prepared, at: point, into: signers)
        return prepared
    }

    private func insert(_ key: PreparedKey, at point: [UInt8], into side: borrowing Mutex<[[UInt8]: PreparedKey]>) {
        side.withLock {
            if $0.count >= capacity { $0.removeAll(keepingCapacity: true) }
            $0[point] = key
        }
    }
}

/// One key's `EVP_PKEY` and an `EVP_PKEY_CTX` initialised on it for signing (a key pair) or verifying (a public key).
/// Each operation runs on a duplicate of that context, so operations with one key run in parallel.
final class PreparedKey: Sendable {
    private let key: OwnedKey
    /// The initialised context; only duplicated, under the lock, never used itself.
    private let template: Mutex<ContextBox>
    /// SHA-256 of the scalar, for the check that a cached key pair is the caller's (never the scalar itself).
    private let scalarDigest: [UInt8]?

    init(publicPoint: [UInt8], privateScalar: [UInt8]?) throws {
        key = try makeECKey(curve: .p256, publicPoint: publicPoint, privateScalar: privateScalar)
        scalarDigest = try privateScalar.map { try SHA256.hash($0) }
        guard let context = EVP_PKEY_CTX_new_from_pkey(nil, key.pointer, nil) else {
            throw libraryFailure("creating an ECDSA context")
        }
        let box = ContextBox(context)
        if privateScalar == nil {
            try check(EVP_PKEY_verify_init(context), "initialising ECDSA verification")
        } else {
            try check(EVP_PKEY_sign_init(context), "initialising ECDSA signing")
        }
        template = Mutex(box)
    }

    /// Whether this key pair's scalar is `scalar`.
    func holds(_ scalar: [UInt8]) -> Bool {
        guard let scalarDigest, let digest = try? SHA256.hash(scalar) else { return false }
        return constantTimeEquals(digest, scalarDigest)
    }

    private func context() throws -> ContextBox {
        let copy = template.withLock { EVP_PKEY_CTX_dup($0.pointer) }
        guard let copy else { throw libraryFailure("duplicating an ECDSA context") }
        return ContextBox(copy)
    }

    /// The DER ECDSA signature of a 32-byte digest, with a random nonce.
    func sign(digest: [UInt8]) throws -> [UInt8] {
        let context = try context()
        var der = [UInt8](repeating: 0, count: 80)
        var length = der.count
        let result = digest.withUnsafeBufferPointer { input in
            der.withUnsafeMutableBufferPointer {
                EVP_PKEY_sign(context.pointer, $0.baseAddress, &length, input.baseAddress, input.count)
            }
        }
        try check(result, "ECDSA signing")
        return Array(der[..<length])
    }

    /// Whether `der` is a valid signature of a 32-byte digest; `false` for anything that does not verify.
    func verify(der: [UInt8], digest: [UInt8]) -> Bool {
        guard let context = try? context() else {
            _ = drainOpenSSLErrors()
            return false
        }
        let result = der.withNonNullPointer { signature, signatureCount in
            digest.withUnsafeBufferPointer {
                EVP_PKEY_verify(context.pointer, signature, signatureCount, $0.baseAddress, $0.count)
            }
        }
        if result != 1 { _ = drainOpenSSLErrors() }
        return result == 1
    }
}

/// Owns one `EVP_PKEY_CTX`. Not `Sendable` on its own: it lives inside a ``PreparedKey``'s `Mutex`, or within one
/// call.
final class ContextBox {
    let pointer: OpaquePointer
    init(_ pointer: OpaquePointer) { self.pointer = pointer }
    deinit { EVP_PKEY_CTX_free(pointer) }
}
