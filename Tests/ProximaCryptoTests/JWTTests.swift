import Foundation
import ProximaCore
import ProximaCrypto
import ProximaTestSupport
import Testing

private let fixedNow = Date(timeIntervalSince1970: 1_800_000_000)

private func claims(_ members: [(String, JSONValue)]) -> JSONValue {
    .object(members.map { (key: $0.0, value: $0.1) })
}

private func standardClaims(
    issuer: String = "proxima-psp",
    audience: JSONValue = .string("lane-1"),
    expiresIn: Int64 = 600,
    extra: [(String, JSONValue)] = []
) -> JSONValue {
    let now = Int64(fixedNow.timeIntervalSince1970)
    return claims(
        [
            ("iss", .string(issuer)), ("sub", .string("merchant-42")), ("aud", audience),
            ("iat", .integer(now)), ("nbf", .integer(now)), ("exp", .integer(now + expiresIn)),
        ] + extra
    )
}

private let validator = JWTValidator(issuer: "proxima-psp", audience: ["lane-1"], now: { fixedNow })

@Suite struct JWTTests {
    @Test func signThenValidate() throws {
        let key = try P256.PrivateKey()
        let token = try JWTSigner(privateKey: key, keyID: "psp-1").sign(claims: standardClaims())
        #expect(token.split(separator: ".").count == 3)
        let verified = try validator.validate(token, using: key.publicKey)
        #expect(verified.algorithm == "ES256")
        #expect(verified.type == "JWT")
        #expect(verified.keyID == "psp-1")
        #expect(verified.signature.count == 64)
        #expect(verified.claims.issuer == "proxima-psp")
        #expect(verified.claims.subject == "merchant-42")
        #expect(verified.claims.audience == ["lane-1"])
        #expect(verified.claims.expiresAt == fixedNow.addingTimeInterval(600))
        #expect(verified.claims.notBefore == fixedNow)
        #expect(verified.claims.issuedAt == fixedNow)
        #expect(verified.claims["sub"] == .string("merchant-42"))
    }

