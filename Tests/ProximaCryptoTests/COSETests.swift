import ProximaCore
import ProximaCrypto
import ProximaTestSupport
import Testing

/// One COSE_Sign1 example of github.com/cose-wg/Examples (BSD-3-Clause, Copyright (c) 2016 Jim Schaad and the
/// contributors), as saved with the upstream path and commit; hex lower-cased, nothing else changed.
/// `failsWith` is the check a strict verifier must report for the `sign-fail-*` examples.
struct COSEVector: Sendable, CustomTestStringConvertible {
    let title: String
    let path: String
    let aad: String
    let toBeSigned: String
    let cbor: String
    let failsWith: COSEError.Code?
    init(_ title: String, path: String, aad: String, toBeSigned: String, cbor: String, failsWith: COSEError.Code?) {
        self.title = title
        self.path = path
        self.aad = aad
        self.toBeSigned = toBeSigned
        self.cbor = cbor
        self.failsWith = failsWith
    }
    var testDescription: String { title }
}

/// The key every example uses (kid "11", P-256), from the same files.
let coseExampleKeyX = "bac5b11cad8f99f9c72b05cf4b9e26d244dc189f745228255a219a86d6a09eff"
let coseExampleKeyY = "20138bf82dc1b6d562be0fa54ab7804a3a64b6d72ccfed6b6fb6ed28bbfc117e"

