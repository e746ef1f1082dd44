import ProximaCore
import ProximaCrypto
import ProximaTestSupport
import Testing

/// NIST CAVS ECC CDH primitive test vectors (KAS_ECC_CDH_PrimitiveTest.txt), P-256, COUNT = 0.
private enum CDHVector {
    static let peerX = "700c48f77f56584c5cc632ca65640db91b6bacce3a4df6b42ce7cc838833d287"
    static let peerY = "db71e509e3fd9b060ddb20ba5c51dcc5948d46fbf640dfe0441782cab85fa4ac"
    static let privateScalar = "7d7dc5f71eb29ddaf80d6214632eeae03d9058af1fb6d22ed80badb62bc1a534"
    static let publicX = "ead218590119e8876b29146ff89ca61770c4edbbf97d38ce385ed281d8a6b230"
    static let publicY = "28af61281fd35e2fa7002523acc85a429cb06ee6648325389f59edfce1405141"
    static let sharedSecret = "46fc62106420ff012e54a434fbdd2d25ccc5852060561e68040dd7778997bd7b"
}

/// P-256 parameters (SEC 2 §2.4.2) used to build hostile inputs.
private enum Curve {
    static let p = "ffffffff00000001000000000000000000000000ffffffffffffffffffffffff"
    static let n = "ffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632551"
    static let gx = "6b17d1f2e12c4247f8bce6e563a440f277037d812deb33a0f4a13945d898c296"
    static let gy = "4fe342e2fe1a7f9b8ee7eb4a7c0f9e162bce33576b315ececbb6406837bf51f5"
}

@Suite struct P256KeyTests {
    @Test func privateScalarGivesThePublicKeyAndSharedSecret() throws {
        let key = try P256.PrivateKey(rawRepresentation: bytes(CDHVector.privateScalar))
        #expect(key.publicKey.x963Representation == bytes("04" + CDHVector.publicX + CDHVector.publicY))
        let peer = try P256.PublicKey(x963Representation: bytes("04" + CDHVector.peerX + CDHVector.peerY))
        #expect(try key.sharedSecret(with: peer) == bytes(CDHVector.sharedSecret))
    }

    @Test func generatedKeysAgree() throws {
        let alice = try P256.PrivateKey()
        let bob = try P256.PrivateKey()
        #expect(alice.rawRepresentation != bob.rawRepresentation)
        let secret = try alice.sharedSecret(with: bob.publicKey)
        #expect(secret.count == 32)
        #expect(try bob.sharedSecret(with: alice.publicKey) == secret)
    }

    @Test func publicKeyEncodingsRoundTrip() throws {
        let key = try P256.PrivateKey().publicKey
        let compressed = key.compressedRepresentation
        #expect(compressed.count == 33)
        #expect(compressed[0] == 0x02 + (key.x963Representation[64] & 1))
        #expect(Array(compressed[1...]) == Array(key.x963Representation[1...32]))
        #expect(try P256.PublicKey(compressedRepresentation: compressed) == key)
        #expect(key.derRepresentation.count == 91)
        #expect(try P256.PublicKey(derRepresentation: key.derRepresentation) == key)
        #expect(key.pemRepresentation.hasPrefix("-----BEGIN PUBLIC KEY-----\n"))
        #expect(try P256.PublicKey(pemRepresentation: key.pemRepresentation) == key)
    }

    /// A validated uncompressed point is kept as given (not re-encoded); a coordinate ≥ p never passes, and a hybrid
    /// encoding (06/07), if OpenSSL takes it, comes back uncompressed.
    @Test func uncompressedPointsAreCheckedAndKeptAsGiven() throws {
        let g = bytes("04" + Curve.gx + Curve.gy)
        #expect(try P256.PublicKey(x963Representation: g).x963Representation == g)
        #expect(try ECPublicKey(curve: .p256, x963Representation: g).x963Representation == g)
        #expect(throws: CryptoError.self) { try P256.PublicKey(x963Representation: bytes("04" + Curve.p + Curve.gy)) }
        #expect(throws: CryptoError.self) { try P256.PublicKey(x963Representation: bytes("04" + Curve.gx + Curve.p)) }
        if let hybrid = try? P256.PublicKey(x963Representation: bytes("07" + Curve.gx + Curve.gy)) {
            #expect(hybrid.x963Representation == g)
        }
    }

