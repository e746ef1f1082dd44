import Foundation
import Proxima
import ProximaCore
import ProximaTestSupport
import Testing

@testable import PaymentCapability

/// Tokens made by an independent implementation (Python `pyjwt` with `cryptography`), signed with the TEST
/// processor key, checked by `isAccountLinked`, `linkAccount` and `prepare`.
private let tokensFromPyJWT = """
    import base64, hashlib, hmac, json, sys, time
    import jwt
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    private_pem, public_pem = open(sys.argv[1], "rb").read(), open(sys.argv[2], "rb").read()
    issuer, audience, merchant = sys.argv[3], sys.argv[4], sys.argv[5]
    now = int(time.time())
    def claims(**changes):
        c = {"iss": issuer, "aud": audience, "iat": now, "exp": now + 3600, "merchant_id": merchant}
        c.update(changes)
        return {k: v for k, v in c.items() if v is not None}
    def es256(payload, key=private_pem, headers=None):
        return jwt.encode(payload, key, algorithm="ES256", headers=headers)
    other_key = ec.generate_private_key(ec.SECP256R1()).private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    def b64(data):
        return base64.urlsafe_b64encode(data).rstrip(b"=").decode()
    def hs256_with_public_key(payload):
        # pyjwt refuses a PEM as an HMAC secret, so the classic key-confusion token is built by hand.
        signing_input = b64(json.dumps({"alg": "HS256", "typ": "JWT"}).encode()) + "." + b64(json.dumps(payload).encode())
        mac = hmac.new(public_pem, signing_input.encode(), hashlib.sha256).digest()
        return signing_input + "." + b64(mac)
    valid = es256(claims())
    header, payload, signature = valid.split(".")
    tampered_payload = b64(json.dumps(claims(merchant_id="someone-else")).encode())
    tokens = {
        "valid": valid,
        # Just past exp and just before nbf: inside the 60 s skew however long a loaded machine takes to use it.
        "validWithinSkew": es256(claims(exp=now - 2, nbf=now + 2)),
        "otherMerchant": es256(claims(merchant_id="merchant-999")),
        "audienceList": es256(claims(aud=["other-reader", audience])),
        "badSignature": es256(claims(), key=other_key),
        "tamperedPayload": header + "." + tampered_payload + "." + signature,
        "expired": es256(claims(exp=now - 120)),
        "notYetValid": es256(claims(nbf=now + 600)),
        "issuedInFuture": es256(claims(iat=now + 600)),
        "missingExp": es256(claims(exp=None)),
        "missingMerchant": es256(claims(merchant_id=None)),
        "emptyMerchant": es256(claims(merchant_id="")),
        "numericMerchant": es256(claims(merchant_id=12345)),
        "wrongAudience": es256(claims(aud="proxima-store-999")),
        "missingAudience": es256(claims(aud=None)),
        "wildcardAudience": es256(claims(aud="*")),
        "wrongIssuer": es256(claims(iss="https://evil.example.test")),
        "algNone": jwt.encode(claims(), None, algorithm="none"),
        "hs256WithPublicKey": hs256_with_public_key(claims()),
        "es384Header": b64(json.dumps({"alg": "ES384", "typ": "JWT"}).encode()) + "." + payload + "." + signature,
        "garbage": "not.a.jwt",
    }
    print(json.dumps(tokens))
    """

@Suite(.enabled(if: Python.isAvailable, "python3 is not on PATH"))
struct ReaderTokenTests {
    static let tokens: [String: String] = {
        do {
            let json = try Python.runJSON(
                tokensFromPyJWT,
                arguments: [
                    Package.privateKeyFile, Package.publicKeyFile, PaymentHarness.issuer,
                    PaymentHarness.readerIdentifier, PaymentHarness.merchant,
                ]
            )
            guard case .object(let members) = json else { return [:] }
            return Dictionary(
                uniqueKeysWithValues: members.compactMap { member in
                    guard case .string(let token) = member.value else { return nil }
                    return (member.key, token)
                }
            )
        } catch {
            Issue.record("pyjwt could not make the test tokens: \(error)")
            return [:]
        }
    }()

