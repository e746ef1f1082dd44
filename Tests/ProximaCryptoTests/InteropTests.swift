import ProximaCore
import ProximaCrypto
import ProximaTestSupport
import Testing

// Cross-checks against independent implementations in Python: `cryptography` (OpenSSL- and Rust-backed, but its
// own encoders and parsers) and `pyhpke` (an independent RFC 9180 implementation). Disabled without python3;
// a missing Python package fails the test with the pip command to run.

private let ecdsaFromPython = """
    import json, sys
    from cryptography.hazmat.primitives import hashes, serialization as s
    from cryptography.hazmat.primitives.asymmetric import ec
    key = ec.generate_private_key(ec.SECP256R1())
    message, swift_public = bytes.fromhex(sys.argv[1]), bytes.fromhex(sys.argv[2])
    pub = key.public_key()
    peer = ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), swift_public)
    print(json.dumps({
        "x963": pub.public_bytes(s.Encoding.X962, s.PublicFormat.UncompressedPoint).hex(),
        "compressed": pub.public_bytes(s.Encoding.X962, s.PublicFormat.CompressedPoint).hex(),
        "spkiDER": pub.public_bytes(s.Encoding.DER, s.PublicFormat.SubjectPublicKeyInfo).hex(),
        "spkiPEM": pub.public_bytes(s.Encoding.PEM, s.PublicFormat.SubjectPublicKeyInfo).decode(),
        "pkcs8PEM": key.private_bytes(s.Encoding.PEM, s.PrivateFormat.PKCS8, s.NoEncryption()).decode(),
        "sec1PEM": key.private_bytes(s.Encoding.PEM, s.PrivateFormat.TraditionalOpenSSL, s.NoEncryption()).decode(),
        "scalar": key.private_numbers().private_value.to_bytes(32, "big").hex(),
        "signatureDER": key.sign(message, ec.ECDSA(hashes.SHA256())).hex(),
        "ecdh": key.exchange(ec.ECDH(), peer).hex(),
    }))
    """

private let ecdsaInPython = """
    import json, sys
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives import hashes, serialization as s
    from cryptography.hazmat.primitives.asymmetric import ec, utils
    pub = s.load_pem_public_key(sys.argv[1].encode())
    private = s.load_pem_private_key(sys.argv[2].encode(), password=None)
    message, der, raw = (bytes.fromhex(a) for a in sys.argv[3:6])
    def verifies(signature, msg):
        try:
            pub.verify(signature, msg, ec.ECDSA(hashes.SHA256()))
            return True
        except InvalidSignature:
            return False
    r, s_ = int.from_bytes(raw[:32], "big"), int.from_bytes(raw[32:], "big")
    print(json.dumps({
        "der": verifies(der, message),
        "raw": verifies(utils.encode_dss_signature(r, s_), message),
        "tampered": verifies(der, message + b"!"),
        "decodedRaw": (lambda rs: rs[0].to_bytes(32, "big").hex() + rs[1].to_bytes(32, "big").hex())(
            utils.decode_dss_signature(der)),
        "scalar": private.private_numbers().private_value.to_bytes(32, "big").hex(),
        "curve": private.curve.name,
    }))
    """

@Suite(.enabled(if: Python.isAvailable, "python3 is not on PATH"))
struct ECDSAInteropTests {
    @Test func pythonKeysAndSignaturesLoadAndVerify() throws {
        let ours = try P256.PrivateKey()
        let message = Array("signed by Python".utf8)
        let py = try Python.runJSON(ecdsaFromPython, arguments: [hex(message), hex(ours.publicKey.x963Representation)])

        let key = try P256.PublicKey(x963Representation: py.hexBytes("x963"))
        #expect(try P256.PublicKey(compressedRepresentation: py.hexBytes("compressed")) == key)
        #expect(key.compressedRepresentation == py.hexBytes("compressed"))
        #expect(try P256.PublicKey(derRepresentation: py.hexBytes("spkiDER")) == key)
        #expect(key.derRepresentation == py.hexBytes("spkiDER"))
        #expect(try P256.PublicKey(pemRepresentation: py.string("spkiPEM")) == key)
        #expect(key.pemRepresentation == py.string("spkiPEM"))

        let pkcs8 = try P256.PrivateKey(pemRepresentation: py.string("pkcs8PEM"))
        let sec1 = try P256.PrivateKey(pemRepresentation: py.string("sec1PEM"))
        #expect(pkcs8.rawRepresentation == py.hexBytes("scalar"))
        #expect(sec1.rawRepresentation == py.hexBytes("scalar"))
        #expect(pkcs8.publicKey == key)

        let signature = try P256.ECDSASignature(derRepresentation: py.hexBytes("signatureDER"))
        #expect(signature.derRepresentation == py.hexBytes("signatureDER"))
        #expect(key.isValidSignature(signature, for: message))
        #expect(!key.isValidSignature(signature, for: message + [0]))

        #expect(try ours.sharedSecret(with: key) == py.hexBytes("ecdh"))
        #expect(try pkcs8.sharedSecret(with: ours.publicKey) == py.hexBytes("ecdh"))
    }

