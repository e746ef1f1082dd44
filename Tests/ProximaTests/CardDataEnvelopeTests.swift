import Foundation
import Proxima
import ProximaCore
@_spi(KnownAnswerTests) import ProximaCrypto
import ProximaTestSupport
import Testing

@testable import PaymentCapability

/// The card data envelope: the worked example of `Docs/card-data-envelope.md` (made with pyhpke) opened and
/// re-sealed byte for byte, envelopes of real reads opened by Python, and every malformation refused.
@Suite struct CardDataEnvelopeTests {
    /// The fenced block after `<!-- example:NAME -->` in the document, whitespace removed unless `keepText`.
    static func example(_ name: String, keepText: Bool = false) throws -> String {
        let document = try String(contentsOfFile: PackageFiles.path("Docs/card-data-envelope.md"), encoding: .utf8)
        let marker = try #require(document.range(of: "<!-- example:\(name) -->"), "no example \(name) in the doc")
        let rest = document[marker.upperBound...]
        let open = try #require(rest.range(of: "```\n"))
        let close = try #require(rest[open.upperBound...].range(of: "\n```"))
        let block = String(rest[open.upperBound..<close.lowerBound])
        return keepText ? block : block.filter { !$0.isWhitespace }
    }

    static func hexExample(_ name: String) throws -> [UInt8] {
        try #require([UInt8](hex: try example(name)), "example \(name) is not hex")
    }

    static let readAt = Date(timeIntervalSince1970: 1_773_482_400)

