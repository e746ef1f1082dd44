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
            #expect(key.publicKey.isValidSignatureThroughEVP(signature, for: message, digest: curve.digest))
            #expect(key.publicKey.isValidSignature(signature, for: message, digest: curve.digest))
            #expect(!other.publicKey.isValidSignature(signature, for: message, digest: curve.digest))
            #expect(!key.publicKey.isValidSignature(signature, for: message + [0], digest: curve.digest))
            for index in [0, signature.count / 2, signature.count - 1] {
                var flipped = signature
                flipped[index] ^= 0x01
                #expect(
                    key.publicKey.isValidSignatureThroughEVP(flipped, for: message, digest: curve.digest)
                        == key.publicKey.isValidSignature(flipped, for: message, digest: curve.digest)
                )
            }
            #expect(
                !key.publicKey.isValidSignature(Array(signature.dropLast()), for: message, digest: curve.digest)
            )
        }
        let size = curve.coordinateByteCount
        let zeros = [UInt8](repeating: 0, count: 2 * size)
        let ones = [UInt8](repeating: 0xFF, count: 2 * size)  // r, s ≥ n
        #expect(!key.publicKey.isValidSignature(zeros, for: [1], digest: curve.digest))
        #expect(!key.publicKey.isValidSignature(ones, for: [1], digest: curve.digest))
    }

    /// A hash longer than the order (SHA-512 with P-256) is truncated to its leftmost bits, as OpenSSL does.
    @Test func aLongerHashIsTruncatedAsEVPDoes() throws {
        let key = try ECPrivateKey(generatingOn: .p256)
        let signature = try key.signature(for: [1, 2, 3], digest: .sha512)
        #expect(key.publicKey.isValidSignatureThroughEVP(signature, for: [1, 2, 3], digest: .sha512))
        #expect(key.publicKey.isValidSignature(signature, for: [1, 2, 3], digest: .sha512))
    }

    @Test(arguments: EllipticCurve.allCases)
    func sharedSecretsAgreeWithEVP(_ curve: EllipticCurve) throws {
        for _ in 0..<4 {
            let a = try ECPrivateKey(generatingOn: curve)
            let b = try ECPrivateKey(generatingOn: curve)
            let expected = try a.sharedSecretThroughEVP(with: b.publicKey)
            #expect(try a.sharedSecret(with: b.publicKey) == expected)
            #expect(try b.sharedSecret(with: a.publicKey) == expected)
        }
        let other: EllipticCurve = curve == .p256 ? .p384 : .p256
        #expect(throws: CryptoError.self) {
            _ = try ECPrivateKey(generatingOn: curve).sharedSecret(
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
        #expect(
            try reader.sharedSecret(with: device.publicKey) == reader.sharedSecretThroughEVP(with: device.publicKey)
        )
    }
}