let coseExamples: [COSEVector] = [
    COSEVector(
        "ECDSA-01: ECDSA - P-256 - sign0",
        path: "ecdsa-examples/ecdsa-sig-01.json@3d0ee8fb6ce6",
        aad: "",
        toBeSigned: "846a5369676e61747572653145a2012603004054546869732069732074686520636f6e74656e742e",
        cbor:
            "d28445a201260300a10442313154546869732069732074686520636f6e74656e742e5840eae868ecc176883766c5dc5ba5b8dca25dab3c2e56a551ce5705b793914348e172727f48461fabbba2e343492ddecac3983686250bc68e9f1a7a07d41225b59f",
        failsWith: nil
    ),
    COSEVector(
        "sign-pass-01: Redo protected",
        path: "sign1-tests/sign-pass-01.json@3d0ee8fb6ce6",
        aad: "",
        toBeSigned: "846a5369676e617475726531404054546869732069732074686520636f6e74656e742e",
        cbor:
            "d28441a0a201260442313154546869732069732074686520636f6e74656e742e5840eae868ecc176883766c5dc5ba5b8dca25dab3c2e56a551ce5705b793914348e11a02e5f0344bf2d4ee5c7fd75a68a9f5e0b3cc1f1fc1409c189566586ff9d610",
        failsWith: nil
    ),
    COSEVector(
        "sign-pass-02: External",
        path: "sign1-tests/sign-pass-02.json@3d0ee8fb6ce6",
        aad: "11aa22bb33cc44dd55006699",
        toBeSigned:
            "846a5369676e61747572653143a101264c11aa22bb33cc44dd5500669954546869732069732074686520636f6e74656e742e",
        cbor:
            "d28443a10126a10442313154546869732069732074686520636f6e74656e742e5840eae868ecc176883766c5dc5ba5b8dca25dab3c2e56a551ce5705b793914348e155388b10c4f1b59a6733eab416870a945111a4b2fbdbef33a77234b1deff2f9b",
        failsWith: nil
    ),
    COSEVector(
        "sign-pass-03: Remove CBOR Tag",
        path: "sign1-tests/sign-pass-03.json@43538b5a0ce1",
        aad: "",
        toBeSigned: "846a5369676e61747572653143a101264054546869732069732074686520636f6e74656e742e",
        cbor:
            "8443a10126a10442313154546869732069732074686520636f6e74656e742e5840eae868ecc176883766c5dc5ba5b8dca25dab3c2e56a551ce5705b793914348e19f43d6c6ba654472da301b645b293c9ba939295b97c4bdb847782bff384c5794",
        failsWith: nil
    ),
    COSEVector(
        "sign-fail-01: Wrong CBOR Tag",
        path: "sign1-tests/sign-fail-01.json@43538b5a0ce1",
        aad: "",
        toBeSigned: "846a5369676e61747572653143a101264054546869732069732074686520636f6e74656e742e",
        cbor:
            "d903e68443a10126a10442313154546869732069732074686520636f6e74656e742e5840eae868ecc176883766c5dc5ba5b8dca25dab3c2e56a551ce5705b793914348e19f43d6c6ba654472da301b645b293c9ba939295b97c4bdb847782bff384c5794",
        failsWith: .wrongTag
    ),
    COSEVector(
        "sign-fail-02: Change signature (payload byte changed)",
        path: "sign1-tests/sign-fail-02.json@37285080eeca",
        aad: "",
        toBeSigned: "846a5369676e61747572653143a101264054546869732069732074686520636f6e74656e742e",
        cbor:
            "d28443a10126a10442313154546869732069732074686520636f6e74656e742f5840eae868ecc176883766c5dc5ba5b8dca25dab3c2e56a551ce5705b793914348e19f43d6c6ba654472da301b645b293c9ba939295b97c4bdb847782bff384c5794",
        failsWith: .badSignature
    ),
    COSEVector(
        "sign-fail-03: Change Sign Algorithm (alg -999)",
        path: "sign1-tests/sign-fail-03.json@37285080eeca",
        aad: "",
        toBeSigned: "846a5369676e61747572653143a101264054546869732069732074686520636f6e74656e742e",
        cbor:
            "d28445a1013903e6a10442313154546869732069732074686520636f6e74656e742e5840eae868ecc176883766c5dc5ba5b8dca25dab3c2e56a551ce5705b793914348e19f43d6c6ba654472da301b645b293c9ba939295b97c4bdb847782bff384c5794",
        failsWith: .unsupportedAlgorithm
    ),
    COSEVector(
        "sign-fail-04: Change Sign Algorithm (alg 'unknown')",
        path: "sign1-tests/sign-fail-04.json@37285080eeca",
        aad: "",
        toBeSigned: "846a5369676e61747572653143a101264054546869732069732074686520636f6e74656e742e",
        cbor:
            "d2844aa10167756e6b6e6f776ea10442313154546869732069732074686520636f6e74656e742e5840eae868ecc176883766c5dc5ba5b8dca25dab3c2e56a551ce5705b793914348e19f43d6c6ba654472da301b645b293c9ba939295b97c4bdb847782bff384c5794",
        failsWith: .unsupportedAlgorithm
    ),
    COSEVector(
        "sign-fail-06: Add protected attribute",
        path: "sign1-tests/sign-fail-06.json@3d0ee8fb6ce6",
        aad: "",
        toBeSigned: "846a5369676e61747572653143a101264054546869732069732074686520636f6e74656e742e",
        cbor:
            "d28445a201260300a10442313154546869732069732074686520636f6e74656e742e5840eae868ecc176883766c5dc5ba5b8dca25dab3c2e56a551ce5705b793914348e19f43d6c6ba654472da301b645b293c9ba939295b97c4bdb847782bff384c5794",
        failsWith: .badSignature
    ),
    COSEVector(
        "sign-fail-07: Remove protected attribute",
        path: "sign1-tests/sign-fail-07.json@37285080eeca",
        aad: "",
        toBeSigned: "846a5369676e61747572653145a2012603004054546869732069732074686520636f6e74656e742e",
        cbor:
            "d28443a10126a10442313154546869732069732074686520636f6e74656e742e5840eae868ecc176883766c5dc5ba5b8dca25dab3c2e56a551ce5705b793914348e172727f48461fabbba2e343492ddecac3983686250bc68e9f1a7a07d41225b59f",
        failsWith: .badSignature
    ),
]

@Suite("COSE_Sign1, COSE_Mac0, COSE_Key")
struct COSETests {
    let exampleKey: ECPublicKey

    init() throws {
        exampleKey = try ECPublicKey(curve: .p256, x: bytes(coseExampleKeyX), y: bytes(coseExampleKeyY))
    }

    @Test("cose-wg examples pass and fail as published", arguments: coseExamples)
    func example(_ vector: COSEVector) throws {
        let verify = {
            let message = try COSESign1(encoded: bytes(vector.cbor))
            try message.verify(
                with: exampleKey,
                externalAAD: bytes(vector.aad),
                acceptsUnprotectedAlgorithm: vector.title.hasPrefix("sign-pass-01")
            )
            return message
        }
        if let code = vector.failsWith {
            #expect(throws: COSEError(code, "")) { _ = try verify() }
        } else {
            let message = try verify()
            let payload = try #require(message.payload)
            let structure = COSESign1.sigStructure(
                protectedBytes: message.protectedBytes,
                externalAAD: bytes(vector.aad),
                payload: payload
            )
            #expect(structure == bytes(vector.toBeSigned))
        }
    }

    @Test func anAlgorithmOnlyInTheUnprotectedHeaderIsRefusedByDefault() throws {
        let vector = try #require(coseExamples.first { $0.title.hasPrefix("sign-pass-01") })
        let message = try COSESign1(encoded: bytes(vector.cbor))
        #expect(throws: COSEError(.algorithmNotProtected, "")) { try message.verify(with: exampleKey) }
    }

