import Foundation
import Proxima
import ProximaCore
import ProximaKernel
import Testing

@testable import PaymentCapability

/// The manifest's `capabilities.payment` block: validated strictly by the registered capability type, errors
/// naming JSON paths.
@Suite struct PaymentSettingsTests {
    static func errors(payment: String) -> [ManifestDiagnostic] {
        let text = PaymentHarness.manifestText(
            readers: [PaymentHarness.reader("r1", cards: ["pay-visa-qvsdc.json"])],
            dataDirectory: "/tmp/unused",
            payment: payment
        )
        do {
            _ = try Manifest.parse(
                Array(text.utf8),
                baseDirectory: Package.configDirectory,
                registry: BuiltinPlugins.registry
            )
            return []
        } catch let error as ManifestError {
            return error.errors
        } catch {
            Issue.record("unexpected \(error)")
            return []
        }
    }

    @Test func defaultManifestCarriesValidPaymentSettings() throws {
        let manifest = try Manifest.load(
            contentsOf: Package.configDirectory + "/proxima.json",
            registry: BuiltinPlugins.registry
        )
        let settings = try PaymentSettings(manifest: manifest)
        #expect(settings.readerIdentifier == "proxima-store-001")
        #expect(settings.tokenIssuer == "https://psp.example.test")
        #expect(settings.merchantIdClaim == "merchant_id")
        #expect(settings.acceptedAudiences == ["proxima-store-001"])
        #expect(settings.cardDataTTL == .seconds(60))
        #expect(settings.processorPublicKeyPath == Package.publicKeyFile)
        #expect(settings.terminal.terminalIdentification == "PROXIMA1")
        #expect(settings.terminal.merchantCategoryCode == 5999)
        #expect(settings.terminal.countryCode == 840)
        #expect(settings.terminal.merchantNameAndLocation == "Proxima Test Store, Springfield")
        #expect(manifest.capabilities["identity"] != nil)
        // Eight simulated readers tap the payment test cards, one (the ID desk's) the TEST mDL holder.
        #expect(manifest.declaredReaders.count == 9)
        #expect(manifest.capabilities["mobileDocument"] != nil)
    }

