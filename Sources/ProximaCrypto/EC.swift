internal import COpenSSL
import ProximaCore

/// The NIST prime curves COSE and ISO/IEC 18013-5 use (FIPS 186-4 D.1.2, RFC 9053 §7.1): P-256, P-384, P-521.
///
/// ``P256`` is the tuned single-curve form the payment path uses; these types cover the three curves for ECDSA
/// (COSE ES256/ES384/ES512) and ECDH (mdoc session keys on the device key's curve), with the same checks: a
/// public point is on its curve and not at infinity, a scalar lies in 1…n−1, keys from PEM or DER are of the named
/// curve they claim. Keys on P-256 take P256's fast path (the shared group and ``P256KeyCache``) for every operation.
public enum EllipticCurve: String, Hashable, Sendable, CaseIterable, CustomStringConvertible {
    case p256 = "P-256"
    case p384 = "P-384"
    case p521 = "P-521"

    /// The byte length of a scalar or of one coordinate: 32, 48 or 66.
    public var coordinateByteCount: Int {
        switch self {
        case .p256: 32
        case .p384: 48
        case .p521: 66
        }
    }

    /// The hash ECDSA pairs with the curve in COSE (RFC 9053 §2.1): SHA-256, SHA-384, SHA-512.
    public var digest: DigestAlgorithm {
        switch self {
        case .p256: .sha256
        case .p384: .sha384
        case .p521: .sha512
        }
    }

    /// The COSE `crv` value (RFC 9053 §7.1): 1, 2, 3.
    public var coseIdentifier: Int {
        switch self {
        case .p256: 1
        case .p384: 2
        case .p521: 3
        }
    }

    /// The curve with COSE `crv` value `identifier`, or `nil` (25519 and 448 are not supported).
    public init?(coseIdentifier identifier: Int) {
        guard let curve = Self.allCases.first(where: { $0.coseIdentifier == identifier }) else { return nil }
        self = curve
    }

    public var description: String { rawValue }

    /// OpenSSL's group name, the one `EVP_PKEY_get_utf8_string_param(…, "group", …)` reports.
    var groupName: String {
        switch self {
        case .p256: "prime256v1"
        case .p384: "secp384r1"
        case .p521: "secp521r1"
        }
    }

    var nid: Int32 {
        switch self {
        case .p256: NID_X9_62_prime256v1
        case .p384: NID_secp384r1
        case .p521: NID_secp521r1
        }
    }

    init?(groupName: String) {
        guard let curve = Self.allCases.first(where: { $0.groupName == groupName }) else { return nil }
        self = curve
    }
}

// MARK: - Public key

/// An EC public key on one of the ``EllipticCurve``s: a point on the curve other than infinity, checked when made.
public struct ECPublicKey: Hashable, Sendable, CustomStringConvertible {
    public let curve: EllipticCurve
    /// The uncompressed SEC 1 encoding `04 || X || Y`.
    public let x963Representation: [UInt8]

    /// A key from its uncompressed (`04 || X || Y`) or compressed (`02|03 || X`) SEC 1 encoding.
    /// - Throws: ``CryptoError/Code/invalidKey`` for a wrong length or prefix or a point not on the curve.
    public init(curve: EllipticCurve, x963Representation encoded: [UInt8]) throws {
        let size = curve.coordinateByteCount
        let uncompressed = encoded.count == 1 + 2 * size && encoded.first == 0x04
        let compressed = encoded.count == 1 + size && (encoded.first == 0x02 || encoded.first == 0x03)
        guard uncompressed || compressed else {
            throw CryptoError(
                .invalidKey,
                "\(curve) public key of \(encoded.count) bytes starting \(encoded.prefix(1).hexString)"
            )
        }
        self.curve = curve
        self.x963Representation =
            curve == .p256
            ? try P256Group.shared().validatedUncompressedPoint(encoded)
            : try ECCurveContexts.with(curve) { try $0.validatedUncompressedPoint(encoded) }
    }

    /// A key from its affine coordinates, each exactly the curve's coordinate length (COSE_Key `x`, `y`).
    /// - Throws: ``CryptoError/Code/invalidKey`` as ``init(curve:x963Representation:)``.
    public init(curve: EllipticCurve, x: [UInt8], y: [UInt8]) throws {
        guard x.count == curve.coordinateByteCount, y.count == curve.coordinateByteCount else {
            throw CryptoError(
                .invalidKey,
                "\(curve) coordinates of \(x.count) and \(y.count) bytes; expected \(curve.coordinateByteCount)"
            )
        }
        try self.init(curve: curve, x963Representation: [0x04] + x + y)
    }

