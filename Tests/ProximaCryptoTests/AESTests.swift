import ProximaCore
import ProximaCrypto
import ProximaTestSupport
import Testing

/// A GCM known answer: key, IV, plaintext, AAD, ciphertext, tag (hex).
struct GCMVector: Sendable, CustomTestStringConvertible {
    let name: String
    let key: String
    let iv: String
    let plaintext: String
    let aad: String
    let ciphertext: String
    let tag: String
    var testDescription: String { name }
}

private let gcmKey = "feffe9928665731c6d6a8f9467308308"
private let gcmPlaintext60 =
    "d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a72"
    + "1c3c0c95956809532fcf0e2449a6b525b16aedf5aa0de657ba637b39"
private let gcmAAD = "feedfacedeadbeeffeedfacedeadbeefabaddad2"

/// McGrew & Viega, "The Galois/Counter Mode of Operation (GCM)", revised 2005, Appendix B.
let gcmVectors: [GCMVector] = [
    GCMVector(
        name: "test case 3 (AES-128, 96-bit IV)",
        key: gcmKey,
        iv: "cafebabefacedbaddecaf888",
        plaintext: gcmPlaintext60 + "1aafd255",
        aad: "",
        ciphertext: "42831ec2217774244b7221b784d0d49ce3aa212f2c02a4e035c17e2329aca12e"
            + "21d514b25466931c7d8f6a5aac84aa051ba30b396a0aac973d58e091473f5985",
        tag: "4d5c2af327cd64a62cf35abd2ba6fab4"
    ),
    GCMVector(
        name: "test case 4 (AES-128, AAD)",
        key: gcmKey,
        iv: "cafebabefacedbaddecaf888",
        plaintext: gcmPlaintext60,
        aad: gcmAAD,
        ciphertext: "42831ec2217774244b7221b784d0d49ce3aa212f2c02a4e035c17e2329aca12e"
            + "21d514b25466931c7d8f6a5aac84aa051ba30b396a0aac973d58e091",
        tag: "5bc94fbc3221a5db94fae95ae7121a47"
    ),
    GCMVector(
        name: "test case 6 (AES-128, 60-byte IV)",
        key: gcmKey,
        iv: "9313225df88406e555909c5aff5269aa6a7a9538534f7da1e4c303d2a318a728"
            + "c3c0c95156809539fcf0e2429a6b525416aedbf5a0de6a57a637b39b",
        plaintext: gcmPlaintext60,
        aad: gcmAAD,
        ciphertext: "8ce24998625615b603a033aca13fb894be9112a5c3a211a8ba262a3cca7e2ca7"
            + "01e4a9a4fba43c90ccdcb281d48c7c6fd62875d2aca417034c34aee5",
        tag: "619cc5aefffe0bfa462af43c1699d050"
    ),
    GCMVector(
        name: "test case 16 (AES-256, AAD)",
        key: gcmKey + gcmKey,
        iv: "cafebabefacedbaddecaf888",
        plaintext: gcmPlaintext60,
        aad: gcmAAD,
        ciphertext: "522dc1f099567d07f47f37a32a84427d643a8cdcbfe5c0c97598a2bd2555d1aa"
            + "8cb08e48590dbb3da7b08b1056828838c5f61e6393ba7a0abcc9f662",
        tag: "76fc6ece0f4e1768cddf8853bb2d551b"
    ),
]

@Suite struct AESGCMTests {
    @Test(arguments: gcmVectors)
    func knownAnswer(vector: GCMVector) throws {
        let key = bytes(vector.key)
        let iv = bytes(vector.iv)
        let aad = bytes(vector.aad)
        let sealed = try AES.GCM.sealDetached(bytes(vector.plaintext), key: key, iv: iv, authenticating: aad)
        #expect(sealed.ciphertext == bytes(vector.ciphertext))
        #expect(sealed.tag == bytes(vector.tag))
        let combined = try AES.GCM.seal(bytes(vector.plaintext), key: key, iv: iv, authenticating: aad)
        #expect(combined == bytes(vector.ciphertext + vector.tag))
        #expect(try AES.GCM.open(combined, key: key, iv: iv, authenticating: aad) == bytes(vector.plaintext))
        let detached = try AES.GCM.open(
            ciphertext: sealed.ciphertext,
            tag: sealed.tag,
            key: key,
            iv: iv,
            authenticating: aad
        )
        #expect(detached == bytes(vector.plaintext))
    }

    /// Apple VAS seals with a 16-byte IV; GHASH derives the counter block.
    @Test func sixteenByteIVRoundTrips() throws {
        let key = [UInt8](repeating: 7, count: 32)
        let iv = [UInt8](repeating: 0, count: 16)
        let sealed = try AES.GCM.seal(Array("pass".utf8), key: key, iv: iv)
        #expect(sealed.count == 4 + 16)
        #expect(try AES.GCM.open(sealed, key: key, iv: iv) == Array("pass".utf8))
        // A 12-byte IV of the same leading bytes is a different nonce.
        #expect(try AES.GCM.seal(Array("pass".utf8), key: key, iv: Array(iv.prefix(12))) != sealed)
    }