    /// The generator G in both encodings: 03 because Gy is odd.
    @Test func compressedGenerator() throws {
        let g = try P256.PublicKey(x963Representation: bytes("04" + Curve.gx + Curve.gy))
        #expect(g.compressedRepresentation == bytes("03" + Curve.gx))
        #expect(try P256.PublicKey(compressedRepresentation: bytes("03" + Curve.gx)) == g)
        #expect(try P256.PublicKey(compressedRepresentation: bytes("02" + Curve.gx)) != g)
    }

    /// ProximaCrypto decompresses points itself (a square root on a cached Montgomery context): both parities of y,
    /// on many keys, give back the uncompressed point OpenSSL computed, and ECDH on either form agrees.
    @Test func decompressionGivesBackTheKeysPoint() throws {
        var odd = 0
        for _ in 0..<64 {
            let key = try P256.PrivateKey()
            let compressed = key.publicKey.compressedRepresentation
            if compressed[0] == 0x03 { odd += 1 }
            #expect(try P256.PublicKey(compressedRepresentation: compressed) == key.publicKey)
            let peer = try P256.PrivateKey()
            #expect(
                try peer.sharedSecret(withPoint: compressed)
                    == peer.sharedSecret(withPoint: key.publicKey.x963Representation)
            )
        }
        #expect(odd > 0 && odd < 64)
    }

    @Test func privateKeyPEMRoundTrips() throws {
        let key = try P256.PrivateKey()
        let pem = try key.pemRepresentation()
        #expect(pem.hasPrefix("-----BEGIN PRIVATE KEY-----\n"))
        let reloaded = try P256.PrivateKey(pemRepresentation: pem)
        #expect(reloaded.rawRepresentation == key.rawRepresentation)
        #expect(reloaded.publicKey == key.publicKey)
    }

    /// `openssl ecparam -genkey` output: an EC PARAMETERS block, then a SEC 1 EC PRIVATE KEY.
    @Test func sec1PEMWithParametersBlock() throws {
        let pem = """
            -----BEGIN EC PARAMETERS-----
            BggqhkjOPQMBBw==
            -----END EC PARAMETERS-----
            -----BEGIN EC PRIVATE KEY-----
            MHcCAQEEIBuKIusuxg9PpEUX21zG8au3ygt6/J75rZX5kmuNkGi/oAoGCCqGSM49
            AwEHoUQDQgAECEA/BTSCIo4DbrQDnYXOJTax+6ltLa9Q2An8pYpJ5x8bDtfQFO9P
            rTVhulUT7lSYvFSXV3YrJJMMPIeJXdOMbA==
            -----END EC PRIVATE KEY-----
            """
        let key = try P256.PrivateKey(pemRepresentation: pem)
        #expect(key.rawRepresentation == bytes("1b8a22eb2ec60f4fa44517db5cc6f1abb7ca0b7afc9ef9ad95f9926b8d9068bf"))
        #expect(key.publicKey.x963Representation.prefix(9) == bytes("0408403f053482228e")[...])
    }

    /// The sandbox processor's test key pair in `Config/keys` loads and is a pair.
    @Test func configTestKeysArePaired() throws {
        let privatePEM = String(
            decoding: try PackageFiles.contents(of: "Config/keys/psp-test-private.pem"),
            as: UTF8.self
        )
        let publicPEM = String(
            decoding: try PackageFiles.contents(of: "Config/keys/psp-test-public.pem"),
            as: UTF8.self
        )
        let privateKey = try P256.PrivateKey(pemRepresentation: privatePEM)
        let publicKey = try P256.PublicKey(pemRepresentation: publicPEM)
        #expect(privateKey.publicKey == publicKey)
        let message = Array("sandbox".utf8)
        #expect(publicKey.isValidSignature(try privateKey.signature(for: message), for: message))
    }

    @Test func privateKeyDescriptionIsRedacted() throws {
        let key = try P256.PrivateKey(rawRepresentation: bytes(CDHVector.privateScalar))
        #expect("\(key)" == "P256.PrivateKey(redacted)")
        #expect(String(reflecting: key) == "P256.PrivateKey(redacted)")
        var dumped = ""
        dump(key, to: &dumped)
        #expect(!dumped.lowercased().contains("7d7dc5f7"))
        #expect(!dumped.contains("125"))  // the first scalar byte as a decimal array element
        #expect("\(key.publicKey)".hasPrefix("P256.PublicKey(03"))
    }
}

