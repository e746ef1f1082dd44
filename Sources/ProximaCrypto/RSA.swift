internal import COpenSSL
import ProximaCore

/// Raw RSA (no padding) as EMV offline data authentication uses it: the certificates and signatures of EMV Book 2
/// are "digital signatures giving message recovery" (ISO/IEC 9796-2 scheme 1, Book 2 Annex A2.1), so the verifier
/// applies the public key to the whole signature and checks the recovered bytes itself.
///
/// Both operations are one `BN_mod_exp` in OpenSSL's bignum library; the private one uses the constant-time
/// Montgomery ladder. Keys are plain big-endian byte strings: the modulus and exponents as EMV stores them.
public enum RSA {
    /// An RSA public key: modulus and public exponent (EMV: 3 or 65537), big-endian, leading zeros stripped.
    public struct PublicKey: Hashable, Sendable {
        public let modulus: [UInt8]
        public let exponent: [UInt8]

        /// - Throws: `ProximaError.invalidArgument` when the modulus is shorter than 64 or longer than 512 bytes
        ///   (EMV Book 2 Annex B caps it at 248 bytes; 512 leaves room without allowing absurd work), is even, or
        ///   the exponent is empty, zero or longer than the modulus.
        public init(modulus: [UInt8], exponent: [UInt8]) throws {
            let modulus = Array(modulus.drop { $0 == 0 })
            let exponent = Array(exponent.drop { $0 == 0 })
            guard (64...512).contains(modulus.count), let last = modulus.last, last & 1 == 1 else {
                throw ProximaError(
                    .invalidArgument,
                    "RSA modulus of \(modulus.count) bytes is not an odd number of 64 to 512 bytes"
                )
            }
            guard !exponent.isEmpty, exponent.count <= modulus.count else {
                throw ProximaError(.invalidArgument, "RSA exponent of \(exponent.count) bytes is zero or too long")
            }
            self.modulus = modulus
            self.exponent = exponent
        }

        /// The modulus length in bytes: the length of every signature and certificate this key verifies.
        public var byteCount: Int { modulus.count }

        /// `signature ^ exponent mod modulus`, left-padded to ``byteCount`` bytes: the data a signature
        /// recovers (EMV Book 2 Annex A2.1.3 step 1).
        ///
        /// - Throws: `ProximaError.malformedData` when `signature` is not exactly ``byteCount`` bytes or is not
        ///   below the modulus; ``CryptoError/Code/libraryFailure`` when OpenSSL fails.
        public func recover(_ signature: [UInt8]) throws -> [UInt8] {
            guard signature.count == modulus.count else {
                throw ProximaError(
                    .malformedData,
                    "signature of \(signature.count) bytes does not match the \(modulus.count)-byte key"
                )
            }
            guard signature.lexicographicallyPrecedes(modulus) else {
                throw ProximaError(.malformedData, "signature is not below the key's modulus")
            }
            return try RSA.modularExponentiation(signature, exponent, modulus, constantTime: false)
        }
    }

    /// An RSA private key as a modulus and private exponent: what a TEST card or TEST certification authority
    /// signs with. Not for production keys (no CRT, no blinding beyond the constant-time ladder).
    public struct PrivateKey: Hashable, Sendable {
        public let publicKey: PublicKey
        private let privateExponent: [UInt8]

        /// - Throws: `ProximaError.invalidArgument` as ``PublicKey/init(modulus:exponent:)``, or when the private
        ///   exponent is empty or longer than the modulus.
        public init(modulus: [UInt8], publicExponent: [UInt8], privateExponent: [UInt8]) throws {
            publicKey = try PublicKey(modulus: modulus, exponent: publicExponent)
            let exponent = Array(privateExponent.drop { $0 == 0 })
            guard !exponent.isEmpty, exponent.count <= publicKey.modulus.count else {
                throw ProximaError(.invalidArgument, "RSA private exponent is zero or longer than the modulus")
            }
            self.privateExponent = exponent
        }

        /// `message ^ d mod n`, left-padded to the modulus length: a signature with message recovery when
        /// `message` is the formatted data (header `6A` … trailer `BC`).
        ///
        /// - Throws: `ProximaError.invalidArgument` when `message` is not exactly the modulus length or not below
        ///   the modulus; ``CryptoError/Code/libraryFailure`` when OpenSSL fails.
        public func sign(_ message: [UInt8]) throws -> [UInt8] {
            let modulus = publicKey.modulus
            guard message.count == modulus.count, message.lexicographicallyPrecedes(modulus) else {
                throw ProximaError(
                    .invalidArgument,
                    "message of \(message.count) bytes is not a number below the \(modulus.count)-byte modulus"
                )
            }
            return try RSA.modularExponentiation(message, privateExponent, modulus, constantTime: true)
        }
    }

    /// `base ^ exponent mod modulus` as `modulus.count` big-endian bytes.
    static func modularExponentiation(_ base: [UInt8], _ exponent: [UInt8], _ modulus: [UInt8], constantTime: Bool)
        throws -> [UInt8]
    {
        guard let context = BN_CTX_new() else { throw libraryFailure("allocating a BN_CTX") }
        defer { BN_CTX_free(context) }
        func number(_ bytes: [UInt8]) throws -> OpaquePointer {
            let value = bytes.withNonNullPointer { pointer, count in BN_bin2bn(pointer, Int32(count), nil) }
            guard let value else { throw libraryFailure("BN_bin2bn") }
            return value
        }
        let b = try number(base)
        defer { BN_clear_free(b) }
        let e = try number(exponent)
        defer { BN_clear_free(e) }
        let m = try number(modulus)
        defer { BN_free(m) }
        guard let result = BN_new() else { throw libraryFailure("BN_new") }
        defer { BN_clear_free(result) }
        if constantTime {
            BN_set_flags(e, Int32(BN_FLG_CONSTTIME))
            try check(BN_mod_exp_mont_consttime(result, b, e, m, context, nil), "BN_mod_exp_mont_consttime")
        } else {
            try check(BN_mod_exp(result, b, e, m, context), "BN_mod_exp")
        }
        var out = [UInt8](repeating: 0, count: modulus.count)
        let written = out.withUnsafeMutableBufferPointer { BN_bn2binpad(result, $0.baseAddress, Int32(modulus.count)) }
        guard written == Int32(modulus.count) else { throw libraryFailure("BN_bn2binpad") }
        return out
    }
}

/// SHA-1 (FIPS 180-4), which EMV offline data authentication still uses for every certificate and signature
/// hash (EMV Book 2 Annex B3, Hash Algorithm Indicator `01`). Only for EMV: nothing else in Proxima uses SHA-1.
public enum SHA1 {
    /// The 20-byte digest of `data`.
    /// - Throws: ``CryptoError/Code/libraryFailure`` only if OpenSSL fails.
    public static func hash(_ data: [UInt8]) throws -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: 20)
        var length: UInt32 = 0
        let result = data.withNonNullPointer { pointer, count in
            digest.withUnsafeMutableBufferPointer { out in
                EVP_Digest(pointer, count, out.baseAddress, &length, EVP_sha1(), nil)
            }
        }
        guard result == 1, length == 20 else { throw libraryFailure("EVP_Digest(SHA-1)") }
        return digest
    }
}
