internal import COpenSSL
import ProximaCore
import Synchronization

/// ECDSA verification and ECDH on P-256/384/521 with OpenSSL's group arithmetic directly, on groups kept for the
/// process: what the mDL reader does per read (issuer signature, two ECDH) without OpenSSL 3.0's per-call key
/// import (`EVP_PKEY_fromdata`), algorithm fetches and context set-up, which cost as much as the curve arithmetic.
///
/// Same results as ``ECPublicKey/isValidSignature(_:for:digest:)`` and ``ECPrivateKey/sharedSecret(with:)``
/// (tested against them): ECDSA verification as SEC 1 §4.1.4 (r and s in 1…n−1, e the leftmost bits of the hash,
/// `u1·G + u2·Q` by `EC_POINT_mul`, its x mod n equal to r); ECDH the x coordinate of d·Q (cofactor 1). Inputs
/// here are public except the ECDH scalar, which is loaded with `BN_FLG_CONSTTIME` and cleared after use.
///
/// ``ECPublicKey`` and ``ECPrivateKey`` use them for P-384 and P-521 (and for P-256 with another digest than
/// SHA-256); P-256 otherwise takes ``P256Group`` and ``P256KeyCache``.
enum ECCurveContexts {
    private static let p256 = Mutex<[CurveContext]>([])
    private static let p384 = Mutex<[CurveContext]>([])
    private static let p521 = Mutex<[CurveContext]>([])
    /// Contexts kept per curve; more concurrent users make (and drop) their own.
    private static let keep = 8

    /// Runs `body` with a context of `curve` taken from the pool (or a fresh one) and puts it back.
    static func with<R>(_ curve: EllipticCurve, _ body: (CurveContext) throws -> R) throws -> R {
        let context = try pool(curve) { $0.popLast() } ?? CurveContext(curve)
        defer { pool(curve) { if $0.count < keep { $0.append(context) } } }
        return try body(context)
    }

    private static func pool<R: Sendable>(_ curve: EllipticCurve, _ body: (inout [CurveContext]) -> R) -> R {
        switch curve {
        case .p256: p256.withLock { body(&$0) }
        case .p384: p384.withLock { body(&$0) }
        case .p521: p521.withLock { body(&$0) }
        }
    }
}

/// One curve's group, a `BN_CTX` and scratch numbers. Used by one caller at a time (``ECCurveContexts`` hands
/// each out to one user), never shared while in use.
final class CurveContext: @unchecked Sendable {
    let curve: EllipticCurve
    let group: OpaquePointer
    let numbers: OpaquePointer
    private let order: OpaquePointer
    private let point: OpaquePointer
    private let result: OpaquePointer
    private let r: OpaquePointer
    private let s: OpaquePointer
    private let e: OpaquePointer
    private let w: OpaquePointer
    private let u1: OpaquePointer
    private let u2: OpaquePointer
    private let x: OpaquePointer
    private let scalar: OpaquePointer

    init(_ curve: EllipticCurve) throws {
        guard let group = EC_GROUP_new_by_curve_name(curve.nid) else {
            throw libraryFailure("loading the \(curve) group")
        }
        guard let numbers = BN_CTX_new(), let order = EC_GROUP_get0_order(group), let point = EC_POINT_new(group),
            let result = EC_POINT_new(group), let r = BN_new(), let s = BN_new(), let e = BN_new(),
            let w = BN_new(), let u1 = BN_new(), let u2 = BN_new(), let x = BN_new(), let scalar = BN_secure_new()
        else {
            EC_GROUP_free(group)
            throw libraryFailure("allocating \(curve) numbers")
        }
        BN_set_flags(scalar, BN_FLG_CONSTTIME)
        self.curve = curve
        self.group = group
        self.numbers = numbers
        self.order = order
        self.point = point
        self.result = result
        self.r = r
        self.s = s
        self.e = e
        self.w = w
        self.u1 = u1
        self.u2 = u2
        self.x = x
        self.scalar = scalar
    }

    deinit {
        for number in [r, s, e, w, u1, u2, x] { BN_free(number) }
        BN_clear_free(scalar)
        EC_POINT_clear_free(result)
        EC_POINT_free(point)
        BN_CTX_free(numbers)
        EC_GROUP_free(group)
    }

    /// Loads `encoded` (SEC 1, uncompressed or compressed) into `point`: on the curve, not infinity.
    private func load(_ encoded: [UInt8]) -> Bool {
        let decoded = encoded.withUnsafeBufferPointer {
            EC_POINT_oct2point(group, point, $0.baseAddress, $0.count, numbers)
        }
        guard decoded == 1, EC_POINT_is_at_infinity(group, point) == 0,
            EC_POINT_is_on_curve(group, point, numbers) == 1
        else {
            _ = drainOpenSSLErrors()
            return false
        }
        return true
    }