@Suite struct P256HostileInputTests {
    private static let invalidKey = CryptoError(.invalidKey)

    @Test(arguments: [0, 1, 31, 33, 64])
    func privateScalarOfWrongLength(length: Int) {
        #expect(throws: Self.invalidKey) {
            try P256.PrivateKey(rawRepresentation: [UInt8](repeating: 1, count: length))
        }
    }

    /// Zero, n and values above n are not scalars; n − 1 is the largest valid one.
    @Test func privateScalarOutOfRange() throws {
        #expect(throws: Self.invalidKey) { try P256.PrivateKey(rawRepresentation: [UInt8](repeating: 0, count: 32)) }
        #expect(throws: Self.invalidKey) { try P256.PrivateKey(rawRepresentation: bytes(Curve.n)) }
        #expect(throws: Self.invalidKey) { try P256.PrivateKey(rawRepresentation: [UInt8](repeating: 0xFF, count: 32)) }
        var nMinusOne = bytes(Curve.n)
        nMinusOne[31] -= 1
        let key = try P256.PrivateKey(rawRepresentation: nMinusOne)
        // (n − 1)·G = −G: same x as G, y = p − Gy.
        #expect(Array(key.publicKey.x963Representation[1...32]) == bytes(Curve.gx))
        let one = [UInt8](repeating: 0, count: 31) + [1]
        #expect(
            try P256.PrivateKey(rawRepresentation: one).publicKey.x963Representation
                == bytes("04" + Curve.gx + Curve.gy)
        )
    }

    struct PointCase: Sendable, CustomTestStringConvertible {
        let name: String
        let encoded: String
        var testDescription: String { name }
    }

    static let uncompressedCases: [PointCase] = [
        PointCase(name: "empty", encoded: ""),
        PointCase(name: "point at infinity (single 00)", encoded: "00"),
        PointCase(name: "64 bytes without prefix", encoded: Curve.gx + Curve.gy),
        PointCase(name: "66 bytes", encoded: "04" + Curve.gx + Curve.gy + "00"),
        PointCase(name: "compressed given as uncompressed", encoded: "03" + Curve.gx),
        PointCase(name: "hybrid prefix 07", encoded: "07" + Curve.gx + Curve.gy),
        PointCase(name: "zero point 04||0||0", encoded: "04" + String(repeating: "00", count: 64)),
        PointCase(name: "y off by one", encoded: "04" + Curve.gx + Curve.gy.dropLast(2) + "f6"),
        PointCase(name: "x = p", encoded: "04" + Curve.p + Curve.gy),
        PointCase(name: "all ones", encoded: "04" + String(repeating: "ff", count: 64)),
    ]

    @Test(arguments: uncompressedCases)
    func uncompressedPointIsRefused(point: PointCase) {
        #expect(throws: Self.invalidKey) { try P256.PublicKey(x963Representation: bytes(point.encoded)) }
    }

    static let compressedCases: [PointCase] = [
        PointCase(name: "32 bytes", encoded: Curve.gx),
        PointCase(name: "prefix 04", encoded: "04" + Curve.gx),
        PointCase(name: "x = p", encoded: "02" + Curve.p),
        // x³ − 3x + b is not a square mod p for x = 1, so no point has that x.
        PointCase(name: "x with no point", encoded: "02" + String(repeating: "00", count: 31) + "01"),
        PointCase(name: "34 bytes", encoded: "02" + Curve.gx + "00"),
    ]

    @Test(arguments: compressedCases)
    func compressedPointIsRefused(point: PointCase) {
        #expect(throws: Self.invalidKey) { try P256.PublicKey(compressedRepresentation: bytes(point.encoded)) }
    }

    @Test func derWithTrailingBytesOrTruncatedIsRefused() throws {
        let der = try P256.PrivateKey().publicKey.derRepresentation
        #expect(throws: Self.invalidKey) { try P256.PublicKey(derRepresentation: der + [0]) }
        #expect(throws: Self.invalidKey) { try P256.PublicKey(derRepresentation: Array(der.dropLast())) }
        #expect(throws: Self.invalidKey) { try P256.PublicKey(derRepresentation: []) }
        var offCurve = der
        offCurve[90] ^= 1
        #expect(throws: Self.invalidKey) { try P256.PublicKey(derRepresentation: offCurve) }
    }

    @Test func pemOfAnotherKindIsRefused() {
        let p384 = """
            -----BEGIN PRIVATE KEY-----
            MIG2AgEAMBAGByqGSM49AgEGBSuBBAAiBIGeMIGbAgEBBDDwBqe2+Tsl3R9NqPax
            2cAUlmZ7xcdVBfjYRh1i0Q+NS/JYY40r7/z+5DxkpQtI5fKhZANiAAQyiAt97kag
            LDDJHfJXf5+T3LvN7DpJnK+W8y2D+8p+IYf2/L5mIwSNQIycIQPw4gC/7PGq1hZs
            2C8nLMxn+w0ztg4arB7vQvpQoTi60uprOvGGtSkPVVbPfhhwPW/NHdU=
            -----END PRIVATE KEY-----
            """
        #expect(throws: Self.invalidKey) { try P256.PrivateKey(pemRepresentation: p384) }
        let ed25519 = """
            -----BEGIN PUBLIC KEY-----
            MCowBQYDK2VwAyEAunnJqzlMOjCD9A0wiMroVbCPQzCOW2hTSigAXtrVBdY=
            -----END PUBLIC KEY-----
            """
        #expect(throws: Self.invalidKey) { try P256.PublicKey(pemRepresentation: ed25519) }
        #expect(throws: Self.invalidKey) { try P256.PublicKey(pemRepresentation: "not a key") }
        #expect(throws: Self.invalidKey) { try P256.PrivateKey(pemRepresentation: "") }
        #expect(throws: Self.invalidKey) { try P256.PrivateKey(pemRepresentation: ed25519) }
    }

    /// An encrypted key is refused at once; OpenSSL must not prompt on the terminal for a passphrase.
    @Test func encryptedPEMIsRefusedWithoutPrompting() {
        let encrypted = """
            -----BEGIN ENCRYPTED PRIVATE KEY-----
            MIHsMFcGCSqGSIb3DQEFDTBKMCkGCSqGSIb3DQEFDDAcBAix5055wtdRVwICCAAw
            DAYIKoZIhvcNAgkFADAdBglghkgBZQMEAQIEEKa1kD4xByPRzq/D7Yc6bT4EgZBi
            r7Dpw2Vlv7oxNc1fqkynd+nDMp1T/6Fc3Z8lrEyjAsPsiwwSiwH7dpZIpZ3Bk+2o
            J9I+mH0Mag1PO8/CPlMx4oVu6hM9rrO+/+eMxhJ04sd5QvCle+dDOz4Bw0/H31FF
            kH3q0JuDJWwBf9sBAdmX8T8rU4eCuFaDSVvom6lr1XsACkRf5Fqdwpkb935hgcU=
            -----END ENCRYPTED PRIVATE KEY-----
            """
        #expect(throws: Self.invalidKey) { try P256.PrivateKey(pemRepresentation: encrypted) }
    }

    /// RFC 5480 requires a named curve; a P-256 key spelled with explicit parameters is refused.
    @Test func explicitCurveParametersAreRefused() {
        let explicit = """
            -----BEGIN PUBLIC KEY-----
            MIIBSzCCAQMGByqGSM49AgEwgfcCAQEwLAYHKoZIzj0BAQIhAP////8AAAABAAAA
            AAAAAAAAAAAA////////////////MFsEIP////8AAAABAAAAAAAAAAAAAAAA////
            ///////////8BCBaxjXYqjqT57PrvVV2mIa8ZR0GsMxTsPY7zjw+J9JgSwMVAMSd
            NgiG5wSTamZ44ROdJreBn36QBEEEaxfR8uEsQkf4vOblY6RA8ncDfYEt6zOg9KE5
            RdiYwpZP40Li/hp/m47n60p8D54WK84zV2sxXs7LtkBoN79R9QIhAP////8AAAAA
            //////////+85vqtpxeehPO5ysL8YyVRAgEBA0IABJmhmBWhu+MUdkezV72YSeMu
            H4wmWYRZQKW30Rop02PT9E+vtsAWW06T18kM/eK2Qvm2NWzMO3THjCW1rLo8u2E=
            -----END PUBLIC KEY-----
            """
        #expect(throws: Self.invalidKey) { try P256.PublicKey(pemRepresentation: explicit) }
    }
}