    @Test(arguments: EllipticCurve.allCases)
    func signAndVerifyOnEachCurve(_ curve: EllipticCurve) throws {
        let key = try ECPrivateKey(generatingOn: curve)
        let payload = Array("mdoc".utf8)
        let message = try COSESign1.sign(payload: payload, detached: true, key: key, externalAAD: [1, 2])
        #expect(message.signature.count == 2 * curve.coordinateByteCount)
        #expect(message.payload == nil)
        #expect(try message.algorithm() == COSEAlgorithm.ecdsa(for: curve))
        try message.verify(with: key.publicKey, externalAAD: [1, 2], detachedPayload: payload)
        #expect(throws: COSEError(.badSignature, "")) {
            try message.verify(with: key.publicKey, externalAAD: [1, 3], detachedPayload: payload)
        }
        #expect(throws: COSEError(.missingPayload, "")) { try message.verify(with: key.publicKey) }
        let reparsed = try COSESign1(encoded: message.encoded(tagged: true))
        #expect(reparsed == message)
        let other = try ECPrivateKey(generatingOn: curve == .p256 ? .p384 : .p256)
        #expect(throws: COSEError(.keyMismatch, "")) {
            try message.verify(with: other.publicKey, detachedPayload: payload)
        }
    }

    @Test func aFlippedSignatureBitFails() throws {
        let key = try ECPrivateKey(generatingOn: .p256)
        let message = try COSESign1.sign(payload: [1, 2, 3], key: key)
        var value = message.value.arrayValue ?? []
        var signature = message.signature
        signature[10] ^= 1
        value[3] = .byteString(signature)
        #expect(throws: COSEError(.badSignature, "")) { try COSESign1(.array(value)).verify(with: key.publicKey) }
    }

    @Test func malformedShapesAreRefused() {
        let cases: [CBORValue] = [
            [1, 2, 3],
            [.byteString([]), .map([]), .null],
            [.textString("x"), .map([]), .null, .byteString([])],
            [.byteString([0x01]), .map([]), .null, .byteString([])],
            [.byteString([]), .array([]), .null, .byteString([])],
            [.byteString([]), .map([]), 5, .byteString([])],
            [.byteString([]), .map([]), .null, 5],
        ]
        for value in cases {
            #expect(throws: COSEError(.malformed, ""), "\(value.diagnostic)") { try COSESign1(value) }
        }
        #expect(throws: COSEError(.wrongTag, "")) {
            try COSESign1(.tagged(17, [.byteString([]), .map([]), .null, .byteString([])]))
        }
    }

    @Test func mac0AuthenticatesWithHMAC256() throws {
        let key = [UInt8](repeating: 0x42, count: 32)
        let mac = try COSEMac0.authenticate(payload: [9, 9], detached: true, key: key)
        #expect(mac.protectedBytes == bytes("a10105"))
        #expect(mac.macTag.count == 32)
        try mac.verify(key: key, detachedPayload: [9, 9])
        #expect(throws: COSEError(.badTag, "")) { try mac.verify(key: key, detachedPayload: [9, 8]) }
        #expect(throws: COSEError(.badTag, "")) {
            try mac.verify(key: [UInt8](repeating: 0, count: 32), detachedPayload: [9, 9])
        }
        let es256 = try COSEMac0(.array([.byteString(bytes("a10126")), .map([]), .null, .byteString(mac.macTag)]))
        #expect(throws: COSEError(.unsupportedAlgorithm, "")) { try es256.verify(key: key, detachedPayload: [9, 9]) }
        #expect(
            COSEMac0.macStructure(protectedBytes: bytes("a10105"), externalAAD: [], payload: [7])
                == bytes("84 644d414330 43a10105 40 4107")
        )
    }

    @Test func coseKeysRoundTripAndRefuseBadPoints() throws {
        let value: CBORValue = [
            1: 2, -1: 1, -2: .byteString(bytes(coseExampleKeyX)), -3: .byteString(bytes(coseExampleKeyY)),
        ]
        let key = try COSEKey.publicKey(from: value)
        #expect(key == exampleKey)
        #expect(COSEKey.value(of: key).encoded == value.encoded)
        var bent = bytes(coseExampleKeyY)
        bent[31] ^= 1
        let offCurve: CBORValue = [1: 2, -1: 1, -2: .byteString(bytes(coseExampleKeyX)), -3: .byteString(bent)]
        #expect(throws: COSEError(.invalidKey, "")) { try COSEKey.publicKey(from: offCurve) }
        #expect(throws: COSEError(.invalidKey, "")) { try COSEKey.publicKey(from: [1: 1, -1: 6]) }
        #expect(throws: COSEError(.invalidKey, "")) { try COSEKey.publicKey(from: [1: 2, -1: 4]) }
        #expect(throws: COSEError(.invalidKey, "")) {
            try COSEKey.publicKey(from: [
                1: 2, -1: 2, -2: .byteString(bytes(coseExampleKeyX)), -3: .byteString(bytes(coseExampleKeyY)),
            ])
        }
    }
}

