import Foundation
import Proxima
import ProximaCore
import ProximaCrypto
import ProximaKernel
import ProximaProcessorSandbox
import ProximaTestSupport
import Testing

@testable import PaymentCapability

/// Files of the package the payment API tests read (found by ``PackageFiles``).
enum Package {
    static let configDirectory = PackageFiles.configDirectory
    static let publicKeyFile = configDirectory + "/keys/psp-test-public.pem"
    static let privateKeyFile = configDirectory + "/keys/psp-test-private.pem"

    /// Every `Config/cards/pay-*.json` file name, sorted.
    static let paymentProfiles: [String] = {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: configDirectory + "/cards")) ?? []
        return names.filter { $0.hasPrefix("pay-") && $0.hasSuffix(".json") }.sorted()
    }()

    /// The test PANs of every payment profile (`applications[].pan`), read from the files themselves.
    static let testPANs: [String] = {
        var pans: Set<String> = []
        for name in paymentProfiles {
            guard let data = FileManager.default.contents(atPath: configDirectory + "/cards/" + name),
                let json = try? JSONValue.parse(Array(data)), case .array(let applications)? = json["applications"]
            else { continue }
            for application in applications {
                if case .string(let pan)? = application["pan"] { pans.insert(pan) }
            }
        }
        return pans.sorted()
    }()
}

/// A directory under the system's temporary directory, removed by ``remove()``.
struct TemporaryDirectory: Sendable {
    let path: String

    init() throws {
        path = NSTemporaryDirectory() + "proxima-tests-\(UUID().uuidString.lowercased())"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    func remove() { try? FileManager.default.removeItem(atPath: path) }

    /// Entries of the directory at `subpath` (the directory itself by default), sorted.
    func entries(_ subpath: String = "") -> [String] {
        let directory = subpath.isEmpty ? path : path + "/" + subpath
        return ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).sorted()
    }
}

/// Builds kernels on the simulator with the payment capability configured, and processor tokens for them.
enum PaymentHarness {
    static let issuer = "https://psp.example.test"
    static let readerIdentifier = "proxima-test-001"
    static let merchant = "merchant-001"

    /// The default `capabilities.payment` block (relative key path: the manifest folder is `Config`).
    static func paymentBlock(extra: String = "") -> String {
        """
        { "processorPublicKey": "keys/psp-test-public.pem", "tokenIssuer": "\(issuer)",
          "readerIdentifier": "\(readerIdentifier)", "readerKey": "keys/reader-test-private.pem"\(
            extra.isEmpty ? "" : ", " + extra) }
        """
    }

    /// A simulator reader holding `cards`, arriving at once unless `arrival` says otherwise.
    static func reader(_ id: String, cards: [String], arrival: String = #"{ "pattern": "immediate" }"#) -> String {
        let list = cards.map { "\"cards/\($0)\"" }.joined(separator: ", ")
        return #"{ "id": "\#(id)", "cards": [\#(list)], "arrival": \#(arrival) }"#
    }