    @Test func workedExampleOpensWithTheTestKey() throws {
        #expect(HarnessKeys.scalar == (try Self.hexExample("skR")))
        #expect(PaymentHarness.privateKey.publicKey.x963Representation == (try Self.hexExample("pkR")))
        let paymentCardData = try Self.example("paymentCardData")
        let contents = try CardDataEnvelope.open(
            paymentCardData,
            privateKey: PaymentHarness.privateKey,
            now: Self.readAt.addingTimeInterval(30)
        )
        #expect(contents.transactionID == "0d4c3a2e-5f1b-4c8e-9a7d-2b6e1f3c4a5d")
        #expect(contents.kind == .purchase)
        #expect(contents.amount == "29.99")
        #expect(contents.currencyCode == "USD")
        #expect(contents.merchantID == "merchant-001")
        #expect(contents.readerIdentifier == "proxima-store-001")
        #expect(contents.lane == "lane-1")
        #expect(contents.device == "sim-1")
        #expect(contents.readAt == Self.readAt)
        #expect(contents.expiresAt == Self.readAt.addingTimeInterval(60))
        #expect(contents.outcome == "onlineRequest")
        #expect(contents.cardholderVerification == "noCVM")
        #expect(contents[0x5A] == [UInt8](hex: "4761739001010119"))
        #expect(contents[0x9F02] == [UInt8](hex: "000000002999"))
        #expect(contents.emv.count == 27)
        // Our canonical writer produces the document's plaintext byte for byte.
        #expect(contents.jsonText == (try Self.example("plaintext", keepText: true)))
        // The header and ciphertext blocks are the envelope.
        let envelope = try #require(Base64.decode(paymentCardData))
        #expect(Array(envelope[..<82]) == (try Self.hexExample("header")))
        #expect(Array(envelope[82...]) == (try Self.hexExample("ciphertext")))
        // Expired at expiresAt exactly.
        let expired = #expect(throws: CardDataEnvelopeError.self) {
            try CardDataEnvelope.open(paymentCardData, privateKey: PaymentHarness.privateKey, now: contents.expiresAt)
        }
        #expect(expired?.code == .expired)
    }

    /// Sealing the example's plaintext with the example's ephemeral key reproduces pyhpke's envelope exactly.
    @Test func sealingWithTheExampleEphemeralKeyReproducesTheDocument() throws {
        let ephemeral = try P256.PrivateKey(rawRepresentation: try Self.hexExample("skE"))
        let plaintext = Array(try Self.example("plaintext", keepText: true).utf8)
        var sender = try HPKE.Sender(
            recipientKey: PaymentHarness.privateKey.publicKey,
            info: CardDataEnvelope.info,
            ephemeralKey: ephemeral
        )
        let header = CardDataEnvelope.header(enc: sender.encapsulatedKey, ciphertextCount: plaintext.count + 16)
        #expect(header == (try Self.hexExample("header")))
        let ciphertext = try sender.seal(plaintext, aad: header)
        #expect(ciphertext == (try Self.hexExample("ciphertext")))
        #expect(Base64.encode(header + ciphertext) == (try Self.example("paymentCardData")))
    }

    static func sampleContents(readAt: Date = Date()) -> CardDataEnvelope.Contents {
        CardDataEnvelope.Contents(
            transactionID: "txn-1",
            kind: .refund,
            amount: "1.250",
            currencyCode: "KWD",
            merchantID: "merchant-ü",
            readerIdentifier: "proxima-test-001",
            lane: "lane-1",
            device: "r1",
            readAt: readAt,
            expiresAt: readAt.addingTimeInterval(60),
            outcome: "onlineRequest",
            cardholderVerification: "onlinePIN",
            emv: [
                TLV(tag: 0x5A, value: [0x47, 0x61, 0x73, 0x90, 0x01, 0x01, 0x00, 0x10]),
                TLV(tag: 0x9F02, value: [0, 0, 0, 0, 0x12, 0x50]),
            ]
        )
    }

    @Test func sealedContentsOpenAsTheyWere() throws {
        let contents = Self.sampleContents()
        let envelope = try CardDataEnvelope.seal(contents, to: PaymentHarness.privateKey.publicKey)
        #expect(envelope.count == 82 + contents.jsonText.utf8.count + 16)
        #expect(try CardDataEnvelope.open(envelope, privateKey: PaymentHarness.privateKey) == contents)
        #expect(
            contents.field55 == [
                0x5A, 8, 0x47, 0x61, 0x73, 0x90, 0x01, 0x01, 0x00, 0x10, 0x9F, 0x02, 6, 0, 0, 0, 0, 0x12, 0x50,
            ]
        )
        // Two seals of the same contents differ: a fresh ephemeral key each time.
        #expect(try CardDataEnvelope.seal(contents, to: PaymentHarness.privateKey.publicKey) != envelope)
    }

    struct Damage: Sendable, CustomTestStringConvertible {
        var name: String
        var offset: Int
        var code: String
        var testDescription: String { name }
    }

    @Test(arguments: [
        Damage(name: "magic", offset: 0, code: "malformed"), Damage(name: "version", offset: 4, code: "unsupported"),
        Damage(name: "kem", offset: 6, code: "unsupported"), Damage(name: "kdf", offset: 8, code: "unsupported"),
        Damage(name: "aead", offset: 10, code: "unsupported"),
        Damage(name: "enc length", offset: 12, code: "malformed"),
        Damage(name: "enc", offset: 40, code: "decryptionFailed"),
        Damage(name: "enc prefix", offset: 13, code: "decryptionFailed"),
        Damage(name: "ciphertext length", offset: 81, code: "malformed"),
        Damage(name: "ciphertext", offset: 100, code: "decryptionFailed"),
        Damage(name: "tag", offset: -1, code: "decryptionFailed"),
    ])
    func alteredBytesAreRefused(_ damage: Damage) throws {
        var envelope = try CardDataEnvelope.seal(Self.sampleContents(), to: PaymentHarness.privateKey.publicKey)
        let offset = damage.offset < 0 ? envelope.count + damage.offset : damage.offset
        envelope[offset] ^= 0x01
        let error = #expect(throws: CardDataEnvelopeError.self) {
            try CardDataEnvelope.open(envelope, privateKey: PaymentHarness.privateKey)
        }
        #expect(error?.code.description == damage.code, "\(String(describing: error))")
    }

    @Test func truncatedExtendedWrongKeyAndNonBase64AreRefused() throws {
        let envelope = try CardDataEnvelope.seal(Self.sampleContents(), to: PaymentHarness.privateKey.publicKey)
        func code(_ body: () throws -> CardDataEnvelope.Contents) -> String? {
            do {
                _ = try body()
                return nil
            } catch let error as CardDataEnvelopeError {
                return error.code.description
            } catch {
                return "\(error)"
            }
        }
        let key = PaymentHarness.privateKey
        #expect(code { try CardDataEnvelope.open(Array(envelope.dropLast()), privateKey: key) } == "malformed")
        #expect(code { try CardDataEnvelope.open(envelope + [0], privateKey: key) } == "malformed")
        #expect(code { try CardDataEnvelope.open(Array(envelope.prefix(97)), privateKey: key) } == "malformed")
        #expect(code { try CardDataEnvelope.open([], privateKey: key) } == "malformed")
        #expect(code { try CardDataEnvelope.open("not base64!", privateKey: key) } == "malformed")
        #expect(code { try CardDataEnvelope.open(envelope, privateKey: try P256.PrivateKey()) } == "decryptionFailed")
        // Random bytes after a valid-looking header never crash the opener.
        var generator = SystemRandomNumberGenerator()
        for length in [98, 150, 900] {
            var bytes =
                Array(envelope.prefix(82)) + (82..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
            bytes.replaceSubrange(78..<82, with: [0, 0, UInt8((length - 82) >> 8), UInt8((length - 82) & 0xFF)])
            #expect(code { try CardDataEnvelope.open(bytes, privateKey: key) } == "decryptionFailed")
        }
    }

    /// Payloads that decrypt but are not the documented JSON are refused as `invalidPayload`.
    @Test(arguments: [
        "[]", "{}", #"{"v":2}"#, "not json",
        #"{"v":1,"txn":"t","type":"sale","amount":"1","currency":"USD","merchant":"m","reader":"r","lane":"l","device":"d","readAt":1,"expiresAt":2000000000,"outcome":"o","cvm":"c","emv":{}}"#,
        #"{"v":1,"txn":"t","type":"purchase","amount":"1","currency":"USD","merchant":"m","reader":"r","lane":"l","device":"d","readAt":1,"expiresAt":2000000000,"outcome":"o","cvm":"c","emv":{"ZZ":"00"}}"#,
        #"{"v":1,"txn":"t","type":"purchase","amount":"1","currency":"USD","merchant":"m","reader":"r","lane":"l","device":"d","readAt":1,"expiresAt":2000000000,"outcome":"o","cvm":"c","emv":{"5A":"0 1"}}"#,
        #"{"v":1,"txn":"t","type":"purchase","amount":"1","currency":"USD","merchant":"m","reader":"r","lane":"l","device":"d","readAt":1,"expiresAt":2000000000,"outcome":"o","cvm":"c","emv":{"70":"5A"}}"#,
        #"{"v":1,"txn":"t","type":"purchase","amount":"1","currency":"USD","merchant":"m","reader":"r","lane":"l","device":"d","readAt":1,"expiresAt":2000000000,"outcome":"o","cvm":"c","emv":{},"extra":1}"#,
    ])
    func invalidPayloadsAreRefused(_ payload: String) throws {
        var sender = try HPKE.Sender(recipientKey: PaymentHarness.privateKey.publicKey, info: CardDataEnvelope.info)
        let header = CardDataEnvelope.header(enc: sender.encapsulatedKey, ciphertextCount: payload.utf8.count + 16)
        let envelope = header + (try sender.seal(Array(payload.utf8), aad: header))
        let error = #expect(throws: CardDataEnvelopeError.self) {
            try CardDataEnvelope.open(envelope, privateKey: PaymentHarness.privateKey)
        }
        #expect(error?.code == .invalidPayload, "\(String(describing: error))")
    }

    /// An envelope from a real read, opened by Python (`pyhpke` and `cryptography`) following only the document.
    @Test(.enabled(if: Python.isAvailable, "python3 is not on PATH"))
    func pythonOpensTheEnvelopeOfARead() async throws {
        try await PaymentHarness.withReader(cards: ["pay-mastercard-mchip.json"]) { reader, _ in
            let session = try await PaymentHarness.preparedSession(reader)
            let result = try await session.readPaymentCard(PaymentHarness.purchase("12.34", "EUR"))
            let paymentCardData = try #require(result.paymentCardData)
            // The reader key the processor registered (envelopes are version 2).
            let manifest = try #require(reader.kernel).manifest
            let readerKey = try ReaderKeyStore(
                settings: try PaymentSettings(manifest: manifest),
                dataDirectory: manifest.dataDirectory
            ).load()
            let readerPublicFile = manifest.dataDirectory + "/reader-public.pem"
            _ = FileManager.default.createFile(
                atPath: readerPublicFile,
                contents: Data(readerKey.publicKey.pemRepresentation.utf8)
            )
            let document = try String(contentsOfFile: PackageFiles.path("Docs/card-data-envelope.md"), encoding: .utf8)
            // The opener of the document's section 7, run as written.
            let start = try #require(document.range(of: "```python\n"))
            let end = try #require(document[start.upperBound...].range(of: "```"))
            let opener = String(document[start.upperBound..<end.lowerBound])
            let payload = try Python.runJSON(
                opener + """

                    import sys
                    print(json.dumps(open_payment_card_data(sys.argv[1], open(sys.argv[2], "rb").read(),
                                                            [open(sys.argv[3], "rb").read()])))
                    """,
                arguments: [paymentCardData, Package.privateKeyFile, readerPublicFile]
            )
            let ours = try CardDataEnvelope.open(
                paymentCardData,
                privateKey: PaymentHarness.privateKey,
                readerKeys: [readerKey.publicKey]
            )
            #expect(payload.string("txn") == result.id)
            #expect(payload.string("amount") == "12.34")
            #expect(payload.string("currency") == "EUR")
            #expect(payload.string("type") == "purchase")
            #expect(payload.string("reader") == PaymentHarness.readerIdentifier)
            #expect(payload.string("lane") == "lane-1")
            #expect(payload.string("device") == "r1")
            #expect(payload.string("merchant") == PaymentHarness.merchant)
            #expect(payload["expiresAt"] == .integer(Int64(ours.expiresAt.timeIntervalSince1970)))
            let emv = try #require(payload["emv"])
            #expect(emv.string("5A") == "5413330089010012")
            #expect(emv.string("9F02") == "000000001234")
            #expect(emv.string("5F2A") == "0978")
            #expect(emv.string("84") == "A0000000041010")
            guard case .object(let members) = emv else { throw ProximaError(.malformedData, "emv is no object") }
            #expect(members.map(\.key) == ours.emv.map { $0.tag.bytes.hexString })
        }
    }
}

/// The TEST key's scalar, as the document lists it.
enum HarnessKeys {
    static var scalar: [UInt8] { PaymentHarness.privateKey.rawRepresentation }
}
