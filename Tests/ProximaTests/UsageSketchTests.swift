import Foundation
@_spi(Testing) import Proxima
import ProximaKernel
import ProximaProcessorSandbox
import Testing

@testable import PaymentCapability

/// The usage sketch and the issue's snippet compiled and run as written, on `PaymentCardReader()` with no
/// arguments: the process-wide default kernel, pointed here at a manifest with a simulated reader and a temporary
/// data directory before any default reader exists. The configuration is set in code rather than through
/// `PROXIMA_CONFIG`: the environment is the whole test process's, and other suites start child processes.
///
/// Serialized: both tests share the one default kernel and its simulated reader.
@Suite(.serialized) struct UsageSketchTests {
    /// Writes the manifest and makes it the default kernel's, once per process; returns its folder.
    static let environment: String = {
        let directory = NSTemporaryDirectory() + "proxima-usage-sketch-\(UUID().uuidString.lowercased())"
        try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let cards = Package.configDirectory + "/cards"
        let manifest = """
            {
              "schemaVersion": 1,
              "dataDirectory": "\(directory)/var",
              "plugins": [ { "id": "sim", "type": "simulator", "config": { "airTime": false, "readers": [
                { "id": "counter-1", "cards": ["\(cards)/pay-visa-qvsdc.json", "\(cards)/pay-mastercard-mchip.json"],
                  "arrival": { "pattern": "immediate" } } ] } } ],
              "lanes": [ { "id": "checkout", "readers": ["counter-1"] } ],
              "capabilities": { "payment": {
                "processorPublicKey": "\(Package.publicKeyFile)", "tokenIssuer": "https://psp.example.test",
                "readerIdentifier": "proxima-sketch-001" },
                "storeAndForward": { "maxStoredAmount": { "USD": "500.00" } } }
            }
            """
        let path = directory + "/proxima.json"
        _ = FileManager.default.createFile(atPath: path, contents: Data(manifest.utf8))
        let configured = PaymentCardReader.setDefaultConfiguration(manifestPath: path, lane: "checkout")
        precondition(configured, "a default PaymentCardReader was created before the usage sketch tests")
        return directory
    }()

    /// The processor sandbox of the default configuration, with the TEST key.
    static func sandbox() throws -> PaymentProcessorSandbox {
        let manifest = try Manifest.load(contentsOf: environment + "/proxima.json", registry: BuiltinPlugins.registry)
        return try PaymentProcessorSandbox(manifest: manifest, privateKeyFile: Package.privateKeyFile)
    }

