import Foundation
import Proxima
import ProximaCore
@_spi(KnownAnswerTests) import ProximaCrypto
import ProximaProcessorSandbox
import ProximaTestSupport
import Testing

@testable import PaymentCapability

/// Envelope version 2 (HPKE auth mode with the reader key, `Docs/card-data-envelope.md` §8): the document's worked
/// example (computed with Python `cryptography` from RFC 9180 alone) reproduced byte for byte by Proxima's HPKE,
/// opened only with the registered reader key, and real envelopes opened by `pyhpke` in auth mode.
@Suite struct CardDataEnvelopeV2Tests {
    typealias Doc = CardDataEnvelopeTests

    static func readerKey() throws -> P256.PrivateKey {
        let pem = try String(contentsOfFile: Package.configDirectory + "/keys/reader-test-private.pem", encoding: .utf8)
        return try P256.PrivateKey(pemRepresentation: pem)
    }

    @Test func workedExampleIsReproducedByteForByte() throws {
        let reader = try Self.readerKey()
        #expect(reader.rawRepresentation == (try Doc.hexExample("v2-skS")))
        #expect(reader.publicKey.x963Representation == (try Doc.hexExample("v2-pkS")))
        #expect(ReaderKeyStore.keyID(of: reader.publicKey) == (try Doc.hexExample("v2-keyid")))
        let ephemeral = try P256.PrivateKey(rawRepresentation: try Doc.hexExample("v2-skE"))
        var sender = try HPKE.Sender(
            recipientKey: PaymentHarness.privateKey.publicKey,
            info: CardDataEnvelope.authenticatedInfo,
            senderKey: reader,
            ephemeralKey: ephemeral
        )
        let v1 = try CardDataEnvelope.open(
            try Doc.example("paymentCardData"),
            privateKey: PaymentHarness.privateKey,
            now: Doc.readAt
        )
        #expect(v1.senderKeyID == nil)
        #expect(v1.jsonText(version: 2) == (try Doc.example("v2-plaintext", keepText: true)))
        let envelope = try CardDataEnvelope.seal(v1, sender: &sender, readerPublicKey: reader.publicKey)
        #expect(Array(envelope[..<114]) == (try Doc.hexExample("v2-header")))
        #expect(Array(envelope[114...]) == (try Doc.hexExample("v2-ciphertext")))
        #expect(Base64.encode(envelope) == (try Doc.example("v2-paymentCardData")))
    }

    @Test func workedExampleOpensOnlyWithTheRegisteredReaderKey() throws {
        let text = try Doc.example("v2-paymentCardData")
        let reader = try Self.readerKey().publicKey
        let opened = try CardDataEnvelope.open(
            text,
            privateKey: PaymentHarness.privateKey,
            readerKeys: [PaymentHarness.privateKey.publicKey, reader],
            now: Doc.readAt
        )
        #expect(opened.senderKeyID == ReaderKeyStore.keyID(of: reader))
        #expect(opened.amount == "29.99")
        #expect(opened.formatted().contains("authenticated, envelope v2"))

        func code(_ keys: [P256.PublicKey], _ bytes: [UInt8]? = nil) -> String {
            do {
                if let bytes {
                    _ = try CardDataEnvelope.open(
                        bytes,
                        privateKey: PaymentHarness.privateKey,
                        readerKeys: keys,
                        now: Doc.readAt
                    )
                } else {
                    _ = try CardDataEnvelope.open(
                        text,
                        privateKey: PaymentHarness.privateKey,
                        readerKeys: keys,
                        now: Doc.readAt
                    )
                }
                return "opened"
            } catch let error as CardDataEnvelopeError {
                return "\(error.code)"
            } catch { return "\(error)" }
        }
        #expect(code([]) == "unknownSender")
        #expect(code([PaymentHarness.privateKey.publicKey]) == "unknownSender")
        // A key id that names the reader while another key sealed it: the HPKE open fails.
        var envelope = try #require(Base64.decode(text))
        let impostor = try P256.PrivateKey()
        let forged = try CardDataEnvelope.seal(
            try CardDataEnvelope.open(
                text,
                privateKey: PaymentHarness.privateKey,
                readerKeys: [reader],
                now: Doc.readAt
            ),
            to: PaymentHarness.privateKey.publicKey,
            readerKey: impostor
        )
        var relabelled = forged
        relabelled.replaceSubrange(78..<110, with: ReaderKeyStore.keyID(of: reader))
        #expect(code([reader], relabelled) == "decryptionFailed")
        #expect(code([reader, impostor.publicKey], forged) == "opened")
        // Any changed byte of the header or ciphertext.
        for offset in [4, 20, 90, 112, 200, envelope.count - 1] {
            envelope[offset] ^= 0x01
            #expect(code([reader], envelope) != "opened", "byte \(offset)")
            envelope[offset] ^= 0x01
        }
        #expect(code([reader], envelope) == "opened")
    }

