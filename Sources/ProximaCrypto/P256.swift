internal import COpenSSL
import ProximaCore
import Synchronization

/// The NIST P-256 curve (secp256r1, prime256v1; FIPS 186-4, SEC 2 §2.4.2): keys, ECDH and ECDSA with SHA-256.
///
/// Keys are values: a private key is its 32-byte scalar and a public key its uncompressed point, both checked
/// when made. Key generation and ECDH are scalar multiplications on the process's one P-256 group (``P256Group``);
/// ECDSA runs on `EVP_PKEY`s kept, with their contexts, in ``P256KeyCache`` for the keys that sign or verify. That is
/// the one fast path every user of the curve shares (see `P256KeyCache.swift`).
public enum P256 {
    /// The byte length of a scalar or of one coordinate.
    public static let scalarByteCount = 32

    /// The group order n, big-endian.
    static let order: [UInt8] = [
        0xFF, 0xFF, 0xFF, 0xFF, 0x00, 0x00, 0x00, 0x00, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF,
        0xBC, 0xE6, 0xFA, 0xAD, 0xA7, 0x17, 0x9E, 0x84, 0xF3, 0xB9, 0xCA, 0xC2, 0xFC, 0x63, 0x25, 0x51,
    ]

    /// Whether a 32-byte big-endian scalar lies in 1…n−1.
    static func isValidScalar(_ scalar: [UInt8]) -> Bool {
        guard scalar.count == scalarByteCount, scalar.contains(where: { $0 != 0 }) else { return false }
        for (a, b) in zip(scalar, order) where a != b { return a < b }
        return false
    }

    /// DER `AlgorithmIdentifier` prefix of a P-256 SubjectPublicKeyInfo (RFC 5480 §2): id-ecPublicKey with the
    /// named curve prime256v1, then the BIT STRING header of a 65-byte uncompressed point.
    static let subjectPublicKeyInfoPrefix: [UInt8] = [
        0x30, 0x59, 0x30, 0x13, 0x06, 0x07, 0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x02, 0x01, 0x06, 0x08, 0x2A,
        0x86, 0x48, 0xCE, 0x3D, 0x03, 0x01, 0x07, 0x03, 0x42, 0x00,
    ]
}

// MARK: - Private key

extension P256 {
    /// A P-256 private key, usable for ECDH and ECDSA.
    ///
    /// Its `description` is redacted and its mirror empty, so the scalar never reaches a log by interpolation or
    /// `dump`. The scalar lives in ordinary Swift memory and is not wiped when the value dies.
    public struct PrivateKey: Sendable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
        /// The scalar d as 32 big-endian bytes.
        public let rawRepresentation: [UInt8]
        /// The matching public key d·G.
        public let publicKey: PublicKey

        /// A fresh key: a scalar from OpenSSL's private random generator, drawn again until it lies in 1…n−1, and its
        /// point d·G on the process's P-256 group (no `EVP_PKEY` is made: an ephemeral key is used for one ECDH).
        /// - Throws: ``CryptoError/Code/libraryFailure`` when OpenSSL cannot draw random bytes.
        public init() throws {
            let (scalar, point) = try P256Group.shared().generate()
            self.init(validatedScalar: scalar, publicKey: PublicKey(validatedX963: point))
        }

        /// A key from a scalar and its public key, both already checked (P256Group made them, or an ``ECPrivateKey``
        /// on P-256 holds them).
        init(validatedScalar: [UInt8], publicKey: PublicKey) {
            rawRepresentation = validatedScalar
            self.publicKey = publicKey
        }

        /// The key with scalar `rawRepresentation`.
        ///
        /// - Parameter rawRepresentation: 32 big-endian bytes, a value in 1…n−1.
        /// - Throws: ``CryptoError/Code/invalidKey`` for another length, zero, or a value not below the order n.
        public init(rawRepresentation: [UInt8]) throws {
            guard rawRepresentation.count == P256.scalarByteCount else {
                throw CryptoError(
                    .invalidKey,
                    "P-256 private key of \(rawRepresentation.count) bytes; expected a 32-byte scalar"
                )
            }
            guard P256.isValidScalar(rawRepresentation) else {
                throw CryptoError(.invalidKey, "P-256 private scalar is zero or not below the group order")
            }
            self.rawRepresentation = rawRepresentation
            self.publicKey = PublicKey(validatedX963: try P256Group.shared().publicPoint(forScalar: rawRepresentation))
        }