    static func token(_ name: String) throws -> PaymentCardReader.Token {
        PaymentCardReader.Token(rawValue: try #require(tokens[name], "no token \"\(name)\" from pyjwt"))
    }

    @Test func validTokenIsAcceptedAndLinksTheMerchant() async throws {
        try await PaymentHarness.withReader(cards: ["pay-visa-qvsdc.json"]) { reader, directory in
            let token = try Self.token("valid")
            #expect(try await reader.isAccountLinked(using: token) == false)
            try await reader.linkAccount(using: token)
            #expect(try await reader.isAccountLinked(using: token))
            let link = try #require(try await reader.linkedAccount())
            #expect(link.merchantID == PaymentHarness.merchant)
            #expect(link.processor == PaymentHarness.issuer)
            #expect(link.readerIdentifier == PaymentHarness.readerIdentifier)
            // Tokens within the 60 s skew, and with this reader among several audiences, are valid too.
            #expect(try await reader.isAccountLinked(using: try Self.token("validWithinSkew")))
            #expect(try await reader.isAccountLinked(using: try Self.token("audienceList")))
            let session = try await reader.prepare(using: token)
            let result = try await session.readPaymentCard(PaymentHarness.purchase())
            #expect(result.outcome == .success)
            #expect(directory.entries().contains("account-link.json"))
        }
    }

    struct Refusal: Sendable, CustomTestStringConvertible {
        var token: String
        var code: PaymentCardReaderError.Code
        var testDescription: String { token }
    }

    static let refusals: [Refusal] = [
        .init(token: "badSignature", code: .invalidReaderToken),
        .init(token: "tamperedPayload", code: .invalidReaderToken),
        .init(token: "expired", code: .tokenExpired),
        .init(token: "notYetValid", code: .invalidReaderToken),
        .init(token: "issuedInFuture", code: .invalidReaderToken),
        .init(token: "missingExp", code: .invalidReaderToken),
        .init(token: "missingMerchant", code: .invalidReaderToken),
        .init(token: "emptyMerchant", code: .invalidReaderToken),
        .init(token: "numericMerchant", code: .invalidReaderToken),
        .init(token: "wrongAudience", code: .invalidReaderToken),
        .init(token: "missingAudience", code: .invalidReaderToken),
        .init(token: "wildcardAudience", code: .invalidReaderToken),
        .init(token: "wrongIssuer", code: .invalidReaderToken),
        .init(token: "algNone", code: .invalidReaderToken),
        .init(token: "hs256WithPublicKey", code: .invalidReaderToken),
        .init(token: "es384Header", code: .invalidReaderToken),
        .init(token: "garbage", code: .invalidReaderToken),
    ]

    @Test(arguments: refusals)
    func refusedTokensFailEveryCallWithTheirError(_ refusal: Refusal) async throws {
        try await PaymentHarness.withReader(cards: ["pay-visa-qvsdc.json"]) { reader, directory in
            let token = try Self.token(refusal.token)
            let checked = await thrownError { try await reader.isAccountLinked(using: token) }
            #expect(readerCode(checked) == refusal.code, "\(String(describing: checked))")
            let linked = await thrownError { try await reader.linkAccount(using: token) }
            #expect(readerCode(linked) == refusal.code)
            let session = await thrownError { try await PaymentCardReaderSession(reader: reader, token: token) }
            #expect(readerCode(session) == refusal.code)
            // Nothing was linked.
            #expect(!directory.entries().contains("account-link.json"))
            // The message says what was wrong without echoing the token.
            let description = String(describing: checked)
            #expect(!description.contains(token.rawValue))
        }
    }

    @Test func reasonsNameTheCheckThatFailed() async throws {
        try await PaymentHarness.withReader(cards: ["pay-visa-qvsdc.json"]) { reader, _ in
            var reasons: [String: String] = [:]
            for name in [
                "algNone", "hs256WithPublicKey", "badSignature", "wrongAudience", "wrongIssuer", "notYetValid",
                "missingMerchant",
            ] {
                let token = try Self.token(name)
                let error = await thrownError { try await reader.isAccountLinked(using: token) }
                reasons[name] = (error as? PaymentCardReaderError)?.reason ?? ""
            }
            #expect(reasons["algNone"]?.contains("algorithmNotAllowed") == true)
            #expect(reasons["hs256WithPublicKey"]?.contains("algorithmNotAllowed") == true)
            #expect(reasons["badSignature"]?.contains("invalidSignature") == true)
            #expect(reasons["wrongAudience"]?.contains("wrongAudience") == true)
            #expect(reasons["wrongIssuer"]?.contains("wrongIssuer") == true)
            #expect(reasons["notYetValid"]?.contains("notYetValid") == true)
            #expect(reasons["missingMerchant"]?.contains("merchant_id") == true)
        }
    }

    /// A valid token of another merchant than the linked one is no link: `isAccountLinked` says no, reads and
    /// `prepare` throw `accountNotLinked`, `linkAccount` refuses to replace the link, `relinkAccount` does.
    @Test func wrongMerchantIsNotLinked() async throws {
        try await PaymentHarness.withReader(cards: ["pay-visa-qvsdc.json"]) { reader, _ in
            let linked = try Self.token("valid")
            let other = try Self.token("otherMerchant")
            try await reader.linkAccount(using: linked)
            let session = try await reader.prepare(using: linked)
            #expect(try await reader.isAccountLinked(using: other) == false)
            let prepared = await thrownError { try await reader.prepare(using: other) }
            #expect(readerCode(prepared) == .accountNotLinked)
            let otherSession = try await PaymentCardReaderSession(reader: reader, token: other)
            let read = await thrownError { try await otherSession.readPaymentCard(PaymentHarness.purchase()) }
            #expect(readerCode(read) == .accountNotLinked)
            let link = await thrownError { try await reader.linkAccount(using: other) }
            #expect(readerCode(link) == .accountAlreadyLinked)
            try await reader.relinkAccount(using: other)
            #expect(try await reader.isAccountLinked(using: other))
            #expect(try await reader.linkedAccount()?.merchantID == "merchant-999")
            // The first merchant's session is no longer linked.
            let stale = await thrownError { try await session.readPaymentCard(PaymentHarness.purchase()) }
            #expect(readerCode(stale) == .accountNotLinked)
        }
    }

    /// `"*"` is accepted only where the manifest lists it, and then only as the token's literal audience.
    @Test func wildcardAudienceNeedsTheManifestsConsent() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let manifest = try PaymentHarness.manifest(
            readers: [PaymentHarness.reader("r1", cards: ["pay-visa-qvsdc.json"])],
            dataDirectory: directory.path,
            payment: PaymentHarness.paymentBlock(extra: #""allowedAudiences": ["*"]"#)
        )
        try await PaymentHarness.withKernel(manifest) { kernel in
            let reader = PaymentCardReader(kernel: kernel)
            #expect(try await reader.isAccountLinked(using: try Self.token("wildcardAudience")) == false)
            try await reader.linkAccount(using: try Self.token("wildcardAudience"))
            #expect(try await reader.isAccountLinked(using: try Self.token("valid")))
            let wrong = await thrownError { try await reader.isAccountLinked(using: try Self.token("wrongAudience")) }
            #expect(readerCode(wrong) == .invalidReaderToken)
        }
    }

    @Test func emptyTokenIsItsOwnError() async throws {
        try await PaymentHarness.withReader(cards: ["pay-visa-qvsdc.json"]) { reader, _ in
            let error = await thrownError { try await reader.isAccountLinked(using: .init(rawValue: "  ")) }
            #expect(readerCode(error) == .emptyReaderToken)
        }
    }

    @Test func tokenDescriptionsAreRedacted() throws {
        let token = try Self.token("valid")
        #expect(!token.description.contains(token.rawValue))
        let signature = try #require(token.rawValue.split(separator: ".").last)
        #expect(!String(describing: token).contains(signature))
        var dumped = ""
        dump(token, to: &dumped)
        #expect(!dumped.contains(signature))
    }

    /// Our issuer's tokens are read by pyjwt as the processor would check them.
    @Test func pyjwtAcceptsTokensOurIssuerMakes() throws {
        let token = try PaymentHarness.token(merchant: "merchant-042")
        let decoded = try Python.runJSON(
            """
            import json, sys, jwt
            claims = jwt.decode(sys.argv[1], open(sys.argv[2], "rb").read(), algorithms=["ES256"],
                                audience=sys.argv[3], issuer=sys.argv[4], options={"require": ["exp", "iat"]})
            print(json.dumps(claims))
            """,
            arguments: [token.rawValue, Package.publicKeyFile, PaymentHarness.readerIdentifier, PaymentHarness.issuer]
        )
        #expect(decoded.string("merchant_id") == "merchant-042")
        #expect(decoded.string("aud") == PaymentHarness.readerIdentifier)
    }
}