    @Test func pythonVerifiesOurSignaturesAndLoadsOurKeys() throws {
        let key = try P256.PrivateKey()
        let message = Array("signed by Proxima".utf8)
        let signature = try key.signature(for: message)
        let py = try Python.runJSON(
            ecdsaInPython,
            arguments: [
                key.publicKey.pemRepresentation, try key.pemRepresentation(), hex(message),
                hex(signature.derRepresentation), hex(signature.rawRepresentation),
            ]
        )
        #expect(py["der"] == .bool(true))
        #expect(py["raw"] == .bool(true))
        #expect(py["tampered"] == .bool(false))
        #expect(py.hexBytes("decodedRaw") == signature.rawRepresentation)
        #expect(py.hexBytes("scalar") == key.rawRepresentation)
        #expect(py.string("curve") == "secp256r1")
    }
}

private let hpkeOpenInPython = """
    import json, sys
    from pyhpke import AEADId, CipherSuite, KDFId, KEMId
    suite = CipherSuite.new(KEMId.DHKEM_P256_HKDF_SHA256, KDFId.HKDF_SHA256, AEADId.AES128_GCM)
    sk, enc, info = (bytes.fromhex(a) for a in sys.argv[1:4])
    messages = json.loads(sys.argv[4])
    ctx = suite.create_recipient_context(enc, suite.kem.deserialize_private_key(sk), info=info)
    opened = [ctx.open(bytes.fromhex(m["ct"]), aad=bytes.fromhex(m["aad"])).hex() for m in messages]
    print(json.dumps({"plaintexts": opened, "export": ctx.export(b"proxima", 48).hex()}))
    """

private let hpkeSealInPython = """
    import json, sys
    from pyhpke import AEADId, CipherSuite, KDFId, KEMId
    suite = CipherSuite.new(KEMId.DHKEM_P256_HKDF_SHA256, KDFId.HKDF_SHA256, AEADId.AES128_GCM)
    pk, info, ikm = (bytes.fromhex(a) for a in sys.argv[1:4])
    enc, ctx = suite.create_sender_context(suite.kem.deserialize_public_key(pk), info=info)
    messages = [{"aad": ("aad-%d" % i).encode().hex(), "pt": ("message %d from pyhpke" % i).encode().hex()}
                for i in range(3)]
    for m in messages:
        m["ct"] = ctx.seal(bytes.fromhex(m["pt"]), aad=bytes.fromhex(m["aad"])).hex()
    derived = suite.kem.derive_key_pair(ikm)
    # pyhpke 0.6 left-pads P-256 private bytes with zeros; the scalar is the last 32 bytes.
    private = derived.private_key.to_private_bytes()
    assert not any(private[:-32])
    print(json.dumps({"enc": enc.hex(), "messages": messages, "export": ctx.export(b"proxima", 48).hex(),
                      "derivedPrivate": private[-32:].hex(),
                      "derivedPublic": derived.public_key.to_public_bytes().hex()}))
    """

@Suite(.enabled(if: Python.isAvailable, "python3 is not on PATH"))
struct HPKEInteropTests {
    @Test func pyhpkeOpensWhatWeSeal() throws {
        let recipient = try P256.PrivateKey()
        let info = Array("proxima card data v1".utf8)
        var sender = try HPKE.Sender(recipientKey: recipient.publicKey, info: info)
        var messages: [JSONValue] = []
        var plaintexts: [[UInt8]] = []
        for i in 0..<3 {
            let plaintext = Array("message \(i) from Proxima".utf8)
            let aad = Array("aad-\(i)".utf8)
            let ciphertext = try sender.seal(plaintext, aad: aad)
            plaintexts.append(plaintext)
            messages.append(.object([("ct", .string(hex(ciphertext))), ("aad", .string(hex(aad)))]))
        }
        let py = try Python.runJSON(
            hpkeOpenInPython,
            arguments: [
                hex(recipient.rawRepresentation), hex(sender.encapsulatedKey), hex(info),
                JSONValue.array(messages).jsonText,
            ]
        )
        #expect(py.array("plaintexts").map { bytes($0.stringValue) } == plaintexts)
        #expect(py.hexBytes("export") == (try sender.export(exporterContext: Array("proxima".utf8), length: 48)))
    }