        /// A key from PEM: PKCS#8 (`BEGIN PRIVATE KEY`) or SEC 1 (`BEGIN EC PRIVATE KEY`), unencrypted.
        ///
        /// The public key is recomputed from the scalar; a public key stored in the PEM is not trusted.
        /// - Throws: ``CryptoError/Code/invalidKey`` when the text holds no readable unencrypted private key, or one
        ///   that is not an EC key on P-256.
        public init(pemRepresentation: String) throws {
            let key = try OwnedKey.privateKeyPEM(pemRepresentation)
            try requireP256(key, "PEM private key")
            try self.init(rawRepresentation: try privateScalar(of: key))
        }

        /// The key as PKCS#8 PEM (`-----BEGIN PRIVATE KEY-----`, RFC 5208 / RFC 5915), unencrypted.
        /// - Throws: ``CryptoError/Code/libraryFailure`` only if OpenSSL fails.
        public func pemRepresentation() throws -> String {
            let key = try makeKey(publicPoint: publicKey.x963Representation, privateScalar: rawRepresentation)
            var pem = try readingMemoryBIO("writing PKCS#8 PEM") {
                PEM_write_bio_PrivateKey($0, key.pointer, nil, nil, 0, nil, nil)
            }
            defer { OPENSSL_cleanse(&pem, pem.count) }
            return String(decoding: pem, as: UTF8.self)
        }

        /// The ECDH shared secret with `publicKey` (SEC 1 §3.3.1): the x-coordinate of d·Q, 32 bytes, not hashed.
        /// - Throws: ``CryptoError/Code/libraryFailure`` only if OpenSSL fails.
        public func sharedSecret(with publicKey: PublicKey) throws -> [UInt8] {
            try P256Group.shared().sharedSecret(scalar: rawRepresentation, point: publicKey.x963Representation)
        }

        /// The ECDH shared secret with the point `encoded` as a peer sent it (SEC 1: compressed `02|03 ‖ x`, 33 bytes,
        /// or uncompressed `04 ‖ x ‖ y`, 65 bytes), checked here: the same value as ``sharedSecret(with:)`` without
        /// building a ``PublicKey`` first (Apple VAS and Smart Tap send compressed points).
        /// - Throws: ``CryptoError/Code/invalidKey`` when the bytes are no point of P-256 (or the point at
        ///   infinity); ``CryptoError/Code/libraryFailure`` if OpenSSL fails.
        public func sharedSecret(withPoint encoded: [UInt8]) throws -> [UInt8] {
            guard encoded.count == 33 || encoded.count == 65 else {
                throw CryptoError(.invalidKey, "P-256 point of \(encoded.count) bytes; expected 33 or 65")
            }
            return try P256Group.shared().sharedSecret(scalar: rawRepresentation, point: encoded)
        }

        /// An ECDSA signature (FIPS 186-4 §6) over SHA-256 of `message`, with a random nonce.
        ///
        /// The key's OpenSSL object and signing context are made on its first signature and kept in
        /// ``P256KeyCache`` (keys that sign are long-lived: a collector's, a reader's identity, a token issuer's).
        /// - Throws: ``CryptoError/Code/libraryFailure`` only if OpenSSL fails.
        public func signature(for message: [UInt8]) throws -> ECDSASignature {
            let der = try P256KeyCache.shared.signer(for: self).sign(digest: try SHA256.hash(message))
            return try ECDSASignature(derRepresentation: der)
        }

        public var description: String { "P256.PrivateKey(redacted)" }
        public var debugDescription: String { description }
        public var customMirror: Mirror { Mirror(self, children: [], displayStyle: .struct) }
    }
}

// MARK: - Public key

extension P256 {
    /// A P-256 public key: a point on the curve other than the point at infinity, checked when made.
    public struct PublicKey: Hashable, Sendable, CustomStringConvertible {
        /// The uncompressed SEC 1 encoding `04 || X || Y`, 65 bytes (ANSI X9.63).
        public let x963Representation: [UInt8]

        init(validatedX963: [UInt8]) { x963Representation = validatedX963 }

        /// A key from its uncompressed SEC 1 encoding `04 || X || Y`.
        /// - Throws: ``CryptoError/Code/invalidKey`` for another length or prefix, coordinates not below p, or a
        ///   point not on the curve.
        public init(x963Representation: [UInt8]) throws {
            guard x963Representation.count == 65, x963Representation.first == 0x04 else {
                throw CryptoError(
                    .invalidKey,
                    "P-256 public key of \(x963Representation.count) bytes"
                        + " starting \(x963Representation.prefix(1).hexString); expected 65 bytes 04||X||Y"
                )
            }
            self.x963Representation = try P256Group.shared().validatedUncompressedPoint(x963Representation)
        }

