// Store-and-forward figures, each against a baseline measured in the same run (2 shared cores: compare ratios):
// 1. durable stores per second through the public API path (`ReadStore.insert`, each one SQLite transaction
//    committed with synchronous=FULL in WAL mode, signature included) against the machine's raw fsync rate:
//    write(2) + fsync(2) of a small record to a file in the same directory;
//    and the same through the public API: `StoreAndForwardPaymentCardReaderSession.readPaymentCard` on a simulated
//    reader with air time off (the whole EMV read, HPKE seal, record signature and durable commit per read);
// 2. a batch of 10,000 stored reads built, verified row by row, signed and serialized (goal ≤ 1 s), against
//    SHA-256 of the same bytes.
import Foundation
import Proxima
import ProximaCrypto
import ProximaKernel
import ProximaProcessorSandbox
import ProximaSystem
import StoreAndForwardCapability

let directory = NSTemporaryDirectory() + "proxima-saf-bench-\(UUID().uuidString.lowercased())"
try SystemFile.createDirectory(directory)
defer { try? FileManager.default.removeItem(atPath: directory) }

func seconds(_ duration: Duration) -> Double {
    Double(duration.components.seconds) + Double(duration.components.attoseconds) * 1e-18
}

// Raw fsync rate: the ceiling for any durable commit on this disk.
let rawCount = 300
let raw = try FileDescriptor.open(directory + "/fsync-probe", [.writeOnly, .create, .truncate])
let record = [UInt8](repeating: 0x5A, count: 512)
let rawTime = try ContinuousClock().measure {
    for _ in 0..<rawCount {
        try raw.writeAll(record)
        try raw.sync()
    }
}
try raw.close()
let rawRate = Double(rawCount) / seconds(rawTime)

let store = try ReadStore.unshared(directory: directory, readerIdentifier: "bench", now: Date())
var settings = StoreAndForwardSettings(currencies: [:])
settings.maxStoredCount = 1_000_000

func row(_ index: Int) throws -> StoredRow {
    let envelope = try SecureRandom.bytes(count: 420)
    let record = StoredReadRecord(
        id: UUID().uuidString.lowercased(),
        lane: "lane-\(index % 16)",
        device: "reader-\(index % 16)",
        readAtMilliseconds: Int64(Date().timeIntervalSince1970 * 1000),
        kind: .purchase,
        currencyCode: "USD",
        amountMinorUnits: Int64(100 + index % 9000),
        amount: "1.00",
        brand: "Visa",
        lastFourDigits: "0010",
        expirationMonth: 12,
        expirationYear: 2030,
        expirationState: .notExpired,
        effectiveState: .unknown,
        envelopeDigest: try SHA256.hash(envelope)
    )
    let signature = try store.identity.privateKey.signature(for: record.signedBytes).rawRepresentation
    return StoredRow(
        record: record,
        body: record.body,
        envelope: envelope,
        signature: signature,
        session: "bench",
        batchID: nil
    )
}

// Durable stores, each committed and synced before the next.
let durableCount = 300
_ = try await store.insert(try row(0), settings: settings)
let storeTime = try await ContinuousClock().measure {
    for index in 0..<durableCount { _ = try await store.insert(try row(index), settings: settings) }
}
let storeRate = Double(durableCount) / seconds(storeTime)
print(String(format: "raw write+fsync:          %8.0f /s", rawRate))
print(String(format: "durable stores (FULL):    %8.0f /s  = %.2f × the raw fsync rate", storeRate, storeRate / rawRate))

// Through the public API: offline reads on the simulator, each stored durably before it returns.
let apiReads = 200
let apiRate: Double = try await {
    let data = directory + "/api"
    let text = """
        {
          "schemaVersion": 1,
          "dataDirectory": "\(data)",
          "plugins": [ { "id": "sim", "type": "simulator", "config": { "airTime": false, "readers": [
            { "id": "bench", "cards": ["cards/pay-visa-qvsdc.json"], "arrival": { "pattern": "immediate" } } ] } } ],
          "lanes": [ { "id": "lane", "readers": ["bench"] } ],
          "capabilities": {
            "payment": { "processorPublicKey": "keys/psp-test-public.pem", "tokenIssuer": "https://psp.example.test",
                         "readerIdentifier": "proxima-bench-001" },
            "storeAndForward": { "maxStoredAmount": { "USD": "1000000.00" }, "maxStoredCount": 100000 } }
        }
        """
    let configDirectory = FileManager.default.currentDirectoryPath + "/Config"
    let manifest = try Manifest.parse(
        Array(text.utf8),
        baseDirectory: configDirectory,
        registry: BuiltinPlugins.registry
    )
    let kernel = Kernel(manifest: manifest, registry: BuiltinPlugins.registry)
    let token = try PaymentProcessorSandbox(manifest: manifest).issueToken(merchantID: "merchant-bench")
    return try await kernel.withRunning { kernel in
        await kernel.waitForReaders(count: 1)
        let reader = PaymentCardReader(kernel: kernel, lane: "lane")
        try await reader.linkAccount(using: token)
        _ = try await reader.prepare(using: token)
        let session = try await reader.prepareStoreAndForward()
        let request = PaymentCardTransactionRequest(amount: 1, currencyCode: "USD", type: .purchase)
        for _ in 0..<10 { try await session.readPaymentCard(request) }
        let time = try await ContinuousClock().measure {
            for _ in 0..<apiReads { try await session.readPaymentCard(request) }
        }
        return Double(apiReads) / seconds(time)
    }
}()
print(
    String(
        format: "offline reads, public API: %8.0f /s  = %.2f × the raw fsync rate (simulated card, air time off)",
        apiRate,
        apiRate / rawRate
    )
)

// Fill to 10,000 unbatched reads, unmeasured, with the commits' fsync off (the batch figure is about building,
// signing and serializing; durability was measured above), then back to synchronous=FULL.
let fillTarget = 10_000
var stored = try await store.totals().count
try await store.executeForTesting("PRAGMA synchronous=OFF")
while stored < fillTarget {
    _ = try await store.insert(try row(stored), settings: settings)
    stored += 1
}
try await store.executeForTesting("PRAGMA synchronous=FULL")
let existing = try await store.totals().unbatched
let batchClock = ContinuousClock()
let start = batchClock.now
let batch = try await store.makeBatch(size: fillTarget, readerIdentifier: "bench", now: Date())
let batchTime = batchClock.now - start
let hashTime = try ContinuousClock().measure { _ = try SHA256.hash(batch.container) }
print(
    String(
        format: "batch of %d reads (of %d): built+verified+signed+serialized in %.3f s (goal ≤ 1 s), %.1f MB; "
            + "SHA-256 of it alone %.4f s (%.0f×)",
        batch.count,
        existing,
        seconds(batchTime),
        Double(batch.container.count) / 1e6,
        seconds(hashTime),
        seconds(batchTime) / max(seconds(hashTime), 1e-9)
    )
)