    /// The same key as a ``P256/PublicKey``.
    public init(_ key: P256.PublicKey) {
        curve = .p256
        x963Representation = key.x963Representation
    }

    /// A key from a DER SubjectPublicKeyInfo (RFC 5480) on a supported named curve.
    /// - Throws: ``CryptoError/Code/invalidKey`` for anything else.
    public init(derRepresentation der: [UInt8]) throws {
        let key = try OwnedKey.subjectPublicKeyInfo(der)
        try self.init(evpKey: key, "DER public key")
    }

    init(evpKey key: OwnedKey, _ what: String) throws {
        let curve = try namedCurve(of: key, what)
        var point = [UInt8](repeating: 0, count: 160)
        var length = 0
        let capacity = point.count
        let result = point.withUnsafeMutableBufferPointer {
            EVP_PKEY_get_octet_string_param(key.pointer, "pub", $0.baseAddress, capacity, &length)
        }
        guard result == 1 else {
            throw CryptoError(.invalidKey, "\(what) has no public point (\(drainOpenSSLErrors()))")
        }
        try self.init(curve: curve, x963Representation: Array(point[..<length]))
    }

    /// The x coordinate, big-endian, the curve's coordinate length.
    public var x: [UInt8] { Array(x963Representation[1...curve.coordinateByteCount]) }
    /// The y coordinate, big-endian, the curve's coordinate length.
    public var y: [UInt8] { Array(x963Representation[(1 + curve.coordinateByteCount)...]) }

    /// The P-256 form of this key, when it is on P-256.
    public var p256: P256.PublicKey? {
        guard curve == .p256 else { return nil }
        return try? P256.PublicKey(x963Representation: x963Representation)
    }

    /// Whether `signature` (`r || s`, each the coordinate length, as COSE and JWS carry it) is a valid ECDSA
    /// signature over `digest(message)`; `false` for any malformed signature, never a throw.
    public func isValidSignature(_ signature: [UInt8], for message: [UInt8], digest: DigestAlgorithm) -> Bool {
        if curve == .p256, digest == .sha256 {
            guard let der = rawSignatureToDER(signature, size: 32) else { return false }
            return P256.PublicKey(validatedX963: x963Representation).isValidSignature(der: der, for: message)
        }
        // Other curves and digests: the process-wide groups of ``ECCurveContexts``.
        guard let hash = try? digest.hash(message) else { return false }
        let point = x963Representation
        return (try? ECCurveContexts.with(curve) { $0.isValidSignature(signature, hash: hash, point: point) }) ?? false
    }

    /// ``isValidSignature(_:for:digest:)`` through OpenSSL's EVP interface, key imported per call: the reference the
    /// tests hold the group arithmetic of ``ECCurveContexts`` and ``P256`` to.
    package func isValidSignatureThroughEVP(_ signature: [UInt8], for message: [UInt8], digest: DigestAlgorithm) -> Bool
    {
        guard let der = rawSignatureToDER(signature, size: curve.coordinateByteCount),
            let key = try? makeECKey(curve: curve, publicPoint: x963Representation, privateScalar: nil),
            let context = EVP_MD_CTX_new()
        else {
            _ = drainOpenSSLErrors()
            return false
        }
        defer { EVP_MD_CTX_free(context) }
        guard EVP_DigestVerifyInit(context, nil, digest.messageDigest, nil, key.pointer) == 1 else {
            _ = drainOpenSSLErrors()
            return false
        }
        let result = message.withNonNullPointer { pointer, count in
            der.withUnsafeBufferPointer { EVP_DigestVerify(context, $0.baseAddress, $0.count, pointer, count) }
        }
        if result != 1 { _ = drainOpenSSLErrors() }
        return result == 1
    }

    /// The curve and compressed point in hex: public, and short enough to tell keys apart.
    public var description: String {
        let yIsOdd = (x963Representation.last ?? 0) & 1 == 1
        return "ECPublicKey(\(curve), \(([yIsOdd ? 0x03 : 0x02] + x).hexString))"
    }
}

// MARK: - Private key