    /// Manifest text with one simulator plugin, the readers given, and lane `lane-1` served by all of them.
    static func manifestText(
        readers: [String],
        dataDirectory: String,
        payment: String? = paymentBlock(),
        lanes: String? = nil
    ) -> String {
        let ids = readers.compactMap { text -> String? in
            guard let start = text.range(of: #""id": ""#), let end = text[start.upperBound...].firstIndex(of: "\"")
            else { return nil }
            return "\"\(text[start.upperBound..<end])\""
        }
        let capabilities = payment.map { #", "capabilities": { "payment": \#($0) }"# } ?? ""
        return """
            {
              "schemaVersion": 1,
              "dataDirectory": "\(dataDirectory)",
              "plugins": [ { "id": "sim", "type": "simulator",
                             "config": { "airTime": false, "readers": [\(readers.joined(separator: ", "))] } } ],
              "lanes": \(lanes ?? #"[ { "id": "lane-1", "readers": [\#(ids.joined(separator: ", "))] } ]"#)
              \(capabilities)
            }
            """
    }

    /// A validated manifest; relative paths resolve against `Config`.
    static func manifest(
        readers: [String],
        dataDirectory: String,
        payment: String? = paymentBlock(),
        lanes: String? = nil
    ) throws -> Manifest {
        let text = manifestText(readers: readers, dataDirectory: dataDirectory, payment: payment, lanes: lanes)
        return try Manifest.parse(
            Array(text.utf8),
            baseDirectory: Package.configDirectory,
            registry: BuiltinPlugins.registry
        )
    }

    /// Runs `body` with a started kernel (its declared readers present), then stops it.
    static func withKernel<T: Sendable>(
        _ manifest: Manifest,
        _ body: @Sendable (Kernel) async throws -> T
    ) async throws -> T {
        try await Kernel(manifest: manifest, registry: BuiltinPlugins.registry).withRunning { kernel in
            await kernel.waitForReaders(count: manifest.declaredReaders.count)
            return try await body(kernel)
        }
    }

    /// One reader on lane `lane-1` holding `cards`, a kernel running it, and a `PaymentCardReader` on it.
    static func withReader<T: Sendable>(
        cards: [String],
        arrival: String = #"{ "pattern": "immediate" }"#,
        options: PaymentCardReader.Options = PaymentCardReader.Options(),
        _ body: @Sendable (PaymentCardReader, TemporaryDirectory) async throws -> T
    ) async throws -> T {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let manifest = try manifest(
            readers: [reader("r1", cards: cards, arrival: arrival)],
            dataDirectory: directory.path
        )
        return try await withKernel(manifest) { kernel in
            try await body(PaymentCardReader(kernel: kernel, lane: "lane-1", options: options), directory)
        }
    }

    /// The TEST processor's token issuer.
    static let tokenIssuer: ReaderTokenIssuer = {
        do {
            return try ReaderTokenIssuer(privateKeyFile: Package.privateKeyFile, issuer: issuer)
        } catch {
            fatalError("cannot load the TEST processor key \(Package.privateKeyFile): \(error)")
        }
    }()

    static func token(merchant: String = merchant, audience: [String] = [readerIdentifier]) throws
        -> PaymentCardReader.Token
    {
        try tokenIssuer.issue(merchantID: merchant, audience: audience)
    }

    /// A linked, prepared session on `reader`.
    static func preparedSession(_ reader: PaymentCardReader, merchant: String = merchant) async throws
        -> PaymentCardReaderSession
    {
        let token = try token(merchant: merchant)
        try await reader.linkAccount(using: token)
        return try await reader.prepare(using: token)
    }

    /// The reader keys the sandbox processor registered: the TEST reader key every harness manifest configures.
    static let readerKeys: [P256.PublicKey] = {
        let pem =
            (try? String(contentsOfFile: Package.configDirectory + "/keys/reader-test-public.pem", encoding: .utf8))
            ?? ""
        return (try? P256.PublicKey(pemRepresentation: pem)).map { [$0] } ?? []
    }()

    static let privateKey: P256.PrivateKey = {
        do {
            return try ProcessorKeyPair.loadPrivateKey(Package.privateKeyFile)
        } catch {
            fatalError("cannot load the TEST processor key: \(error)")
        }
    }()

    static func purchase(_ amount: String = "29.99", _ currency: String = "USD") -> PaymentCardTransactionRequest {
        PaymentCardTransactionRequest(
            amount: Decimal(string: amount, locale: Locale(identifier: "en_US_POSIX")) ?? .nan,
            currencyCode: currency,
            type: .purchase
        )
    }
}

/// Events of `reader` up to and including the first that ends a read, without `updateProgress`.
func readEvents(_ reader: PaymentCardReader) async -> [PaymentCardReader.Event] {
    var events: [PaymentCardReader.Event] = []
    let ends: Set<String> = ["readCompleted", "readNotCompleted", "readCancelled", "readRetry", "notReady"]
    for await event in reader.events {
        if case .updateProgress = event { continue }
        events.append(event)
        if ends.contains(event.name) { break }
    }
    return events
}

/// The error `body` throws, or `nil` (recording an issue) when it returns.
func thrownError<T>(
    sourceLocation: SourceLocation = #_sourceLocation,
    _ body: () async throws -> T
) async -> (any Error)? {
    do {
        _ = try await body()
        Issue.record("expected an error", sourceLocation: sourceLocation)
        return nil
    } catch {
        return error
    }
}

/// The code of a `PaymentCardReaderError`, or `nil`.
func readerCode(_ error: (any Error)?) -> PaymentCardReaderError.Code? { (error as? PaymentCardReaderError)?.code }

/// The code of a `ReadError`, or `nil`.
func readCode(_ error: (any Error)?) -> PaymentCardReaderSession.ReadError.Code? {
    (error as? PaymentCardReaderSession.ReadError)?.code
}

extension JSONValue {
    /// The string member `key`, or `nil`.
    func string(_ key: String) -> String? {
        guard case .string(let value)? = self[key] else { return nil }
        return value
    }
}