    @Test func weOpenWhatPyhpkeSeals() throws {
        let recipient = try P256.PrivateKey()
        let info = Array("proxima card data v1".utf8)
        let ikm = try SecureRandom.bytes(count: 32)
        let py = try Python.runJSON(
            hpkeSealInPython,
            arguments: [hex(recipient.publicKey.x963Representation), hex(info), hex(ikm)]
        )
        var context = try HPKE.Recipient(encapsulatedKey: py.hexBytes("enc"), privateKey: recipient, info: info)
        let messages = py.array("messages")
        #expect(messages.count == 3)
        for message in messages {
            #expect(try context.open(message.hexBytes("ct"), aad: message.hexBytes("aad")) == message.hexBytes("pt"))
        }
        #expect(try context.export(exporterContext: Array("proxima".utf8), length: 48) == py.hexBytes("export"))
        let first = try #require(messages.first)
        let single = try HPKE.open(
            enc: py.hexBytes("enc"),
            privateKey: recipient,
            info: info,
            aad: first.hexBytes("aad"),
            ciphertext: first.hexBytes("ct")
        )
        #expect(single == first.hexBytes("pt"))

        let derived = try HPKE.deriveKeyPair(ikm: ikm)
        #expect(derived.rawRepresentation == py.hexBytes("derivedPrivate"))
        #expect(derived.publicKey.x963Representation == py.hexBytes("derivedPublic"))
    }
}

private let primitivesInPython = """
    import json, sys
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
    from cryptography.hazmat.primitives.kdf.hkdf import HKDF
    from cryptography.hazmat.primitives.kdf.x963kdf import X963KDF
    key, iv, pt, aad, secret, info = (bytes.fromhex(a) for a in sys.argv[1:7])
    enc = Cipher(algorithms.AES(key), modes.GCM(iv)).encryptor()
    enc.authenticate_additional_data(aad)
    ct = enc.update(pt) + enc.finalize()
    ctr = Cipher(algorithms.AES(key), modes.CTR(iv)).encryptor()
    print(json.dumps({
        "gcm": (ct + enc.tag).hex(),
        "ctr": (ctr.update(pt) + ctr.finalize()).hex(),
        "x963": X963KDF(hashes.SHA256(), 80, info).derive(secret).hex(),
        "hkdf": HKDF(hashes.SHA256(), 100, None, info).derive(secret).hex(),
        "hkdfEmpty": HKDF(hashes.SHA256(), 32, None, None).derive(b"").hex(),
    }))
    """

@Suite(.enabled(if: Python.isAvailable, "python3 is not on PATH"))
struct PrimitivesInteropTests {
    /// Random inputs each run: AES-256-GCM with the 16-byte IV of Apple VAS, AES-CTR, X9.63 KDF and HKDF.
    @Test func randomInputsAgreeWithPython() throws {
        let key = try SecureRandom.bytes(count: 32)
        let iv = try SecureRandom.bytes(count: 16)
        let plaintext = try SecureRandom.bytes(count: 77)
        let aad = try SecureRandom.bytes(count: 13)
        let secret = try SecureRandom.bytes(count: 32)
        let info = try SecureRandom.bytes(count: 9)
        let py = try Python.runJSON(
            primitivesInPython,
            arguments: [hex(key), hex(iv), hex(plaintext), hex(aad), hex(secret), hex(info)]
        )
        #expect(try AES.GCM.seal(plaintext, key: key, iv: iv, authenticating: aad) == py.hexBytes("gcm"))
        #expect(try AES.GCM.open(py.hexBytes("gcm"), key: key, iv: iv, authenticating: aad) == plaintext)
        #expect(try AES.CTR.encrypt(plaintext, key: key, iv: iv) == py.hexBytes("ctr"))
        #expect(
            try X963KDF.deriveKey(sharedSecret: secret, sharedInfo: info, outputByteCount: 80) == py.hexBytes("x963")
        )
        let hkdf = try HKDF.deriveKey(inputKeyMaterial: secret, salt: [], info: info, outputByteCount: 100)
        #expect(hkdf == py.hexBytes("hkdf"))
        let empty = try HKDF.deriveKey(inputKeyMaterial: [], salt: [], info: [], outputByteCount: 32)
        #expect(empty == py.hexBytes("hkdfEmpty"))
    }
}

extension JSONValue {
    /// The string of a `.string`, else "".
    var stringValue: String {
        if case .string(let value) = self { return value }
        return ""
    }
}