    @Test func anotherKeyIsAnInvalidSignature() throws {
        let token = try JWTSigner(privateKey: try P256.PrivateKey()).sign(claims: standardClaims())
        #expect(throws: JWTError(.invalidSignature)) {
            try validator.validate(token, using: try P256.PrivateKey().publicKey)
        }
    }

    @Test func alteredPayloadIsAnInvalidSignature() throws {
        let key = try P256.PrivateKey()
        let token = try JWTSigner(privateKey: key).sign(claims: standardClaims())
        let parts = token.split(separator: ".").map(String.init)
        let forged = Base64.urlEncode(Array(standardClaims(issuer: "proxima-psp", expiresIn: 99_999).jsonText.utf8))
        #expect(throws: JWTError(.invalidSignature)) {
            try validator.validate([parts[0], forged, parts[2]].joined(separator: "."), using: key.publicKey)
        }
        let shortSignature = Base64.urlEncode(Array(Base64.urlDecode(parts[2])!.prefix(63)))
        #expect(throws: JWTError(.invalidSignature)) {
            try validator.validate([parts[0], parts[1], shortSignature].joined(separator: "."), using: key.publicKey)
        }
    }

    @Test func timeClaimsWithClockSkew() throws {
        let key = try P256.PrivateKey()
        let signer = JWTSigner(privateKey: key)
        let token = try signer.sign(claims: standardClaims(expiresIn: 600))
        func at(_ offset: TimeInterval) -> JWTValidator {
            JWTValidator(issuer: "proxima-psp", audience: ["lane-1"], now: { fixedNow.addingTimeInterval(offset) })
        }
        try at(0).validate(token, using: key.publicKey)
        try at(600 + 59).validate(token, using: key.publicKey)
        #expect(throws: JWTError(.expired)) { try at(600 + 60).validate(token, using: key.publicKey) }
        try at(-59).validate(token, using: key.publicKey)
        #expect(throws: JWTError(.notYetValid)) { try at(-61).validate(token, using: key.publicKey) }
        let strict = JWTValidator(clockSkew: .zero, now: { fixedNow.addingTimeInterval(600) })
        #expect(throws: JWTError(.expired)) { try strict.validate(token, using: key.publicKey) }
        let future = try signer.sign(
            claims: claims([("iat", .integer(Int64(fixedNow.timeIntervalSince1970) + 3600)), ("exp", .number(2e9))])
        )
        #expect(throws: JWTError(.notYetValid)) { try at(0).validate(future, using: key.publicKey) }
    }

    @Test func issuerAndAudience() throws {
        let key = try P256.PrivateKey()
        let signer = JWTSigner(privateKey: key)
        let wrongIssuer = try signer.sign(claims: standardClaims(issuer: "someone-else"))
        #expect(throws: JWTError(.wrongIssuer)) { try validator.validate(wrongIssuer, using: key.publicKey) }

        let wrongAudience = try signer.sign(claims: standardClaims(audience: .string("lane-2")))
        #expect(throws: JWTError(.wrongAudience)) { try validator.validate(wrongAudience, using: key.publicKey) }

        let several = try signer.sign(claims: standardClaims(audience: .array([.string("lane-9"), .string("lane-1")])))
        #expect(try validator.validate(several, using: key.publicKey).claims.audience == ["lane-9", "lane-1"])

        let wildcard = JWTValidator(issuer: "proxima-psp", audience: ["*"], now: { fixedNow })
        try wildcard.validate(wrongAudience, using: key.publicKey)
        let noAudience = try signer.sign(
            claims: claims([("iss", .string("proxima-psp")), ("exp", .integer(2_000_000_000))])
        )
        #expect(throws: JWTError(.missingClaim("aud"))) { try wildcard.validate(noAudience, using: key.publicKey) }
        let emptyAudience = try signer.sign(claims: standardClaims(audience: .array([])))
        #expect(throws: JWTError(.wrongAudience)) { try wildcard.validate(emptyAudience, using: key.publicKey) }
        // A "*" in the token is just a string.
        let starInToken = try signer.sign(claims: standardClaims(audience: .string("*")))
        #expect(throws: JWTError(.wrongAudience)) { try validator.validate(starInToken, using: key.publicKey) }
    }

    @Test func requiredClaims() throws {
        let key = try P256.PrivateKey()
        let signer = JWTSigner(privateKey: key)
        let noExpiry = try signer.sign(claims: claims([("iss", .string("proxima-psp")), ("aud", .string("lane-1"))]))
        let error = #expect(throws: JWTError.self) { try validator.validate(noExpiry, using: key.publicKey) }
        #expect(error?.code == .missingClaim("exp"))
        #expect(error?.code.claimName == "exp")
        #expect(error?.code != .missingClaim("aud"))
        let needsJTI = JWTValidator(requiredClaims: ["exp", "jti"], now: { fixedNow })
        #expect(throws: JWTError(.missingClaim("jti"))) {
            try needsJTI.validate(try signer.sign(claims: standardClaims()), using: key.publicKey)
        }
        let withID = try signer.sign(claims: standardClaims(extra: [("jti", .string("t-1"))]))
        #expect(try needsJTI.validate(withID, using: key.publicKey).claims.id == "t-1")
    }

    @Test func signerRefusesClaimsThatAreNotAClaimsSet() throws {
        let signer = JWTSigner(privateKey: try P256.PrivateKey())
        #expect(throws: ProximaError(.invalidArgument)) { try signer.sign(claims: .array([])) }
        #expect(throws: ProximaError(.invalidArgument)) { try signer.sign(claims: claims([("exp", .string("soon"))])) }
    }

    /// Every algorithm but ES256 is refused before any verifier runs, whatever its signature.
    @Test(arguments: ["none", "HS256", "ES384", "RS256", "es256", "ES256 ", ""])
    func otherAlgorithmsAreNotAllowed(algorithm: String) throws {
        let key = try P256.PrivateKey()
        let header = Base64.urlEncode(Array(claims([("alg", .string(algorithm))]).jsonText.utf8))
        let payload = Base64.urlEncode(Array(standardClaims().jsonText.utf8))
        let signingInput = header + "." + payload
        let signature = try key.signature(for: Array(signingInput.utf8)).rawRepresentation
        for token in [signingInput + ".", signingInput + "." + Base64.urlEncode(signature)] {
            #expect(throws: JWTError(.algorithmNotAllowed)) { try validator.validate(token, using: key.publicKey) }
        }
    }

    struct MalformedCase: Sendable, CustomTestStringConvertible {
        let name: String
        let token: String
        var testDescription: String { name }
    }

    static let header = Base64.urlEncode(Array(#"{"alg":"ES256","typ":"JWT"}"#.utf8))
    static let payload = Base64.urlEncode(Array(#"{"iss":"proxima-psp","exp":2000000000}"#.utf8))
    static let signature = Base64.urlEncode([UInt8](repeating: 1, count: 64))
    static func b64(_ text: String) -> String { Base64.urlEncode(Array(text.utf8)) }

    static let malformed: [MalformedCase] = [
        MalformedCase(name: "empty", token: ""),
        MalformedCase(name: "two parts", token: "\(header).\(payload)"),
        MalformedCase(name: "four parts", token: "\(header).\(payload).\(signature).\(signature)"),
        MalformedCase(name: "one dot only", token: "."),
        MalformedCase(name: "empty header", token: ".\(payload).\(signature)"),
        MalformedCase(name: "empty payload", token: "\(header)..\(signature)"),
        MalformedCase(name: "bad base64 in header", token: "e!J.\(payload).\(signature)"),
        MalformedCase(name: "padded header", token: "\(header)=.\(payload).\(signature)"),
        MalformedCase(
            name: "standard alphabet",
            token: "\(header).\(payload).\(signature.replacingOccurrences(of: "_", with: "/"))+"
        ),
        MalformedCase(name: "bad base64 in signature", token: "\(header).\(payload).a"),
        MalformedCase(name: "non-canonical base64 bits", token: "\(header).\(payload).AB"),
        MalformedCase(name: "header not JSON", token: "\(b64("not json")).\(payload).\(signature)"),
        MalformedCase(name: "header a JSON array", token: "\(b64(#"["ES256"]"#)).\(payload).\(signature)"),
        MalformedCase(name: "header without alg", token: "\(b64(#"{"typ":"JWT"}"#)).\(payload).\(signature)"),
        MalformedCase(name: "alg not a string", token: "\(b64(#"{"alg":7}"#)).\(payload).\(signature)"),
        MalformedCase(name: "duplicate alg", token: "\(b64(#"{"alg":"none","alg":"ES256"}"#)).\(payload).\(signature)"),
        MalformedCase(name: "kid not a string", token: "\(b64(#"{"alg":"ES256","kid":1}"#)).\(payload).\(signature)"),
        MalformedCase(name: "crit header", token: "\(b64(#"{"alg":"ES256","crit":["b64"]}"#)).\(payload).\(signature)"),
        MalformedCase(name: "payload not JSON", token: "\(header).\(b64("{")).\(signature)"),
        MalformedCase(name: "payload a string", token: "\(header).\(b64(#""claims""#)).\(signature)"),
        MalformedCase(name: "exp a string", token: "\(header).\(b64(#"{"exp":"2030"}"#)).\(signature)"),
        MalformedCase(name: "aud a number", token: "\(header).\(b64(#"{"aud":1}"#)).\(signature)"),
        MalformedCase(name: "aud array with a number", token: "\(header).\(b64(#"{"aud":["a",1]}"#)).\(signature)"),
        MalformedCase(name: "iss null", token: "\(header).\(b64(#"{"iss":null}"#)).\(signature)"),
        MalformedCase(
            name: "deeply nested payload",
            token: "\(header).\(b64(String(repeating: "[", count: 200))).\(signature)"
        ),
        MalformedCase(name: "oversized", token: "\(header).\(String(repeating: "A", count: 40_000)).\(signature)"),
    ]

    @Test(arguments: malformed)
    func malformedTokensAreRefused(malformed: MalformedCase) throws {
        let key = try P256.PrivateKey().publicKey
        #expect(throws: JWTError(.malformedToken)) { try validator.validate(malformed.token, using: key) }
    }

    @Test func base64urlIsStrict() {
        #expect(Base64.urlDecode("") == [])
        #expect(Base64.urlDecode("_-8") == [0xFF, 0xEF])
        #expect(Base64.urlDecode("_-9") == nil)  // unused low bits set
        #expect(Base64.urlDecode("AA==") == nil)
        #expect(Base64.urlDecode("A") == nil)
        #expect(Base64.urlDecode("A B") == nil)
        #expect(Base64.urlEncode([0xFF, 0xEF]) == "_-8")
        #expect(Base64.encode([0xFF, 0xEF]) == "/+8=")
        #expect(Base64.decode("/+8=") == [0xFF, 0xEF])
        for length in 0..<8 {
            let data = (0..<length).map { UInt8($0 * 37 & 0xFF) }
            #expect(Base64.urlDecode(Base64.urlEncode(data)) == data)
            #expect(Base64.decode(Base64.encode(data)) == data)
        }
    }
}

private let tokensFromPyJWT = """
    import base64, hashlib, hmac, json, time
    import jwt
    from cryptography.hazmat.primitives import serialization as s
    from cryptography.hazmat.primitives.asymmetric import ec
    key, other = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    p384 = ec.generate_private_key(ec.SECP384R1())
    pem = key.public_key().public_bytes(s.Encoding.PEM, s.PublicFormat.SubjectPublicKeyInfo)
    now = int(time.time())
    def claims(**changes):
        c = {"iss": "proxima-psp", "sub": "merchant-42", "aud": "lane-1", "iat": now, "nbf": now, "exp": now + 600}
        c.update(changes)
        return {k: v for k, v in c.items() if v is not None}
    def b64(data):
        return base64.urlsafe_b64encode(data).rstrip(b"=").decode()
    def hs256_with_public_key(payload):
        header = json.dumps({"alg": "HS256", "typ": "JWT"}).encode()
        signing_input = b64(header) + "." + b64(json.dumps(payload).encode())
        return signing_input + "." + b64(hmac.new(pem, signing_input.encode(), hashlib.sha256).digest())
    es = lambda c, k=key: jwt.encode(c, k, algorithm="ES256", headers={"kid": "psp-1"})
    print(json.dumps({
        "publicKeyPEM": pem.decode(),
        "now": now,
        "tokens": {
            "valid": es(claims()),
            "validAudienceArray": es(claims(aud=["lane-7", "lane-1"])),
            "badSignature": es(claims(), other),
            "expired": es(claims(exp=now - 3600, nbf=now - 7200, iat=now - 7200)),
            "notYetValid": es(claims(nbf=now + 3600)),
            "wrongIssuer": es(claims(iss="mallory")),
            "wrongAudience": es(claims(aud="lane-2")),
            "missingExp": es(claims(exp=None)),
            "algNone": jwt.encode(claims(), None, algorithm="none"),
            "hs256WithPublicKey": hs256_with_public_key(claims()),
            "es384": jwt.encode(claims(), p384, algorithm="ES384"),
        },
    }))
    """

private let verifyWithPyJWT = """
    import json, sys
    import jwt
    decoded = jwt.decode(sys.argv[2], sys.argv[1], algorithms=["ES256"], audience="lane-1", issuer="proxima-psp")
    print(json.dumps({"claims": decoded, "header": jwt.get_unverified_header(sys.argv[2])}))
    """

@Suite(.enabled(if: Python.isAvailable, "python3 is not on PATH"))
struct JWTInteropTests {
    static let expectations: [(String, JWTError.Code?)] = [
        ("valid", nil),
        ("validAudienceArray", nil),
        ("badSignature", .invalidSignature),
        ("expired", .expired),
        ("notYetValid", .notYetValid),
        ("wrongIssuer", .wrongIssuer),
        ("wrongAudience", .wrongAudience),
        ("missingExp", .missingClaim("exp")),
        ("algNone", .algorithmNotAllowed),
        ("hs256WithPublicKey", .algorithmNotAllowed),
        ("es384", .algorithmNotAllowed),
    ]

    @Test func pyjwtTokensAreAcceptedOrRefusedWithTheRightCode() throws {
        let py = try Python.runJSON(tokensFromPyJWT)
        let key = try P256.PublicKey(pemRepresentation: py.string("publicKeyPEM"))
        let now = Date(timeIntervalSince1970: TimeInterval(py.integer("now")))
        let validator = JWTValidator(issuer: "proxima-psp", audience: ["lane-1"], now: { now })
        let tokens = try #require(py["tokens"])
        for (name, expected) in Self.expectations {
            guard case .string(let token)? = tokens[name] else {
                Issue.record("pyjwt printed no token \"\(name)\"")
                continue
            }
            do {
                let verified = try validator.validate(token, using: key)
                #expect(expected == nil, "\(name) was accepted; expected \(expected.map { "\($0)" } ?? "")")
                #expect(verified.claims.subject == "merchant-42")
                #expect(verified.keyID == "psp-1")
            } catch let error as JWTError {
                #expect(error.code == expected, "\(name): \(error)")
            }
        }
    }

    @Test func pyjwtAcceptsOurTokens() throws {
        let key = try P256.PrivateKey()
        let now = Int64(Date().timeIntervalSince1970)
        let token = try JWTSigner(privateKey: key, keyID: "psp-1").sign(
            claims: claims([
                ("iss", .string("proxima-psp")), ("sub", .string("terminal-7")), ("aud", .string("lane-1")),
                ("iat", .integer(now)), ("exp", .integer(now + 300)), ("amount", .integer(1234)),
            ])
        )
        let py = try Python.runJSON(verifyWithPyJWT, arguments: [key.publicKey.pemRepresentation, token])
        #expect(py["claims"]?["sub"] == .string("terminal-7"))
        #expect(py["claims"]?["amount"] == .integer(1234))
        #expect(py["header"]?["alg"] == .string("ES256"))
        #expect(py["header"]?["kid"] == .string("psp-1"))
    }
}
