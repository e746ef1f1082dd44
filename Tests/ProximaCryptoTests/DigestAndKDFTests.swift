import ProximaCore
import ProximaCrypto
import ProximaTestSupport
import Testing

@Suite struct DigestTests {
    /// FIPS 180-4 examples (NIST CSRC "Examples with Intermediate Values"): the message "abc".
    @Test(arguments: [
        (DigestAlgorithm.sha256, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"),
        (
            .sha384,
            "cb00753f45a35e8bb5a03d699ac65007272c32ab0eded1631a8b605a43ff5bed8086072ba1e7cc2358baeca134c825a7"
        ),
        (
            .sha512,
            "ddaf35a193617abacc417349ae20413112e6fa4e89a97ea20a9eeee64b55d39a"
                + "2192992a274fc1a836ba3c23a3feebbd454d4423643ce80e2a9ac94fa54ca49f"
        ),
    ])
    func abc(algorithm: DigestAlgorithm, expected: String) throws {
        let digest = try algorithm.hash(Array("abc".utf8))
        #expect(digest == bytes(expected))
        #expect(digest.count == algorithm.byteCount)
    }

    @Test func namedHashesMatchTheAlgorithms() throws {
        let message = Array("The quick brown fox".utf8)
        #expect(try SHA256.hash(message) == DigestAlgorithm.sha256.hash(message))
        #expect(try SHA384.hash(message) == DigestAlgorithm.sha384.hash(message))
        #expect(try SHA512.hash(message) == DigestAlgorithm.sha512.hash(message))
    }

    @Test func sha256OfEmptyInput() throws {
        #expect(try SHA256.hash([]) == bytes("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"))
    }
}

@Suite struct HMACTests {
    /// RFC 4231 §4.2 (test case 1) and §4.3 (test case 2), HMAC-SHA-256.
    @Test(arguments: [
        (
            [UInt8](repeating: 0x0B, count: 20), "Hi There",
            "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"
        ),
        (
            Array("Jefe".utf8), "what do ya want for nothing?",
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        ),
    ])
    func rfc4231(key: [UInt8], data: String, expected: String) throws {
        let mac = try HMAC.authenticationCode(for: Array(data.utf8), key: key)
        #expect(mac == bytes(expected))
        #expect(try HMAC.isValidAuthenticationCode(mac, for: Array(data.utf8), key: key))
        var altered = mac
        altered[31] ^= 1
        #expect(try !HMAC.isValidAuthenticationCode(altered, for: Array(data.utf8), key: key))
        #expect(try !HMAC.isValidAuthenticationCode(Array(mac.prefix(16)), for: Array(data.utf8), key: key))
    }

    /// An empty key is legal in RFC 2104; value from Python's `hmac`.
    @Test func emptyKey() throws {
        let mac = try HMAC.authenticationCode(for: Array("abc".utf8), key: [])
        #expect(mac == bytes("fd7adb152c05ef80dccf50a1fa4c05d5a3ec6da95575fc312ae7c5d091836351"))
    }
}

@Suite struct HKDFTests {
    /// RFC 5869 Appendix A.1 (test case 1): HKDF-SHA-256.
    @Test func rfc5869TestCase1() throws {
        let ikm = [UInt8](repeating: 0x0B, count: 22)
        let salt = bytes("000102030405060708090a0b0c")
        let info = bytes("f0f1f2f3f4f5f6f7f8f9")
        let prk = try HKDF.extract(salt: salt, inputKeyMaterial: ikm)
        #expect(prk == bytes("077709362c2e32df0ddc3f0dc47bba6390b6c73bb50f9c3122ec844ad7c2b3e5"))
        let okm = try HKDF.expand(pseudoRandomKey: prk, info: info, outputByteCount: 42)
        #expect(
            okm == bytes("3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf34007208d5b887185865")
        )
        #expect(try HKDF.deriveKey(inputKeyMaterial: ikm, salt: salt, info: info, outputByteCount: 42) == okm)
    }