    @Test func issueSnippetRunsAsWritten() async throws {
        _ = Self.environment
        let pspProvidedJWT = try Self.sandbox().issueToken(merchantID: "sketch-merchant").rawValue

        // The issue's snippet, as written for iOS.
        let reader = PaymentCardReader()
        let token = PaymentCardReader.Token(rawValue: pspProvidedJWT)
        if try await !reader.isAccountLinked(using: token) {
            try await reader.linkAccount(using: token)
        }
        let session = try await PaymentCardReaderSession(reader: reader, token: token)
        try await session.prepare()
        let request = PaymentCardTransactionRequest(amount: Decimal(29.99), currencyCode: "USD", type: .purchase)
        let result: PaymentCardReadResult = try await session.readPaymentCard(request)
        // Send result.paymentCardData to your PSP for processing

        #expect(result.outcome == .success)
        #expect(result.lane == "checkout")
        #expect(result.device == "counter-1")
        #expect(try await reader.readerIdentifier == "proxima-sketch-001")
        let contents = try Self.sandbox().open(try #require(result.paymentCardData))
        #expect(contents.amount == "29.99")
        #expect(contents.merchantID == "sketch-merchant")
        #expect(contents.readerIdentifier == "proxima-sketch-001")
        #expect(FileManager.default.fileExists(atPath: Self.environment + "/var/account-link.json"))
    }

    /// The sketch's store-and-forward flow as written, the PSP exchange filled in where its comment stands: the
    /// processor opens `batch.data` and returns its deletion token, which the app records; the sketch's
    /// `delete(using: batch.deletionToken)` then deletes the batch. Without a recorded processor token the same
    /// call refuses and nothing is lost.
    @Test func storeAndForwardSketchRunsAsWritten() async throws {
        _ = Self.environment
        let pspProvidedJWT = try Self.sandbox().issueToken(merchantID: "sketch-merchant").rawValue
        let reader = PaymentCardReader()
        let token = PaymentCardReader.Token(rawValue: pspProvidedJWT)
        if try await !reader.isAccountLinked(using: token) {
            try await reader.linkAccount(using: token)
        }
        let request = PaymentCardTransactionRequest(amount: Decimal(29.99), currencyCode: "USD", type: .purchase)

        // The sketch, as written.
        let sfSession = try await StoreAndForwardPaymentCardReaderSession(
            reader: reader,
            token: token
        )
        try await sfSession.prepare()

        // Transactions are stored locally
        let result = try await sfSession.readPaymentCard(request)

        // Later, when online: retrieve and send batches
        let store = PaymentCardReaderStore()
        let batches: [StoreAndForwardBatch] = try await store.allBatches()

        // Without the processor's token, the sketch's delete refuses and keeps every read.
        for batch in batches {
            await #expect(throws: PaymentCardReaderStore.StoreError.self) {
                try await store.delete(using: batch.deletionToken)
            }
        }
        #expect(try await store.fetchStoredPaymentCardReadResultCount() >= 1)

        for batch in batches {
            // Send batch.data to PSP
            let opened = try Self.sandbox().openBatch(Array(batch.data))
            #expect(opened.reads.contains { $0.transactionID == result.id && $0.amount == "29.99" })
            try await store.record(try Self.sandbox().issueDeletionToken(for: Array(batch.data)))
            // On success, delete the batch
            try await store.delete(using: batch.deletionToken)
        }

        #expect(batches.count == 1)
        #expect(batches.first?.payments.contains { $0.id == result.id } == true)
        #expect(try await store.fetchStoredPaymentCardReadResultCount() == 0)
        #expect(try await store.allBatches().isEmpty)
    }

    /// The sketch's error handling, with a statement in each case: its cases exist and its patterns compile.
    @Test func sketchErrorHandlingCompilesAndCatches() async throws {
        _ = Self.environment
        let reader = PaymentCardReader()
        let token = try Self.sandbox().issueToken(merchantID: "sketch-merchant")
        if try await !reader.isAccountLinked(using: token) {
            try await reader.linkAccount(using: token)
        }
        let session = try await PaymentCardReaderSession(reader: reader, token: token)

        func handled(_ request: PaymentCardTransactionRequest) async -> String {
            do {
                try await session.readPaymentCard(request)
                return "read"
            } catch let error as PaymentCardReaderError {
                switch error {
                case .notAllowed:
                    return "notAllowed"
                case .unsupported:
                    return "unsupported"
                case .networkError:
                    return "networkError"
                case .invalidReaderToken:
                    return "invalidReaderToken"
                case .readerBusy:
                    return "readerBusy"
                case .backgrounded:
                    return "backgrounded"
                default:
                    return "other reader error"
                }
            } catch let error as PaymentCardReaderSession.ReadError {
                switch error {
                case .cancelled:
                    return "cancelled"
                case .invalidAmount:
                    return "invalidAmount"
                case .notReady:
                    return "notReady"
                default:
                    return "other read error"
                }
            } catch {
                return "\(error)"
            }
        }
        let request = PaymentCardTransactionRequest(amount: Decimal(29.99), currencyCode: "USD", type: .purchase)
        #expect(await handled(request) == "notReady")
        try await session.prepare()
        #expect(
            await handled(PaymentCardTransactionRequest(amount: -1, currencyCode: "USD", type: .purchase))
                == "invalidAmount"
        )
        #expect(await handled(request) == "read")

        // `catch PaymentCardReaderError.notAllowed` and friends, as enum case patterns.
        do {
            _ = try await PaymentCardReaderSession(reader: reader, token: .init(rawValue: "x.y.z"))
            Issue.record("a malformed token was accepted")
        } catch PaymentCardReaderError.notAllowed {
            Issue.record("expected invalidReaderToken, got notAllowed")
        } catch PaymentCardReaderError.invalidReaderToken {
            // expected
        }
    }
}