/// An EC private key on one of the ``EllipticCurve``s, for ECDSA and ECDH.
///
/// Its `description` is redacted and its mirror empty, so the scalar never reaches a log.
public struct ECPrivateKey: Sendable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    public let curve: EllipticCurve
    /// The scalar d, big-endian, the curve's coordinate length.
    public let rawRepresentation: [UInt8]
    public let publicKey: ECPublicKey

    /// A fresh key from OpenSSL's generator.
    /// - Throws: ``CryptoError/Code/libraryFailure`` when OpenSSL cannot generate.
    public init(generatingOn curve: EllipticCurve) throws {
        if curve == .p256 {
            let key = try P256.PrivateKey()
            self.curve = .p256
            rawRepresentation = key.rawRepresentation
            publicKey = ECPublicKey(key.publicKey)
            return
        }
        guard let context = EVP_PKEY_CTX_new_from_name(nil, "EC", nil) else {
            throw libraryFailure("creating an EC key generation context")
        }
        defer { EVP_PKEY_CTX_free(context) }
        try check(EVP_PKEY_keygen_init(context), "initialising EC key generation")
        try check(EVP_PKEY_CTX_set_group_name(context, curve.groupName), "selecting \(curve)")
        var generated: OpaquePointer? = nil
        try check(EVP_PKEY_generate(context, &generated), "generating a \(curve) key")
        guard let generated else { throw libraryFailure("generating a \(curve) key") }
        let key = OwnedKey(generated)
        self.curve = curve
        rawRepresentation = try scalar(of: key, curve: curve)
        publicKey = try ECPublicKey(evpKey: key, "generated \(curve) key")
    }

    /// The key with scalar `rawRepresentation` (the curve's coordinate length, in 1…n−1).
    /// - Throws: ``CryptoError/Code/invalidKey`` for another length or a scalar out of range.
    public init(curve: EllipticCurve, rawRepresentation: [UInt8]) throws {
        guard rawRepresentation.count == curve.coordinateByteCount else {
            throw CryptoError(
                .invalidKey,
                "\(curve) private key of \(rawRepresentation.count) bytes; expected \(curve.coordinateByteCount)"
            )
        }
        if curve == .p256 {
            let key = try P256.PrivateKey(rawRepresentation: rawRepresentation)
            self.curve = .p256
            self.rawRepresentation = key.rawRepresentation
            publicKey = ECPublicKey(key.publicKey)
            return
        }
        self.curve = curve
        self.rawRepresentation = rawRepresentation
        let point = try ECCurveContexts.with(curve) { try $0.publicPoint(forScalar: rawRepresentation) }
        publicKey = try ECPublicKey(curve: curve, x963Representation: point)
    }

    /// The same key as a ``P256/PrivateKey``'s.
    public init(_ key: P256.PrivateKey) {
        curve = .p256
        rawRepresentation = key.rawRepresentation
        publicKey = ECPublicKey(key.publicKey)
    }

    /// A key from unencrypted PKCS#8 or SEC 1 PEM on a supported named curve.
    /// - Throws: ``CryptoError/Code/invalidKey`` when the text holds no such key.
    public init(pemRepresentation: String) throws {
        let key = try OwnedKey.privateKeyPEM(pemRepresentation)
        let curve = try namedCurve(of: key, "PEM private key")
        try self.init(curve: curve, rawRepresentation: try scalar(of: key, curve: curve))
    }

    /// The key as unencrypted PKCS#8 PEM.
    /// - Throws: ``CryptoError/Code/libraryFailure`` only if OpenSSL fails.
    public func pemRepresentation() throws -> String {
        let key = try makeECKey(
            curve: curve,
            publicPoint: publicKey.x963Representation,
            privateScalar: rawRepresentation
        )
        var pem = try readingMemoryBIO("writing PKCS#8 PEM") {
            PEM_write_bio_PrivateKey($0, key.pointer, nil, nil, 0, nil, nil)
        }
        defer { OPENSSL_cleanse(&pem, pem.count) }
        return String(decoding: pem, as: UTF8.self)
    }

    /// An ECDSA signature over `digest(message)` as `r || s`, each the coordinate length (COSE, JWS).
    /// - Throws: ``CryptoError/Code/libraryFailure`` only if OpenSSL fails.
    public func signature(for message: [UInt8], digest: DigestAlgorithm) throws -> [UInt8] {
        if curve == .p256, digest == .sha256, let key = p256 {
            return try key.signature(for: message).rawRepresentation
        }
        let key = try makeECKey(
            curve: curve,
            publicPoint: publicKey.x963Representation,
            privateScalar: rawRepresentation
        )
        guard let context = EVP_MD_CTX_new() else { throw libraryFailure("creating a signing context") }
        defer { EVP_MD_CTX_free(context) }
        try check(EVP_DigestSignInit(context, nil, digest.messageDigest, nil, key.pointer), "initialising ECDSA")
        var der = [UInt8](repeating: 0, count: 160)
        var length = der.count
        let result = message.withNonNullPointer { pointer, count in
            der.withUnsafeMutableBufferPointer { EVP_DigestSign(context, $0.baseAddress, &length, pointer, count) }
        }
        try check(result, "ECDSA signing")
        guard let raw = derSignatureToRaw(Array(der[..<length]), size: curve.coordinateByteCount) else {
            throw CryptoError(.libraryFailure, "OpenSSL produced an unreadable ECDSA signature")
        }
        return raw
    }

    /// The ECDH shared secret with `peer` (SEC 1 §3.3.1): the x-coordinate of d·Q, not hashed.
    /// - Throws: ``CryptoError/Code/invalidKey`` when `peer` is on another curve;
    ///   ``CryptoError/Code/libraryFailure`` if OpenSSL fails.
    public func sharedSecret(with peer: ECPublicKey) throws -> [UInt8] {
        guard peer.curve == curve else {
            throw CryptoError(.invalidKey, "ECDH between a \(curve) key and a \(peer.curve) key")
        }
        if curve == .p256 {
            return try P256Group.shared().sharedSecret(scalar: rawRepresentation, point: peer.x963Representation)
        }
        let scalar = rawRepresentation
        let point = peer.x963Representation
        return try ECCurveContexts.with(curve) { try $0.sharedSecret(scalar: scalar, point: point) }
    }

    /// ``sharedSecret(with:)`` through OpenSSL's EVP interface, both keys imported: the reference the tests hold the
    /// group arithmetic to.
    package func sharedSecretThroughEVP(with peer: ECPublicKey) throws -> [UInt8] {
        guard peer.curve == curve else {
            throw CryptoError(.invalidKey, "ECDH between a \(curve) key and a \(peer.curve) key")
        }
        let own = try makeECKey(
            curve: curve,
            publicPoint: publicKey.x963Representation,
            privateScalar: rawRepresentation
        )
        let other = try makeECKey(curve: curve, publicPoint: peer.x963Representation, privateScalar: nil)
        guard let context = EVP_PKEY_CTX_new_from_pkey(nil, own.pointer, nil) else {
            throw libraryFailure("creating an ECDH context")
        }
        defer { EVP_PKEY_CTX_free(context) }
        try check(EVP_PKEY_derive_init(context), "initialising ECDH")
        // The peer was validated when made, and P-256/384/521 have cofactor 1: no second check (see P256).
        try check(EVP_PKEY_derive_set_peer_ex(context, other.pointer, 0), "setting the ECDH peer key")
        var secret = [UInt8](repeating: 0, count: curve.coordinateByteCount)
        var length = secret.count
        try check(secret.withUnsafeMutableBufferPointer { EVP_PKEY_derive(context, $0.baseAddress, &length) }, "ECDH")
        guard length == curve.coordinateByteCount else {
            throw CryptoError(.libraryFailure, "ECDH gave \(length) bytes")
        }
        return secret
    }

    /// The same key as a ``P256/PrivateKey``, when it is on P-256 (its scalar was checked when made).
    var p256: P256.PrivateKey? {
        guard curve == .p256 else { return nil }
        return P256.PrivateKey(
            validatedScalar: rawRepresentation,
            publicKey: P256.PublicKey(validatedX963: publicKey.x963Representation)
        )
    }

    public var description: String { "ECPrivateKey(\(curve), redacted)" }
    public var debugDescription: String { description }
    public var customMirror: Mirror { Mirror(self, children: [], displayStyle: .struct) }
}

