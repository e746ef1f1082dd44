import Foundation
import PaymentCapability
import Proxima
import ProximaCore
import ProximaCrypto
import ProximaKernel
import ProximaProcessorSandbox
import ProximaTestSupport
import StoreAndForwardCapability
import Synchronization
import Testing

/// Kernels on the simulator with payment and store and forward configured, and the TEST processor's side.
enum Harness {
    static let issuer = "https://psp.example.test"
    static let readerIdentifier = "proxima-saf-001"
    static let merchant = "merchant-saf"
    static let publicKeyFile = PackageFiles.configDirectory + "/keys/psp-test-public.pem"
    static let privateKeyFile = PackageFiles.configDirectory + "/keys/psp-test-private.pem"

    static let defaultLimits = """
        { "maxTransactionAmount": { "USD": "100.00", "EUR": "100.00" },
          "maxStoredAmount": { "USD": "5000.00", "EUR": "5000.00" }, "maxStoredCount": 1000 }
        """

    /// A manifest with `lanes` lanes, one simulated reader each holding `cards`, and `storeAndForward`.
    static func manifest(
        directory: String,
        lanes: Int = 1,
        cards: [String] = ["pay-visa-qvsdc.json"],
        storeAndForward: String? = defaultLimits
    ) throws -> Manifest {
        let list = cards.map { "\"cards/\($0)\"" }.joined(separator: ", ")
        let readers = (1...lanes).map {
            #"{ "id": "r\#($0)", "cards": [\#(list)], "arrival": { "pattern": "immediate" } }"#
        }
        let laneList = (1...lanes).map { #"{ "id": "lane-\#($0)", "readers": ["r\#($0)"] }"# }
        let saf = storeAndForward.map { #", "storeAndForward": \#($0)"# } ?? ""
        let text = """
            {
              "schemaVersion": 1,
              "dataDirectory": "\(directory)",
              "plugins": [ { "id": "sim", "type": "simulator",
                             "config": { "airTime": false, "readers": [\(readers.joined(separator: ", "))] } } ],
              "lanes": [\(laneList.joined(separator: ", "))],
              "capabilities": {
                "payment": { "processorPublicKey": "keys/psp-test-public.pem", "tokenIssuer": "\(issuer)",
                             "readerIdentifier": "\(readerIdentifier)" }\(saf)
              }
            }
            """
        return try Manifest.parse(
            Array(text.utf8),
            baseDirectory: PackageFiles.configDirectory,
            registry: BuiltinPlugins.registry
        )
    }

    static func withKernel<T: Sendable>(_ manifest: Manifest, _ body: @Sendable (Kernel) async throws -> T) async throws
        -> T
    {
        try await Kernel(manifest: manifest, registry: BuiltinPlugins.registry).withRunning { kernel in
            await kernel.waitForReaders(count: manifest.declaredReaders.count)
            return try await body(kernel)
        }
    }

    static let sandbox: @Sendable (Manifest) throws -> PaymentProcessorSandbox = { manifest in
        try PaymentProcessorSandbox(manifest: manifest, privateKeyFile: privateKeyFile)
    }

    static func token(_ manifest: Manifest, issuedAt: Date = Date(), lifetime: Duration = .seconds(3600)) throws
        -> PaymentCardReader.Token
    {
        try sandbox(manifest).issueToken(merchantID: merchant, lifetime: lifetime, now: issuedAt)
    }

    /// A reader on `lane` that went online once (linked, prepared), and its offline session.
    static func offlineSession(_ kernel: Kernel, lane: String = "lane-1") async throws -> (
        PaymentCardReader, StoreAndForwardPaymentCardReaderSession
    ) {
        let reader = PaymentCardReader(kernel: kernel, lane: LaneID(lane))
        let token = try token(kernel.manifest)
        if try await !reader.isAccountLinked(using: token) { try await reader.linkAccount(using: token) }
        _ = try await reader.prepare(using: token)
        return (reader, try await reader.prepareStoreAndForward())
    }

    static func purchase(
        _ amount: String,
        _ currency: String = "USD",
        type: PaymentCardTransactionRequest.TransactionType = .purchase
    )
        -> PaymentCardTransactionRequest
    {
        PaymentCardTransactionRequest(
            amount: Decimal(string: amount, locale: Locale(identifier: "en_US_POSIX")) ?? .nan,
            currencyCode: currency,
            type: type
        )
    }
}

/// A directory under the system's temporary directory, removed by ``remove()``.
struct TemporaryDirectory: Sendable {
    let path: String

    init() throws {
        path = NSTemporaryDirectory() + "proxima-saf-\(UUID().uuidString.lowercased())"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    func remove() { try? FileManager.default.removeItem(atPath: path) }
}

/// A wall clock a test moves by hand.
final class TestWallClock: Sendable {
    private let current: Mutex<Date>
    init(_ start: Date = Date()) { current = Mutex(start) }
    var now: Date { current.withLock { $0 } }
    func advance(by seconds: TimeInterval) { current.withLock { $0 = $0.addingTimeInterval(seconds) } }
}

/// The error `body` throws, or `nil` (recording an issue) when it returns.
func thrownError<T>(sourceLocation: SourceLocation = #_sourceLocation, _ body: () async throws -> T) async -> (
    any Error
)? {
    do {
        _ = try await body()
        Issue.record("expected an error", sourceLocation: sourceLocation)
        return nil
    } catch {
        return error
    }
}

func storeCode(_ error: (any Error)?) -> PaymentCardReaderStore.StoreError.Code? {
    (error as? PaymentCardReaderStore.StoreError)?.code
}

func serviceCode(_ error: (any Error)?) -> StoreAndForwardError.Code? { (error as? StoreAndForwardError)?.code }