@Suite struct ECDSATests {
    @Test func signThenVerify() throws {
        let key = try P256.PrivateKey()
        let message = Array("pay 12.34 EUR".utf8)
        let signature = try key.signature(for: message)
        #expect(signature.rawRepresentation.count == 64)
        #expect(key.publicKey.isValidSignature(signature, for: message))
        #expect(!key.publicKey.isValidSignature(signature, for: Array("pay 99.99 EUR".utf8)))
        #expect(!(try P256.PrivateKey()).publicKey.isValidSignature(signature, for: message))
        var altered = signature.rawRepresentation
        altered[40] ^= 0x01
        #expect(!key.publicKey.isValidSignature(try P256.ECDSASignature(rawRepresentation: altered), for: message))
        // Random nonces: two signatures of one message differ and both verify.
        let second = try key.signature(for: message)
        #expect(second != signature)
        #expect(key.publicKey.isValidSignature(second, for: message))
        #expect(key.publicKey.isValidSignature(try key.signature(for: []), for: []))
    }

    @Test func rawAndDERConvert() throws {
        let raw = bytes(
            "00000000000000000000000000000000000000000000000000000000000000ff"
                + "8000000000000000000000000000000000000000000000000000000000000001"
        )
        let signature = try P256.ECDSASignature(rawRepresentation: raw)
        let der = signature.derRepresentation
        #expect(
            der == bytes("302702020" + "0ff022100" + "8000000000000000000000000000000000000000000000000000000000000001")
        )
        #expect(try P256.ECDSASignature(derRepresentation: der) == signature)
    }

    @Test func signatureFromDERRoundTrips() throws {
        let signature = try P256.PrivateKey().signature(for: [1, 2, 3])
        #expect(try P256.ECDSASignature(derRepresentation: signature.derRepresentation) == signature)
    }

    @Test(arguments: [
        "",  // empty
        "3000",  // no integers
        "30060201010201",  // truncated
        "3006020101020101ff",  // trailing byte
        "300702020001020101",  // non-minimal r (leading 00 before a low byte)
        "30060201ff020101",  // negative r
        "3026022100" + String(repeating: "11", count: 33) + "020101",  // r of 33 significant bytes
        "3100020101020101",  // SET instead of SEQUENCE
    ])
    func malformedDERIsRefused(der: String) {
        #expect(throws: ProximaError(.malformedData)) { try P256.ECDSASignature(derRepresentation: bytes(der)) }
    }

    @Test(arguments: [0, 63, 65, 72])
    func rawOfWrongLengthIsRefused(length: Int) {
        #expect(throws: ProximaError(.malformedData)) {
            try P256.ECDSASignature(rawRepresentation: [UInt8](repeating: 1, count: length))
        }
    }

    /// r or s of zero or of n is outside 1…n−1: it parses but never verifies.
    @Test func outOfRangeComponentsDoNotVerify() throws {
        let key = try P256.PrivateKey()
        let message = Array("m".utf8)
        let good = try key.signature(for: message).rawRepresentation
        let zero = [UInt8](repeating: 0, count: 32)
        for raw in [zero + good[32...], Array(good[..<32]) + zero, bytes(Curve.n) + good[32...], zero + zero] {
            #expect(!key.publicKey.isValidSignature(try P256.ECDSASignature(rawRepresentation: raw), for: message))
        }
    }
}