        /// A key from its compressed SEC 1 encoding `02|03 || X`.
        /// - Throws: ``CryptoError/Code/invalidKey`` for another length or prefix, or an X with no point on the
        ///   curve.
        public init(compressedRepresentation: [UInt8]) throws {
            guard compressedRepresentation.count == 33,
                compressedRepresentation.first == 0x02 || compressedRepresentation.first == 0x03
            else {
                throw CryptoError(
                    .invalidKey,
                    "P-256 compressed public key of \(compressedRepresentation.count) bytes"
                        + " starting \(compressedRepresentation.prefix(1).hexString); expected 33 bytes 02|03||X"
                )
            }
            x963Representation = try P256Group.shared().validatedUncompressedPoint(compressedRepresentation)
        }

        /// A key from a DER SubjectPublicKeyInfo (RFC 5280 §4.1.2.7, RFC 5480).
        /// - Throws: ``CryptoError/Code/invalidKey`` when the bytes are not exactly one SPKI of a P-256 key with a
        ///   valid point.
        public init(derRepresentation: [UInt8]) throws {
            let key = try OwnedKey.subjectPublicKeyInfo(derRepresentation)
            try self.init(evpKey: key, "DER public key")
        }

        /// A key from PEM SubjectPublicKeyInfo (`-----BEGIN PUBLIC KEY-----`).
        /// - Throws: ``CryptoError/Code/invalidKey`` when the text holds no public key, or one that is not P-256.
        public init(pemRepresentation: String) throws {
            let key = try OwnedKey.publicKeyPEM(pemRepresentation)
            try self.init(evpKey: key, "PEM public key")
        }

        fileprivate init(evpKey key: OwnedKey, _ what: String) throws {
            try requireP256(key, what)
            x963Representation = try P256Group.shared().validatedUncompressedPoint(try publicPoint(of: key, what))
        }

        /// The compressed SEC 1 encoding `02|03 || X`, 33 bytes.
        public var compressedRepresentation: [UInt8] {
            let yIsOdd = (x963Representation.last ?? 0) & 1 == 1
            return [yIsOdd ? 0x03 : 0x02] + x963Representation[1...32]
        }

        /// The DER SubjectPublicKeyInfo with the named curve prime256v1 (RFC 5480), 91 bytes.
        public var derRepresentation: [UInt8] { P256.subjectPublicKeyInfoPrefix + x963Representation }

        /// PEM SubjectPublicKeyInfo (`-----BEGIN PUBLIC KEY-----`).
        public var pemRepresentation: String { pemArmor(derRepresentation, label: "PUBLIC KEY") }

        /// Whether `signature` is a valid ECDSA signature over SHA-256 of `message` under this key.
        ///
        /// Returns `false`, never throws, for any signature that does not verify, including r or s outside 1…n−1.
        public func isValidSignature(_ signature: ECDSASignature, for message: [UInt8]) -> Bool {
            isValidSignature(der: signature.derRepresentation, for: message)
        }

        /// The same check on a DER signature already encoded (EC.swift's P-256 keys).
        func isValidSignature(der: [UInt8], for message: [UInt8]) -> Bool {
            guard let verifier = try? P256KeyCache.shared.verifier(for: x963Representation),
                let digest = try? SHA256.hash(message)
            else {
                _ = drainOpenSSLErrors()
                return false
            }
            return verifier.verify(der: der, digest: digest)
        }

        /// The compressed point in hex: public, and short enough to tell keys apart in a log.
        public var description: String { "P256.PublicKey(\(compressedRepresentation.hexString))" }
    }
}

// MARK: - ECDSA signature

extension P256 {
    /// An ECDSA signature (r, s) over P-256.
    public struct ECDSASignature: Hashable, Sendable {
        /// `r || s`, each 32 big-endian bytes: the form JWS (RFC 7518 §3.4) and COSE (RFC 9053 §2.1) use.
        public let rawRepresentation: [UInt8]

        /// A signature from `r || s`.
        /// - Throws: `ProximaError.malformedData` unless the input is 64 bytes.
        public init(rawRepresentation: [UInt8]) throws {
            guard rawRepresentation.count == 2 * P256.scalarByteCount else {
                throw ProximaError(
                    .malformedData,
                    "raw ECDSA P-256 signature of \(rawRepresentation.count) bytes; expected 64 (r||s)"
                )
            }
            self.rawRepresentation = rawRepresentation
        }