    @Test func aBaseModeSealOfTheProcessorKeyAloneIsNoVersion2() throws {
        // What anyone with the processor's public key can make: a version 1 envelope, reported unauthenticated.
        let contents = CardDataEnvelopeTests.sampleContents()
        let v1 = try CardDataEnvelope.seal(contents, to: PaymentHarness.privateKey.publicKey)
        let opened = try CardDataEnvelope.open(v1, privateKey: PaymentHarness.privateKey)
        #expect(opened.senderKeyID == nil)
        #expect(opened.formatted().contains("not authenticated (envelope v1)"))
    }

    /// A real read writes version 2 with the kernel's reader key (created in the data directory), and the
    /// document's Python opener (`pyhpke` auth mode) opens it with that key's PEM.
    @Test(.enabled(if: Python.isAvailable, "python3 is not on PATH"))
    func readsWriteVersion2ThatPyhpkeOpens() async throws {
        try await PaymentHarness.withReader(cards: ["pay-visa-qvsdc.json"]) { reader, _ in
            let session = try await PaymentHarness.preparedSession(reader)
            let result = try await session.readPaymentCard(PaymentHarness.purchase("7.50", "EUR"))
            let paymentCardData = try #require(result.paymentCardData)
            let envelope = try #require(Base64.decode(paymentCardData))
            #expect(envelope[4] == 2)
            let readerKey = try ReaderKeyStore(
                settings: try PaymentSettings(manifest: try #require(reader.kernel).manifest),
                dataDirectory: try #require(reader.kernel).manifest.dataDirectory
            ).load()
            #expect(Array(envelope[78..<110]) == ReaderKeyStore.keyID(of: readerKey.publicKey))
            let publicFile = NSTemporaryDirectory() + "proxima-reader-\(UUID().uuidString).pem"
            _ = FileManager.default.createFile(
                atPath: publicFile,
                contents: Data(readerKey.publicKey.pemRepresentation.utf8)
            )
            defer { try? FileManager.default.removeItem(atPath: publicFile) }
            // The harness configures the TEST reader key (capabilities.payment.readerKey).
            #expect(PaymentHarness.readerKeys == [readerKey.publicKey])
            let document = try String(contentsOfFile: PackageFiles.path("Docs/card-data-envelope.md"), encoding: .utf8)
            let start = try #require(document.range(of: "```python\n"))
            let end = try #require(document[start.upperBound...].range(of: "```"))
            let opener = String(document[start.upperBound..<end.lowerBound])
            let payload = try Python.runJSON(
                opener + """

                    import sys
                    print(json.dumps(open_payment_card_data(sys.argv[1], open(sys.argv[2], "rb").read(),
                                                            [open(sys.argv[3], "rb").read()])))
                    """,
                arguments: [paymentCardData, Package.privateKeyFile, publicFile]
            )
            #expect(payload["v"] == .integer(2))
            #expect(payload.string("txn") == result.id)
            #expect(payload.string("amount") == "7.50")
            #expect(payload["emv"]?.string("9F02") == "000000000750")
            // The wrong reader key is refused by Python too.
            #expect(throws: (any Error).self) {
                try Python.runJSON(
                    opener + """

                        import sys
                        print(json.dumps(open_payment_card_data(sys.argv[1], open(sys.argv[2], "rb").read(),
                                                                [open(sys.argv[3], "rb").read()])))
                        """,
                    arguments: [paymentCardData, Package.privateKeyFile, Package.publicKeyFile]
                )
            }
        }
    }

    /// Without `readerKey` the kernel creates `<dataDirectory>/reader-key.pem` once, mode 0600, and keeps it.
    @Test func defaultReaderKeyIsCreatedOnceInTheDataDirectory() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let manifest = try PaymentHarness.manifest(
            readers: [PaymentHarness.reader("r1", cards: ["pay-visa-qvsdc.json"])],
            dataDirectory: directory.path + "/var",
            payment:
                #"{ "processorPublicKey": "keys/psp-test-public.pem", "tokenIssuer": "https://psp.example.test", "readerIdentifier": "proxima-test-001" }"#
        )
        let settings = try PaymentSettings(manifest: manifest)
        let store = ReaderKeyStore(settings: settings, dataDirectory: manifest.dataDirectory)
        #expect(store.path == directory.path + "/var/reader-key.pem")
        let first = try store.loadOrCreate()
        let second = try store.loadOrCreate()
        #expect(first.rawRepresentation == second.rawRepresentation)
        let attributes = try FileManager.default.attributesOfItem(atPath: store.path)
        #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o600)
        // The sandbox processor registers the kernel's own reader key.
        let sandbox = try PaymentProcessorSandbox(manifest: manifest, privateKeyFile: Package.privateKeyFile)
        #expect(sandbox.readerKeys == [first.publicKey])
    }
}
