// The child process of the store-and-forward crash tests (`CrashSafetyTests`, `scripts/store-soak.sh`): 8 storers at
// once store reads in a loop through the store's group commit (`ReadStore.insert`, one session recorded per run)
// and each prints `ack <id>` on stdout (unbuffered, one write(2) per line) after its insert returned, that is after
// the commit covering its row; at its start and every 2nd read of lane 0 it makes a batch of what is waiting, or
// resets the active one, so batches are made and torn down while it is killed. The parent kills it with SIGKILL at random
// points and checks the store.
//
// Usage: StoreCrashWriter DIRECTORY [COUNT]    (write until killed, or COUNT reads)
//        StoreCrashWriter --check DIRECTORY  (open the store as after a restart and print what it holds:
//        `integrity <result>`, `read <id> <batch id or ->`, `batch <id> <count> <reads in it> <verifies>`,
//        `session <id> <read count> <its reads stored>`)
import Foundation
import ProximaCrypto
import StoreAndForwardCapability

#if canImport(Glibc)
import Glibc
#endif

/// One line on stdout with write(2): no buffer a SIGKILL could lose after the line counts as written.
func acknowledge(_ line: String) {
    let bytes = Array((line + "\n").utf8)
    bytes.withUnsafeBytes { _ = write(1, $0.baseAddress, $0.count) }
}

let arguments = CommandLine.arguments
guard arguments.count >= 2 else {
    FileHandle.standardError.write(Data("usage: StoreCrashWriter DIRECTORY [COUNT]\n".utf8))
    exit(2)
}
if arguments[1] == "--check", arguments.count == 3 {
    do {
        let store = try ReadStore.unshared(directory: arguments[2], readerIdentifier: "crash-writer", now: Date())
        acknowledge("integrity \(try await store.integrityCheck().joined(separator: ","))")
        let rows = try await store.rows()
        for row in rows { acknowledge("read \(row.record.id) \(row.batchID ?? "-")") }
        if let batch = try await store.activeBatch() {
            let container = try BatchContainer.parse(batch.container)
            let verifies = (try? container.verify()) != nil && (try? SHA256.hash(batch.container)) == batch.digest
            let members = rows.filter { $0.batchID == batch.id }.map(\.record.id)
            let same = members == container.entries.map(\.record.id)
            acknowledge("batch \(batch.id) \(batch.count) \(members.count) \(verifies && same)")
        }
        for session in Set(rows.map(\.session)).sorted() {
            let recorded = try await store.session(session)?.readCount ?? -1
            acknowledge("session \(session) \(recorded) \(rows.filter { $0.session == session }.count)")
        }
        exit(0)
    } catch {
        FileHandle.standardError.write(Data("StoreCrashWriter --check: \(error)\n".utf8))
        exit(1)
    }
}
let directory = arguments[1]
let count = arguments.count > 2 ? Int(arguments[2]) ?? Int.max : Int.max
var settings = StoreAndForwardSettings(currencies: [:])
settings.maxStoredCount = 1_000_000
let storers = 8
let bootID = "crash-writer-boot"

/// One storer: reads of its lane in a loop, each acknowledged once its `insert` returned (after the group commit
/// covering it); lane 0 also makes a batch every 2nd read and resets it at the next.
func storeLoop(_ store: ReadStore, lane: Int, session: String, count: Int) async throws {
    var written = 0
    while written < count {
        let envelope = try SecureRandom.bytes(count: 160)
        let record = StoredReadRecord(
            id: UUID().uuidString.lowercased(),
            lane: "lane-\(lane)",
            device: "reader-\(lane)",
            readAtMilliseconds: Int64(Date().timeIntervalSince1970 * 1000),
            kind: .purchase,
            currencyCode: "USD",
            amountMinorUnits: Int64(100 + written % 900),
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
        _ = try await store.insert(
            StoredRow(
                record: record,
                body: record.body,
                envelope: envelope,
                signature: signature,
                session: session,
                batchID: nil
            ),
            settings: settings,
            bootID: bootID
        )
        acknowledge("ack \(record.id)")
        written += 1
        if lane == 0, written % 2 == 0 {
            if try await store.activeBatch() != nil {
                _ = try await store.resetBatch(now: Date())
                acknowledge("reset")
            } else {
                let batch = try await store.makeBatch(size: 0, readerIdentifier: "crash-writer", now: Date())
                acknowledge("batch \(batch.id) \(batch.count)")
            }
        }
    }
}

do {
    let store = try ReadStore.unshared(directory: directory, readerIdentifier: "crash-writer", now: Date())
    // One session per run, its read count kept in the same transactions as its reads.
    let session = "crash-" + UUID().uuidString.lowercased()
    try await store.recordSession(
        ReadStore.SessionRecord(
            id: session,
            bootID: bootID,
            preparedAt: Date(),
            expiresAt: Date().addingTimeInterval(3600)
        )
    )
    // A batch made or reset before the storers start, so that kills find batches at every stage.
    if try await store.activeBatch() != nil {
        _ = try await store.resetBatch(now: Date())
        acknowledge("reset")
    } else if try await store.totals().unbatched > 0 {
        let batch = try await store.makeBatch(size: 0, readerIdentifier: "crash-writer", now: Date())
        acknowledge("batch \(batch.id) \(batch.count)")
    }
    // Storers at once: their reads meet in group commits.
    try await withThrowingTaskGroup(of: Void.self) { group in
        for lane in 0..<storers {
            let share = count == Int.max ? Int.max : (count + storers - 1 - lane) / storers
            group.addTask { try await storeLoop(store, lane: lane, session: session, count: share) }
        }
        try await group.waitForAll()
    }
} catch {
    FileHandle.standardError.write(Data("StoreCrashWriter: \(error)\n".utf8))
    exit(1)
}