    @Test func emptyPlaintextGivesATagOnly() throws {
        let key = [UInt8](repeating: 1, count: 16)
        let iv = [UInt8](repeating: 2, count: 12)
        let sealed = try AES.GCM.seal([], key: key, iv: iv, authenticating: Array("header".utf8))
        #expect(sealed.count == 16)
        #expect(try AES.GCM.open(sealed, key: key, iv: iv, authenticating: Array("header".utf8)).isEmpty)
    }

    /// Every single change to key, IV, AAD, ciphertext or tag is refused with `authenticationFailed`.
    @Test func tamperingIsRefused() throws {
        let vector = gcmVectors[1]
        let key = bytes(vector.key)
        let iv = bytes(vector.iv)
        let aad = bytes(vector.aad)
        let sealed = bytes(vector.ciphertext + vector.tag)
        let failure = CryptoError(.authenticationFailed)
        for index in [0, 30, sealed.count - 17, sealed.count - 16, sealed.count - 1] {
            var altered = sealed
            altered[index] ^= 0x01
            #expect(throws: failure) { try AES.GCM.open(altered, key: key, iv: iv, authenticating: aad) }
        }
        var otherKey = key
        otherKey[0] ^= 0x80
        #expect(throws: failure) { try AES.GCM.open(sealed, key: otherKey, iv: iv, authenticating: aad) }
        var otherIV = iv
        otherIV[11] ^= 0x01
        #expect(throws: failure) { try AES.GCM.open(sealed, key: key, iv: otherIV, authenticating: aad) }
        #expect(throws: failure) { try AES.GCM.open(sealed, key: key, iv: iv, authenticating: aad + [0]) }
        #expect(throws: failure) { try AES.GCM.open(sealed, key: key, iv: iv, authenticating: []) }
    }

    @Test(arguments: [0, 1, 15])
    func truncatedInputIsRefused(length: Int) throws {
        let key = [UInt8](repeating: 1, count: 16)
        let iv = [UInt8](repeating: 2, count: 12)
        let sealed = try AES.GCM.seal(Array("hello".utf8), key: key, iv: iv)
        #expect(throws: CryptoError(.authenticationFailed)) {
            try AES.GCM.open(Array(sealed.prefix(length)), key: key, iv: iv)
        }
    }

    @Test func droppingTheLastByteIsRefused() throws {
        let key = [UInt8](repeating: 1, count: 16)
        let iv = [UInt8](repeating: 2, count: 12)
        let sealed = try AES.GCM.seal(Array("hello, world".utf8), key: key, iv: iv)
        #expect(throws: CryptoError(.authenticationFailed)) {
            try AES.GCM.open(Array(sealed.dropLast()), key: key, iv: iv)
        }
        #expect(throws: CryptoError(.authenticationFailed)) {
            try AES.GCM.open(ciphertext: Array(sealed.prefix(12)), tag: Array(sealed.suffix(15)), key: key, iv: iv)
        }
    }

    @Test(arguments: [0, 8, 15, 17, 33])
    func wrongKeyLengthIsAnArgumentError(length: Int) {
        let key = [UInt8](repeating: 1, count: length)
        #expect(throws: ProximaError(.invalidArgument)) {
            try AES.GCM.seal([1], key: key, iv: [UInt8](repeating: 0, count: 12))
        }
        #expect(throws: ProximaError(.invalidArgument)) {
            try AES.GCM.open([UInt8](repeating: 0, count: 17), key: key, iv: [UInt8](repeating: 0, count: 12))
        }
    }

    @Test func emptyIVIsAnArgumentError() {
        #expect(throws: ProximaError(.invalidArgument)) {
            try AES.GCM.seal([1], key: [UInt8](repeating: 1, count: 16), iv: [])
        }
    }
}

@Suite struct AESCTRTests {
    /// NIST SP 800-38A Appendix F.5.1 (CTR-AES128.Encrypt) and F.5.2 (Decrypt).
    @Test func sp800_38A() throws {
        let key = bytes("2b7e151628aed2a6abf7158809cf4f3c")
        let counter = bytes("f0f1f2f3f4f5f6f7f8f9fafbfcfdfeff")
        let plaintext = bytes(
            "6bc1bee22e409f96e93d7e117393172aae2d8a571e03ac9c9eb76fac45af8e51"
                + "30c81c46a35ce411e5fbc1191a0a52eff69f2445df4f9b17ad2b417be66c3710"
        )
        let ciphertext = bytes(
            "874d6191b620e3261bef6864990db6ce9806f66b7970fdff8617187bb9fffdff"
                + "5ae4df3edbd5d35e5b4f09020db03eab1e031dda2fbe03d1792170a0f3009cee"
        )
        #expect(try AES.CTR.encrypt(plaintext, key: key, iv: counter) == ciphertext)
        #expect(try AES.CTR.decrypt(ciphertext, key: key, iv: counter) == plaintext)
        // A partial last block is a prefix of the full keystream.
        #expect(try AES.CTR.encrypt(Array(plaintext.prefix(21)), key: key, iv: counter) == Array(ciphertext.prefix(21)))
    }

    @Test func refusesBadLengths() {
        #expect(throws: ProximaError(.invalidArgument)) {
            try AES.CTR.encrypt([1], key: [UInt8](repeating: 0, count: 16), iv: [UInt8](repeating: 0, count: 12))
        }
        #expect(throws: ProximaError(.invalidArgument)) {
            try AES.CTR.encrypt([1], key: [UInt8](repeating: 0, count: 10), iv: [UInt8](repeating: 0, count: 16))
        }
    }
}
