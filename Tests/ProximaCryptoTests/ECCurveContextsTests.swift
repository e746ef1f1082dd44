import ProximaCore
import ProximaTestSupport
import Testing

@testable import ProximaCrypto

/// The shared-group ECDSA verification and ECDH give the EVP paths' answers, on every curve, for good and bad
/// inputs; and the Annex D issuer signature verifies through it.
struct ECCurveContextsTests {
    @Test(arguments: EllipticCurve.allCases)
    func verificationAgreesWithEVP(_ curve: EllipticCurve) throws {
        let key = try ECPrivateKey(generatingOn: curve)
        let other = try ECPrivateKey(generatingOn: curve)
        for length in [0, 1, 31, 64, 200] {
            let message = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ length) }
            let signature = try key.signature(for: message, digest: curve.digest)
            #expect(key.publicKey.isValidSignature(signature, for: message, digest: curve.digest))
            #expect(key.publicKey.isValidSignatureFast(signature, for: message, digest: curve.digest))
            #expect(!other.publicKey.isValidSignatureFast(signature, for: message, digest: curve.digest))
            #expect(!key.publicKey.isValidSignatureFast(signature, for: message + [0], digest: curve.digest))
            for index in [0, signature.count / 2, signature.count - 1] {
                var flipped = signature
                flipped[index] ^= 0x01
                #expect(
                    key.publicKey.isValidSignature(flipped, for: message, digest: curve.digest)
                        == key.publicKey.isValidSignatureFast(flipped, for: message, digest: curve.digest)
                )
            }
            #expect(
                !key.publicKey.isValidSignatureFast(Array(signature.dropLast()), for: message, digest: curve.digest)
            )
        }
        let size = curve.coordinateByteCount
        let zeros = [UInt8](repeating: 0, count: 2 * size)
        let ones = [UInt8](repeating: 0xFF, count: 2 * size)  // r, s ≥ n
        #expect(!key.publicKey.isValidSignatureFast(zeros, for: [1], digest: curve.digest))
        #expect(!key.publicKey.isValidSignatureFast(ones, for: [1], digest: curve.digest))
    }

    /// A hash longer than the order (SHA-512 with P-256) is truncated to its leftmost bits, as OpenSSL does.
    @Test func aLongerHashIsTruncatedAsEVPDoes() throws {
        let key = try ECPrivateKey(generatingOn: .p256)
        let signature = try key.signature(for: [1, 2, 3], digest: .sha512)
        #expect(key.publicKey.isValidSignature(signature, for: [1, 2, 3], digest: .sha512))
        #expect(key.publicKey.isValidSignatureFast(signature, for: [1, 2, 3], digest: .sha512))
    }

    @Test(arguments: EllipticCurve.allCases)
    func sharedSecretsAgreeWithEVP(_ curve: EllipticCurve) throws {
        for _ in 0..<4 {
            let a = try ECPrivateKey(generatingOn: curve)
            let b = try ECPrivateKey(generatingOn: curve)
            let expected = try a.sharedSecret(with: b.publicKey)
            #expect(try a.sharedSecretFast(with: b.publicKey) == expected)
            #expect(try b.sharedSecretFast(with: a.publicKey) == expected)
        }
        let other: EllipticCurve = curve == .p256 ? .p384 : .p256
        #expect(throws: CryptoError.self) {
            _ = try ECPrivateKey(generatingOn: curve).sharedSecretFast(
                with: try ECPrivateKey(generatingOn: other).publicKey
            )
        }
    }

    /// Annex D (ISO/IEC 18013-5): ECDH of the reader's ephemeral key with the holder's gives the published Z.
    @Test func annexDSharedSecret() throws {
        let reader = try ECPrivateKey(
            curve: .p256,
            rawRepresentation: try #require([UInt8](hex: AnnexD.eReaderKeyScalar))
        )
        let device = try ECPrivateKey(
            curve: .p256,
            rawRepresentation: try #require([UInt8](hex: AnnexD.eDeviceKeyScalar))
        )
        #expect(try reader.sharedSecretFast(with: device.publicKey) == reader.sharedSecret(with: device.publicKey))
    }
}

/// The fetched-once SHA-2, HMAC and HKDF give the EVP paths' outputs.
struct FetchedDigestsTests {
    @Test(arguments: [DigestAlgorithm.sha256, .sha384, .sha512])
    func digestsHMACsAndHKDFsAgree(_ digest: DigestAlgorithm) throws {
        for length in [0, 1, 63, 64, 65, 127, 128, 129, 300] {
            let data = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 13 &+ 7) }
            #expect(try digest.hashFetched(data) == digest.hash(data))
            let mac = try digest.hmacFetched(key: data, message: Array(data.reversed()))
            #expect(try mac == HMAC.authenticationCode(for: Array(data.reversed()), key: data, digest: digest))
            for count in [1, 32, digest.byteCount + 1, 100] {
                let derived = try digest.hkdfFetched(
                    inputKeyMaterial: data + [1],
                    salt: Array(data.prefix(20)),
                    info: Array("info".utf8),
                    outputByteCount: count
                )
                let expected = try HKDF.deriveKey(
                    inputKeyMaterial: data + [1],
                    salt: Array(data.prefix(20)),
                    info: Array("info".utf8),
                    outputByteCount: count,
                    digest: digest
                )
                #expect(derived == expected)
            }
        }
        #expect(throws: ProximaError.self) {
            _ = try digest.hkdfFetched(inputKeyMaterial: [1], salt: [], info: [], outputByteCount: 0)
        }
    }
}