    /// RFC 5869 Appendix A.3 (test case 3): empty salt and info; the salt defaults to HashLen zeros.
    @Test func rfc5869TestCase3EmptySaltAndInfo() throws {
        let ikm = [UInt8](repeating: 0x0B, count: 22)
        let prk = try HKDF.extract(salt: [], inputKeyMaterial: ikm)
        #expect(prk == bytes("19ef24a32c717b167f33a91d6f648bdf96596776afdb6377ac434c1c293ccb04"))
        #expect(try HKDF.extract(salt: [UInt8](repeating: 0, count: 32), inputKeyMaterial: ikm) == prk)
        let okm = try HKDF.expand(pseudoRandomKey: prk, info: [], outputByteCount: 42)
        #expect(
            okm == bytes("8da4e775a563c18f715f802a063c5a31b8a11f5c5ee1879ec3454e5f3c738d2d9d201395faa4b61a96c8")
        )
    }

    /// Empty input keying material is legal; value from Python `cryptography`.
    @Test func emptyInputKeyMaterial() throws {
        let okm = try HKDF.deriveKey(
            inputKeyMaterial: [],
            salt: Array("salt".utf8),
            info: Array("info".utf8),
            outputByteCount: 32
        )
        #expect(okm == bytes("7aac7b8120501c2c8e1ee50e6cde135361e99ceb9d8d406ac528b9e9175614c0"))
    }

    @Test(arguments: [0, -1, 255 * 32 + 1])
    func expandRefusesLengthsOutOfRange(length: Int) throws {
        let prk = [UInt8](repeating: 1, count: 32)
        #expect(throws: ProximaError(.invalidArgument)) {
            try HKDF.expand(pseudoRandomKey: prk, info: [], outputByteCount: length)
        }
    }

    @Test func expandAllowsTheLongestOutput() throws {
        let okm = try HKDF.expand(pseudoRandomKey: [UInt8](repeating: 1, count: 32), info: [], outputByteCount: 8160)
        #expect(okm.count == 8160)
    }
}

@Suite struct X963KDFTests {
    /// ANSI X9.63 KDF, SHA-256, first CAVS vector (ansx963_2001.rsp, `[SHA-256] [shared secret length = 192]
    /// [SharedInfo length = 0] [key data length = 128]`, COUNT = 0).
    @Test func cavsVector() throws {
        let key = try X963KDF.deriveKey(
            sharedSecret: bytes("96c05619d56c328ab95fe84b18264b08725b85e33fd34f08"),
            sharedInfo: [],
            outputByteCount: 16
        )
        #expect(key == bytes("443024c3dae66b95e6f5670601558f71"))
    }

    /// SEC 1 §3.6.1 by hand: K = SHA-256(Z || 00000001 || info) || SHA-256(Z || 00000002 || info), truncated.
    @Test func matchesTheDefinition() throws {
        let z = [UInt8](repeating: 0x42, count: 32)
        let info = Array("Apple VAS".utf8)
        let expected = try SHA256.hash(z + [0, 0, 0, 1] + info) + SHA256.hash(z + [0, 0, 0, 2] + info)
        let key = try X963KDF.deriveKey(sharedSecret: z, sharedInfo: info, outputByteCount: 48)
        #expect(key == Array(expected.prefix(48)))
    }

    @Test func refusesEmptySecretAndBadLengths() {
        #expect(throws: ProximaError(.invalidArgument)) {
            try X963KDF.deriveKey(sharedSecret: [], sharedInfo: [], outputByteCount: 16)
        }
        #expect(throws: ProximaError(.invalidArgument)) {
            try X963KDF.deriveKey(sharedSecret: [1], sharedInfo: [], outputByteCount: 0)
        }
    }
}

@Suite struct SecureRandomTests {
    @Test func givesTheRequestedCountAndDiffers() throws {
        let a = try SecureRandom.bytes(count: 32)
        let b = try SecureRandom.bytes(count: 32)
        #expect(a.count == 32)
        #expect(a != b)
        #expect(try SecureRandom.bytes(count: 0).isEmpty)
        #expect(throws: ProximaError(.invalidArgument)) { try SecureRandom.bytes(count: -1) }
    }
}
