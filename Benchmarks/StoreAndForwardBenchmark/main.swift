// Store-and-forward figures, each against a baseline measured in the same run (2 shared cores: compare ratios):
// 1. the machine's raw fsync rate: write(2) + fsync(2) of a small record to a file in the same directory, before
//    and after the store figures (the ceiling of any one-fsync-per-commit design);
// 2. durable stores per second through the store's group commit (`ReadStore.insert`, each acknowledged after the
//    SQLite COMMIT with synchronous=FULL in WAL mode that covers it, signature included), from 1 storer and from
//    16 storers at once, with the mean group size (reads per transaction and fsync);
// 3. the same through the public API: `StoreAndForwardPaymentCardReaderSession.readPaymentCard` on simulated
//    readers with air time off (the whole EMV read, HPKE seal, record signature and durable commit per read), on
//    1 lane and on 16 lanes at once;
// 4. a batch of 10,000 stored reads built, verified row by row, signed and serialized (goal ≤ 1 s), against
//    SHA-256 of the same bytes.
//
// Usage: StoreAndForwardBenchmark [READS_PER_LANE]   (default 60 per lane for the 16-lane figures)
import Foundation
import Proxima
import ProximaCore
import ProximaCrypto
import ProximaKernel
import ProximaProcessorSandbox
import ProximaSystem
import StoreAndForwardCapability

#if canImport(Glibc)
import Glibc
#endif

/// User + system CPU seconds of this process so far.
func cpuSeconds() -> Double {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    let user = Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6
    return user + Double(usage.ru_stime.tv_sec) + Double(usage.ru_stime.tv_usec) / 1e6
}

let directory = NSTemporaryDirectory() + "proxima-saf-bench-\(UUID().uuidString.lowercased())"
try SystemFile.createDirectory(directory)
defer { try? FileManager.default.removeItem(atPath: directory) }

func seconds(_ duration: Duration) -> Double {
    Double(duration.components.seconds) + Double(duration.components.attoseconds) * 1e-18
}

let perLane = max(10, Int(CommandLine.arguments.dropFirst().first ?? "") ?? 60)

// Raw fsync rate: the ceiling for one fsync per commit on this disk.
func rawFsyncRate(_ name: String) throws -> Double {
    let rawCount = 300
    let raw = try FileDescriptor.open(directory + "/" + name, [.writeOnly, .create, .truncate])
    let record = [UInt8](repeating: 0x5A, count: 512)
    let rawTime = try ContinuousClock().measure {
        for _ in 0..<rawCount {
            try raw.writeAll(record)
            try raw.sync()
        }
    }
    try raw.close()
    return Double(rawCount) / seconds(rawTime)
}
let rawBefore = try rawFsyncRate("fsync-probe-1")

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

/// Stores/s and mean group size of `lanes` storers each storing `count` reads at once.
func storeRate(lanes: Int, count: Int) async throws -> (Double, Double) {
    let before = await store.groupCommitStatistics()
    let time = try await ContinuousClock().measure {
        try await withThrowingTaskGroup(of: Void.self) { group in
            for lane in 0..<lanes {
                group.addTask {
                    for index in 0..<count {
                        _ = try await store.insert(try row(lane * count + index), settings: settings)
                    }
                }
            }
            try await group.waitForAll()
        }
    }
    let after = await store.groupCommitStatistics()
    let groups = after.groups - before.groups
    return (Double(lanes * count) / seconds(time), Double(after.stores - before.stores) / Double(max(groups, 1)))
}

_ = try await store.insert(try row(0), settings: settings)
let (oneStorer, oneStorerGroup) = try await storeRate(lanes: 1, count: 300)
let (sixteenStorers, sixteenStorersGroup) = try await storeRate(lanes: 16, count: perLane)

// Through the public API: offline reads on simulated readers, each stored durably before it returns.
func apiRate(lanes: Int, reads: Int) async throws -> (Double, Double, Double) {
    let data = directory + "/api-\(lanes)"
    let readers = (1...lanes).map {
        #"{ "id": "bench-\#($0)", "cards": ["cards/pay-visa-qvsdc.json"], "arrival": { "pattern": "immediate" } }"#
    }
    let laneList = (1...lanes).map { #"{ "id": "lane-\#($0)", "readers": ["bench-\#($0)"] }"# }
    let text = """
        {
          "schemaVersion": 1,
          "dataDirectory": "\(data)",
          "plugins": [ { "id": "sim", "type": "simulator", "config": { "airTime": false, "readers": [
            \(readers.joined(separator: ", ")) ] } } ],
          "lanes": [ \(laneList.joined(separator: ", ")) ],
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
        await kernel.waitForReaders(count: lanes)
        var sessions: [StoreAndForwardPaymentCardReaderSession] = []
        for lane in 1...lanes {
            let reader = PaymentCardReader(kernel: kernel, lane: LaneID("lane-\(lane)"))
            if try await !reader.isAccountLinked(using: token) { try await reader.linkAccount(using: token) }
            _ = try await reader.prepare(using: token)
            sessions.append(try await reader.prepareStoreAndForward())
        }
        let request = PaymentCardTransactionRequest(amount: 1, currencyCode: "USD", type: .purchase)
        for session in sessions { for _ in 0..<3 { try await session.readPaymentCard(request) } }
        let readStore = try sessions[0].reader.storeAndForwardService().store
        let before = await readStore.groupCommitStatistics()
        let cpuBefore = cpuSeconds()
        let time = try await ContinuousClock().measure {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for session in sessions {
                    group.addTask { for _ in 0..<reads { try await session.readPaymentCard(request) } }
                }
                try await group.waitForAll()
            }
        }
        let cpu = (cpuSeconds() - cpuBefore) / Double(lanes * reads)
        let after = await readStore.groupCommitStatistics()
        let groups = after.groups - before.groups
        return (
            Double(lanes * reads) / seconds(time), Double(after.stores - before.stores) / Double(max(groups, 1)), cpu
        )
    }
}
let (apiOne, apiOneGroup, apiOneCPU) = try await apiRate(lanes: 1, reads: 200)
let (apiSixteen, apiSixteenGroup, apiSixteenCPU) = try await apiRate(lanes: 16, reads: perLane)
let rawAfter = try rawFsyncRate("fsync-probe-2")
let raw = (rawBefore + rawAfter) / 2

print(
    String(
        format: "raw write+fsync:                 %8.0f /s before, %.0f /s after (mean %.0f)",
        rawBefore,
        rawAfter,
        raw
    )
)
func line(_ label: String, _ rate: Double, _ group: Double) {
    print(String(format: "%@ %8.0f /s  = %.2f × the raw fsync rate, mean group %.1f", label, rate, rate / raw, group))
}
line("durable stores, 1 storer:       ", oneStorer, oneStorerGroup)
line("durable stores, 16 storers:     ", sixteenStorers, sixteenStorersGroup)
line("public API reads, 1 lane:       ", apiOne, apiOneGroup)
line("public API reads, 16 lanes:     ", apiSixteen, apiSixteenGroup)
print(
    String(
        format: "(public API: simulated card, air time off; every read durably stored before readPaymentCard "
            + "returned; CPU %.2f ms per read on 1 lane, %.2f ms on 16 lanes)",
        apiOneCPU * 1000,
        apiSixteenCPU * 1000
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