/// A COSE_Sign1 made by Python (`cryptography` + `cbor2`, its own CBOR and signature encoders).
private let sign1FromPython = """
    import cbor2, json, sys
    from cryptography.hazmat.primitives import hashes, serialization as s
    from cryptography.hazmat.primitives.asymmetric import ec, utils
    curves = {"P-256": (ec.SECP256R1(), hashes.SHA256(), -7, 32), "P-384": (ec.SECP384R1(), hashes.SHA384(), -35, 48),
              "P-521": (ec.SECP521R1(), hashes.SHA512(), -36, 66)}
    curve, digest, alg, size = curves[sys.argv[1]]
    key = ec.generate_private_key(curve)
    protected = cbor2.dumps({1: alg})
    payload = b"payload from python"
    tbs = cbor2.dumps(["Signature1", protected, b"", payload])
    r, s_ = utils.decode_dss_signature(key.sign(tbs, ec.ECDSA(digest)))
    sig = r.to_bytes(size, "big") + s_.to_bytes(size, "big")
    message = cbor2.dumps(cbor2.CBORTag(18, [protected, {4: b"11"}, payload, sig]))
    pub = key.public_key().public_bytes(s.Encoding.X962, s.PublicFormat.UncompressedPoint)
    print(json.dumps({"message": message.hex(), "public": pub.hex()}))
    """

/// Verifies our COSE_Sign1 in Python; prints "ok" or the failure.
private let sign1InPython = """
    import cbor2, sys
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import ec, utils
    curves = {-7: (ec.SECP256R1(), hashes.SHA256(), 32), -35: (ec.SECP384R1(), hashes.SHA384(), 48),
              -36: (ec.SECP521R1(), hashes.SHA512(), 66)}
    message = cbor2.loads(bytes.fromhex(sys.argv[1]))
    protected, unprotected, payload, sig = message.value if isinstance(message, cbor2.CBORTag) else message
    curve, digest, size = curves[cbor2.loads(protected)[1]]
    pub = ec.EllipticCurvePublicKey.from_encoded_point(curve, bytes.fromhex(sys.argv[2]))
    der = utils.encode_dss_signature(int.from_bytes(sig[:size], "big"), int.from_bytes(sig[size:], "big"))
    pub.verify(der, cbor2.dumps(["Signature1", protected, b"", payload]), ec.ECDSA(digest))
    print("ok")
    """

@Suite(.enabled(if: Python.isAvailable, "python3 is not on PATH"))
struct COSEInteropTests {
    @Test(arguments: EllipticCurve.allCases)
    func weVerifyPythonsSign1(_ curve: EllipticCurve) throws {
        let py = try Python.runJSON(sign1FromPython, arguments: [curve.rawValue])
        let message = try COSESign1(encoded: py.hexBytes("message"))
        let key = try ECPublicKey(curve: curve, x963Representation: py.hexBytes("public"))
        try message.verify(with: key)
        #expect(message.payload == Array("payload from python".utf8))
        #expect(message.unprotected[COSEHeader.keyIdentifier] == .byteString(Array("11".utf8)))
        var tampered = try #require(message.payload)
        tampered[0] ^= 0x20
        #expect(throws: COSEError(.badSignature, "")) {
            try COSESign1(
                .array([
                    .byteString(message.protectedBytes), message.unprotected, .byteString(tampered),
                    .byteString(message.signature),
                ])
            )
            .verify(with: key)
        }
    }

    @Test(arguments: EllipticCurve.allCases)
    func pythonVerifiesOurSign1(_ curve: EllipticCurve) throws {
        let key = try ECPrivateKey(generatingOn: curve)
        let message = try COSESign1.sign(payload: Array("payload from swift".utf8), key: key)
        let result = try Python.run(
            sign1InPython,
            arguments: [hex(message.encoded(tagged: true)), hex(key.publicKey.x963Representation)]
        )
        #expect(result == "ok")
    }
}