// MARK: - Plumbing

/// `r || s` to DER `SEQUENCE { INTEGER r, INTEGER s }`, or `nil` for a wrong length or r or s of zero.
func rawSignatureToDER(_ raw: [UInt8], size: Int) -> [UInt8]? {
    guard raw.count == 2 * size else { return nil }
    func integer(_ bytes: ArraySlice<UInt8>) -> [UInt8]? {
        var value = Array(bytes.drop { $0 == 0 })
        guard !value.isEmpty else { return nil }
        if value[0] & 0x80 != 0 { value.insert(0, at: 0) }
        return [0x02] + derLength(value.count) + value
    }
    guard let r = integer(raw[0..<size]), let s = integer(raw[size...]) else { return nil }
    let body = r + s
    return [0x30] + derLength(body.count) + body
}

private func derLength(_ count: Int) -> [UInt8] {
    count < 0x80 ? [UInt8(count)] : [0x81, UInt8(count)]
}

/// DER ECDSA signature to `r || s`, or `nil` when it does not parse or r or s is longer than `size`.
func derSignatureToRaw(_ der: [UInt8], size: Int) -> [UInt8]? {
    der.withNonNullPointer { start, count -> [UInt8]? in
        var cursor: UnsafePointer<UInt8>? = start
        guard let signature = d2i_ECDSA_SIG(nil, &cursor, count) else {
            _ = drainOpenSSLErrors()
            return nil
        }
        defer { ECDSA_SIG_free(signature) }
        var raw = [UInt8](repeating: 0, count: 2 * size)
        let width = Int32(size)
        let rOK = raw.withUnsafeMutableBufferPointer {
            BN_bn2binpad(ECDSA_SIG_get0_r(signature), $0.baseAddress, width)
        }
        let sOK = raw.withUnsafeMutableBufferPointer {
            BN_bn2binpad(ECDSA_SIG_get0_s(signature), $0.baseAddress! + size, width)
        }
        guard rOK == width, sOK == width else {
            _ = drainOpenSSLErrors()
            return nil
        }
        return raw
    }
}