    @Test func fullBlockIsRead() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let manifest = try PaymentHarness.manifest(
            readers: [PaymentHarness.reader("r1", cards: ["pay-visa-qvsdc.json"])],
            dataDirectory: directory.path,
            payment: """
                { "processorPublicKey": "\(Package.publicKeyFile)", "tokenIssuer": "https://psp.example.test",
                  "merchantIdClaim": "mid", "allowedAudiences": ["store-7", "*"], "readerIdentifier": "lane:7_a.b-c",
                  "terminal": { "countryCode": 250, "merchantCategoryCode": "5411", "merchantNameAndLocation": "Shop",
                                "terminalIdentification": "TERM0007" },
                  "cardDataTTLSeconds": 30, "comment": "ignored" }
                """
        )
        let settings = try PaymentSettings(manifest: manifest)
        #expect(settings.merchantIdClaim == "mid")
        #expect(settings.acceptedAudiences == ["lane:7_a.b-c", "store-7", "*"])
        #expect(settings.terminal.countryCode == 250)
        #expect(settings.terminal.merchantCategoryCode == 5411)
        #expect(settings.cardDataTTL == .seconds(30))
    }

    struct Broken: Sendable, CustomTestStringConvertible {
        var name: String
        var payment: String
        var path: String
        var message: String
        var testDescription: String { name }
    }

    static let key = #""processorPublicKey": "keys/psp-test-public.pem""#
    static let issuer = #""tokenIssuer": "https://psp.example.test""#
    static let reader = #""readerIdentifier": "proxima-test-001""#

    static let broken: [Broken] = [
        .init(name: "not an object", payment: "[]", path: "capabilities.payment", message: "expected an object"),
        .init(
            name: "missing key",
            payment: "{ \(issuer), \(reader) }",
            path: "capabilities.payment",
            message: "processorPublicKey"
        ),
        .init(
            name: "missing issuer",
            payment: "{ \(key), \(reader) }",
            path: "capabilities.payment",
            message: "tokenIssuer"
        ),
        .init(
            name: "missing reader identifier",
            payment: "{ \(key), \(issuer) }",
            path: "capabilities.payment",
            message: "readerIdentifier"
        ),
        .init(
            name: "unknown member",
            payment: "{ \(key), \(issuer), \(reader), \"tokenIsuer\": \"x\" }",
            path: "capabilities.payment.tokenIsuer",
            message: "unknown member"
        ),
        .init(
            name: "no such key file",
            payment: #"{ "processorPublicKey": "keys/nope.pem", \#(issuer), \#(reader) }"#,
            path: "capabilities.payment.processorPublicKey",
            message: "no such file"
        ),
        .init(
            name: "device instead of key",
            payment: #"{ "processorPublicKey": "/dev/zero", \#(issuer), \#(reader) }"#,
            path: "capabilities.payment.processorPublicKey",
            message: "not a regular file"
        ),
        .init(
            name: "directory instead of key",
            payment: #"{ "processorPublicKey": "keys", \#(issuer), \#(reader) }"#,
            path: "capabilities.payment.processorPublicKey",
            message: "not a regular file"
        ),
        .init(
            name: "private key instead of public",
            payment: #"{ "processorPublicKey": "keys/psp-test-private.pem", \#(issuer), \#(reader) }"#,
            path: "capabilities.payment.processorPublicKey",
            message: "not a P-256 public key"
        ),
        .init(
            name: "card profile instead of key",
            payment: #"{ "processorPublicKey": "cards/pay-visa-qvsdc.json", \#(issuer), \#(reader) }"#,
            path: "capabilities.payment.processorPublicKey",
            message: "not a P-256 public key"
        ),
        .init(
            name: "bad reader identifier",
            payment: #"{ \#(key), \#(issuer), "readerIdentifier": "has space" }"#,
            path: "capabilities.payment.readerIdentifier",
            message: "not a reader identifier"
        ),
        .init(
            name: "wildcard reader identifier",
            payment: #"{ \#(key), \#(issuer), "readerIdentifier": "*" }"#,
            path: "capabilities.payment.readerIdentifier",
            message: "not a reader identifier"
        ),
        .init(
            name: "audience not a string",
            payment: #"{ \#(key), \#(issuer), \#(reader), "allowedAudiences": ["a", 3] }"#,
            path: "capabilities.payment.allowedAudiences[1]",
            message: "expected a string"
        ),
        .init(
            name: "duplicate audience",
            payment: #"{ \#(key), \#(issuer), \#(reader), "allowedAudiences": ["*", "*"] }"#,
            path: "capabilities.payment.allowedAudiences[1]",
            message: "listed twice"
        ),
        .init(
            name: "ttl out of range",
            payment: #"{ \#(key), \#(issuer), \#(reader), "cardDataTTLSeconds": 0 }"#,
            path: "capabilities.payment.cardDataTTLSeconds",
            message: "out of range"
        ),
        .init(
            name: "terminal id too long",
            payment: #"{ \#(key), \#(issuer), \#(reader), "terminal": { "terminalIdentification": "TOOLONG99" } }"#,
            path: "capabilities.payment.terminal.terminalIdentification",
            message: "exactly 8"
        ),
        .init(
            name: "category not digits",
            payment: #"{ \#(key), \#(issuer), \#(reader), "terminal": { "merchantCategoryCode": "59x9" } }"#,
            path: "capabilities.payment.terminal.merchantCategoryCode",
            message: "four-digit"
        ),
        .init(
            name: "category as a number",
            payment: #"{ \#(key), \#(issuer), \#(reader), "terminal": { "merchantCategoryCode": 5999 } }"#,
            path: "capabilities.payment.terminal.merchantCategoryCode",
            message: "expected a string"
        ),
        .init(
            name: "unknown terminal member",
            payment: #"{ \#(key), \#(issuer), \#(reader), "terminal": { "country": 840 } }"#,
            path: "capabilities.payment.terminal.country",
            message: "unknown member"
        ),
    ]

    @Test(arguments: broken)
    func brokenBlocksNameTheirPath(_ test: Broken) {
        let errors = Self.errors(payment: test.payment)
        #expect(errors.count == 1, "\(errors)")
        #expect(errors.first?.path == test.path, "\(errors)")
        #expect(errors.first?.message.contains(test.message) == true, "\(errors)")
    }

    @Test func readerWithoutPaymentSettingsIsNotAllowed() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let manifest = try PaymentHarness.manifest(
            readers: [PaymentHarness.reader("r1", cards: ["pay-visa-qvsdc.json"])],
            dataDirectory: directory.path,
            payment: nil
        )
        try await PaymentHarness.withKernel(manifest) { kernel in
            let reader = PaymentCardReader(kernel: kernel)
            let token = try PaymentHarness.token()
            let errors = [
                await thrownError { try await reader.readerIdentifier },
                await thrownError { try await reader.isAccountLinked(using: token) },
                await thrownError { try await reader.linkAccount(using: token) },
                await thrownError { try await reader.prepare(using: token) },
            ]
            #expect(errors.map(readerCode) == Array(repeating: .notAllowed, count: 4))
            #expect((errors[0] as? PaymentCardReaderError)?.reason.contains("capabilities.payment") == true)
        }
    }

    @Test func unknownLaneIsUnsupported() async throws {
        try await PaymentHarness.withReader(cards: ["pay-visa-qvsdc.json"]) { reader, _ in
            let other = PaymentCardReader(kernel: try #require(reader.kernel), lane: "lane-9")
            let error = await thrownError { try await other.prepare(using: try PaymentHarness.token()) }
            #expect(readerCode(error) == .unsupported)
            #expect((error as? PaymentCardReaderError)?.reason.contains("lane-9") == true)
            #expect(try await reader.readerIdentifier == PaymentHarness.readerIdentifier)
            #expect(reader.lane == "lane-1")
        }
    }
}