    private func uncompressed(_ point: OpaquePointer) throws -> [UInt8] {
        let size = 1 + 2 * curve.coordinateByteCount
        var out = [UInt8](repeating: 0, count: size)
        let written = out.withUnsafeMutableBufferPointer {
            EC_POINT_point2oct(group, point, POINT_CONVERSION_UNCOMPRESSED, $0.baseAddress, size, numbers)
        }
        guard written == size else { throw libraryFailure("encoding an EC point") }
        return out
    }

    /// `encoded` (SEC 1) as an uncompressed point, checked on the curve and not at infinity (``ECPublicKey``).
    /// - Throws: ``CryptoError/Code/invalidKey`` otherwise.
    func validatedUncompressedPoint(_ encoded: [UInt8]) throws -> [UInt8] {
        guard load(encoded) else { throw CryptoError(.invalidKey, "\(curve) public key is not a point on the curve") }
        return try uncompressed(point)
    }

    /// d·G for the scalar `bytes`, uncompressed (``ECPrivateKey``); d must lie in 1…n−1.
    /// - Throws: ``CryptoError/Code/invalidKey`` for a scalar out of range.
    func publicPoint(forScalar bytes: [UInt8]) throws -> [UInt8] {
        defer { BN_clear(scalar) }
        guard bytes.withUnsafeBufferPointer({ BN_bin2bn($0.baseAddress, Int32($0.count), scalar) }) != nil else {
            throw libraryFailure("loading the private scalar")
        }
        guard BN_is_zero(scalar) == 0, BN_cmp(scalar, order) < 0 else {
            throw CryptoError(.invalidKey, "\(curve) private scalar is zero or not below the group order")
        }
        try check(EC_POINT_mul(group, result, scalar, nil, nil, numbers), "computing the public key")
        return try uncompressed(result)
    }

    /// Whether `signature` (`r || s`, each the coordinate length) is a valid ECDSA signature by the point
    /// `encoded` over `hash` (the message digest).
    func isValidSignature(_ signature: [UInt8], hash: [UInt8], point encoded: [UInt8]) -> Bool {
        let size = curve.coordinateByteCount
        guard signature.count == 2 * size, !hash.isEmpty, load(encoded) else { return false }
        let loaded = signature.withUnsafeBufferPointer { raw in
            guard let start = raw.baseAddress else { return false }
            return BN_bin2bn(start, Int32(size), r) != nil && BN_bin2bn(start + size, Int32(size), s) != nil
        }
        guard loaded, BN_is_zero(r) == 0, BN_is_zero(s) == 0, BN_cmp(r, order) < 0, BN_cmp(s, order) < 0 else {
            _ = drainOpenSSLErrors()
            return false
        }
        // e: the leftmost bits of the hash, as many as the order has (SEC 1 §4.1.4 step 5).
        let orderBits = BN_num_bits(order)
        guard hash.withUnsafeBufferPointer({ BN_bin2bn($0.baseAddress, Int32($0.count), e) }) != nil else {
            return false
        }
        if hash.count * 8 > Int(orderBits), BN_rshift(e, e, Int32(hash.count * 8) - orderBits) != 1 { return false }
        guard BN_mod_inverse(w, s, order, numbers) != nil, BN_mod_mul(u1, e, w, order, numbers) == 1,
            BN_mod_mul(u2, r, w, order, numbers) == 1,
            EC_POINT_mul(group, result, u1, point, u2, numbers) == 1,
            EC_POINT_is_at_infinity(group, result) == 0,
            EC_POINT_get_affine_coordinates(group, result, x, nil, numbers) == 1,
            BN_nnmod(x, x, order, numbers) == 1
        else {
            _ = drainOpenSSLErrors()
            return false
        }
        return BN_cmp(x, r) == 0
    }

    /// The ECDH shared secret of the scalar `bytes` with the point `encoded`: the x coordinate of d·Q.
    /// - Throws: ``CryptoError/Code/invalidKey`` when the point is not on the curve.
    func sharedSecret(scalar bytes: [UInt8], point encoded: [UInt8]) throws -> [UInt8] {
        defer { BN_clear(scalar) }
        guard load(encoded) else { throw CryptoError(.invalidKey, "the peer's \(curve) point is not on the curve") }
        guard bytes.withUnsafeBufferPointer({ BN_bin2bn($0.baseAddress, Int32($0.count), scalar) }) != nil else {
            throw libraryFailure("loading the private scalar")
        }
        try check(EC_POINT_mul(group, result, nil, point, scalar, numbers), "ECDH")
        try check(EC_POINT_get_affine_coordinates(group, result, x, nil, numbers), "ECDH x coordinate")
        let size = curve.coordinateByteCount
        var secret = [UInt8](repeating: 0, count: size)
        let written = secret.withUnsafeMutableBufferPointer { BN_bn2binpad(x, $0.baseAddress, Int32(size)) }
        guard written == Int32(size) else { throw libraryFailure("ECDH x coordinate") }
        return secret
    }
}