/// An `EVP_PKEY` for one operation from a validated point and optionally its scalar.
func makeECKey(curve: EllipticCurve, publicPoint: [UInt8], privateScalar: [UInt8]?) throws -> OwnedKey {
    let parameters = ParameterList()
    parameters.append("group", utf8: curve.groupName)
    parameters.append("pub", octets: publicPoint)
    if let privateScalar { parameters.append("priv", unsignedBigEndian: privateScalar) }
    guard let context = EVP_PKEY_CTX_new_from_name(nil, "EC", nil) else {
        throw libraryFailure("creating an EC key context")
    }
    defer { EVP_PKEY_CTX_free(context) }
    try check(EVP_PKEY_fromdata_init(context), "initialising EC key import")
    var key: OpaquePointer? = nil
    let selection = privateScalar == nil ? COpenSSL_EVP_PKEY_PUBLIC_KEY() : COpenSSL_EVP_PKEY_KEYPAIR()
    let result = parameters.withParameters { EVP_PKEY_fromdata(context, &key, selection, $0) }
    guard result == 1, let key else { throw libraryFailure("importing a \(curve) key") }
    return OwnedKey(key)
}

/// The supported named curve of an EC key; explicit parameters are refused (RFC 5480 §2.1.1).
private func namedCurve(of key: OwnedKey, _ what: String) throws -> EllipticCurve {
    guard EVP_PKEY_is_a(key.pointer, "EC") == 1 else {
        throw CryptoError(.invalidKey, "\(what) is not an EC key")
    }
    func parameter(_ name: String) -> String? {
        var value = [CChar](repeating: 0, count: 64)
        var length = 0
        let capacity = value.count
        let result = value.withUnsafeMutableBufferPointer {
            EVP_PKEY_get_utf8_string_param(key.pointer, name, $0.baseAddress, capacity, &length)
        }
        guard result == 1 else {
            _ = drainOpenSSLErrors()
            return nil
        }
        return String(decoding: value.prefix(length).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
    let group = parameter("group")
    guard let group, let curve = EllipticCurve(groupName: group) else {
        throw CryptoError(.invalidKey, "\(what) is on curve \(group ?? "(unnamed)"), not P-256, P-384 or P-521")
    }
    let encoding = parameter("encoding")
    guard encoding == nil || encoding == "named_curve" else {
        throw CryptoError(.invalidKey, "\(what) spells out explicit curve parameters; RFC 5480 requires the curve name")
    }
    return curve
}

private func scalar(of key: OwnedKey, curve: EllipticCurve) throws -> [UInt8] {
    var number: OpaquePointer? = nil
    guard EVP_PKEY_get_bn_param(key.pointer, "priv", &number) == 1, let number else {
        throw CryptoError(.invalidKey, "EC key has no private scalar (\(drainOpenSSLErrors()))")
    }
    defer { BN_clear_free(number) }
    let size = curve.coordinateByteCount
    var out = [UInt8](repeating: 0, count: size)
    let written = out.withUnsafeMutableBufferPointer { BN_bn2binpad(number, $0.baseAddress, Int32(size)) }
    guard written == Int32(size) else {
        _ = drainOpenSSLErrors()
        throw CryptoError(.invalidKey, "EC private scalar is longer than \(size) bytes")
    }
    return out
}