        /// A signature from DER `SEQUENCE { INTEGER r, INTEGER s }` (SEC 1 §C.8, X.509 and TLS).
        /// - Throws: `ProximaError.malformedData` unless the input is exactly one minimal DER encoding with
        ///   non-negative r and s of at most 32 bytes each.
        public init(derRepresentation: [UInt8]) throws {
            guard let raw = derSignatureToRaw(derRepresentation, size: P256.scalarByteCount) else {
                throw ProximaError(
                    .malformedData,
                    "not a DER ECDSA signature with r and s of at most 32 bytes each"
                )
            }
            self.rawRepresentation = raw
            // d2i accepts some non-minimal encodings and trailing bytes; re-encoding shows them.
            guard derRepresentation == self.derRepresentation else {
                throw ProximaError(.malformedData, "DER ECDSA signature is not in minimal DER or has trailing bytes")
            }
        }

        /// The DER encoding `SEQUENCE { INTEGER r, INTEGER s }`, at most 72 bytes.
        public var derRepresentation: [UInt8] {
            func integer(_ bytes: ArraySlice<UInt8>) -> [UInt8] {
                var value = Array(bytes.drop { $0 == 0 })
                if value.isEmpty { value = [0] }
                if value[0] & 0x80 != 0 { value.insert(0, at: 0) }
                return [0x02, UInt8(value.count)] + value
            }
            let body = integer(rawRepresentation[0..<32]) + integer(rawRepresentation[32..<64])
            return [0x30, UInt8(body.count)] + body
        }
    }
}

// MARK: - OpenSSL plumbing

/// The public point of an EC key as OpenSSL encodes it.
private func publicPoint(of key: OwnedKey, _ what: String) throws -> [UInt8] {
    var point = [UInt8](repeating: 0, count: 133)
    var length = 0
    let capacity = point.count
    let result = point.withUnsafeMutableBufferPointer {
        EVP_PKEY_get_octet_string_param(key.pointer, "pub", $0.baseAddress, capacity, &length)
    }
    guard result == 1 else {
        throw CryptoError(.invalidKey, "\(what) has no public point (\(drainOpenSSLErrors()))")
    }
    return Array(point[..<length])
}

/// An `EVP_PKEY` for one operation, from a validated point and optionally its validated scalar.
func makeKey(publicPoint: [UInt8], privateScalar: [UInt8]?) throws -> OwnedKey {
    try makeECKey(curve: .p256, publicPoint: publicPoint, privateScalar: privateScalar)
}

/// Throws ``CryptoError/Code/invalidKey`` unless `key` is an EC key on P-256 given by its curve name.
///
/// OpenSSL recognises explicit parameters equal to P-256 as prime256v1, but RFC 5480 §2.1.1 allows only the named
/// form, and explicit parameters are how curve-substitution attacks travel, so the encoding is checked too.
private func requireP256(_ key: OwnedKey, _ what: String) throws {
    guard EVP_PKEY_is_a(key.pointer, "EC") == 1 else {
        throw CryptoError(.invalidKey, "\(what) is not an EC key")
    }
    let curve = utf8Parameter(key, "group")
    guard curve == "prime256v1" else {
        throw CryptoError(.invalidKey, "\(what) is on curve \(curve ?? "(unnamed)"), not P-256 (prime256v1)")
    }
    let encoding = utf8Parameter(key, "encoding")
    guard encoding == nil || encoding == "named_curve" else {
        throw CryptoError(.invalidKey, "\(what) spells out explicit curve parameters; RFC 5480 requires the curve name")
    }
}

/// A UTF-8 string parameter of a key, or `nil` when it has none.
private func utf8Parameter(_ key: OwnedKey, _ name: String) -> String? {
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

/// The private scalar of an EC key, 32 big-endian bytes.
private func privateScalar(of key: OwnedKey) throws -> [UInt8] {
    var number: OpaquePointer? = nil
    guard EVP_PKEY_get_bn_param(key.pointer, "priv", &number) == 1, let number else {
        throw CryptoError(.invalidKey, "EC key has no private scalar (\(drainOpenSSLErrors()))")
    }
    defer { BN_clear_free(number) }
    var scalar = [UInt8](repeating: 0, count: P256.scalarByteCount)
    let written = scalar.withUnsafeMutableBufferPointer { BN_bn2binpad(number, $0.baseAddress, 32) }
    guard written == 32 else {
        _ = drainOpenSSLErrors()
        throw CryptoError(.invalidKey, "EC private scalar is longer than 32 bytes")
    }
    return scalar
}

/// PEM armour (RFC 7468): the label lines around base64 in lines of 64 characters.
func pemArmor(_ der: [UInt8], label: String) -> String {
    let text = Array(Base64.encode(der))
    var lines: [String] = ["-----BEGIN \(label)-----"]
    var start = 0
    while start < text.count {
        let end = min(start + 64, text.count)
        lines.append(String(text[start..<end]))
        start = end
    }
    lines.append("-----END \(label)-----")
    return lines.joined(separator: "\n") + "\n"
}
