import Foundation
import ProximaCore
import ProximaCrypto
import StoreAndForwardCapability
import Testing

/// The store's group commit on the real SQLite store: reads waiting while a commit is in flight go into one
/// transaction; limits are checked in arrival order, a refusal failing that read only; a commit that fails fails
/// every read in it with the error and stores none. Groups of known members are formed by holding commits until
/// the reads wait (``ReadStore/holdCommitsForTesting()``), not by timing.
@Suite struct GroupCommitTests {
    static func row(_ store: ReadStore, lane: String = "lane-1", cents: Int64, currency: String = "USD") throws
        -> StoredRow
    {
        let envelope = try SecureRandom.bytes(count: 64)
        let record = StoredReadRecord(
            id: UUID().uuidString.lowercased(),
            lane: lane,
            device: "reader-1",
            readAtMilliseconds: Int64(Date().timeIntervalSince1970 * 1000),
            kind: .purchase,
            currencyCode: currency,
            amountMinorUnits: cents,
            amount: "\(cents / 100).\(cents % 100 < 10 ? "0" : "")\(cents % 100)",
            brand: "Visa",
            lastFourDigits: "0010",
            expirationMonth: 12,
            expirationYear: 2030,
            expirationState: .notExpired,
            effectiveState: .unknown,
            envelopeDigest: try SHA256.hash(envelope)
        )
        return StoredRow(
            record: record,
            body: record.body,
            envelope: envelope,
            signature: try store.identity.privateKey.signature(for: record.signedBytes).rawRepresentation,
            session: "group",
            batchID: nil
        )
    }

    /// Starts one insert per row, in this order: each waits (commits held) before the next starts.
    static func enqueue(_ rows: [StoredRow], on store: ReadStore, settings: StoreAndForwardSettings) async
        -> [Task<StoreTotals, any Error>]
    {
        var tasks: [Task<StoreTotals, any Error>] = []
        for (index, row) in rows.enumerated() {
            tasks.append(Task { try await store.insert(row, settings: settings) })
            while await store.waitingStores() < index + 1 { await Task.yield() }
        }
        return tasks
    }

    static func settings(maxStored: String = "100000.00", count: Int = 1000) throws -> StoreAndForwardSettings {
        try StoreAndForwardSettings(
            json: try JSONValue.parse(
                #"{ "maxStoredAmount": { "USD": "\#(maxStored)" }, "maxStoredCount": \#(count) }"#
            ),
            path: "capabilities.storeAndForward"
        )
    }

    @Test func readsWaitingDuringACommitGoIntoOneTransaction() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let store = try ReadStore.unshared(directory: directory.path, readerIdentifier: "group", now: Date())
        let settings = try Self.settings()
        _ = try await store.insert(try Self.row(store, cents: 100), settings: settings)
        let before = await store.groupCommitStatistics()

        await store.holdCommitsForTesting()
        let rows = try (1...16).map { try Self.row(store, lane: "lane-\($0)", cents: Int64($0)) }
        let tasks = await withTaskGroup(of: Task<StoreTotals, any Error>.self) { group in
            for row in rows { group.addTask { Task { try await store.insert(row, settings: settings) } } }
            var tasks: [Task<StoreTotals, any Error>] = []
            for await task in group { tasks.append(task) }
            return tasks
        }
        while await store.waitingStores() < 16 { await Task.yield() }
        #expect(try await store.rows().count == 1, "nothing of the group is stored before its commit")
        await store.releaseCommitsForTesting()
        var counts: [Int] = []
        for task in tasks { counts.append(try await task.value.count) }

        let after = await store.groupCommitStatistics()
        #expect(after.groups - before.groups == 1, "16 waiting reads, one transaction")
        #expect(after.stores - before.stores == 16)
        #expect(after.largestGroup == 16)
        // Each caller saw the totals after its own read, in arrival order: 2…17 once each.
        #expect(counts.sorted() == Array(2...17))
        let stored = try await store.rows()
        #expect(stored.count == 17)
        #expect(Set(stored.map(\.record.id)).isSuperset(of: rows.map(\.record.id)))
        #expect(try await store.totals().amounts["USD"] == 100 + (1...16).reduce(0, +))
        #expect(try await store.integrityCheck() == ["ok"])
    }

    @Test func limitsAreCheckedInArrivalOrderAndARefusalFailsOnlyItsRead() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let store = try ReadStore.unshared(directory: directory.path, readerIdentifier: "group", now: Date())
        let settings = try Self.settings(maxStored: "10.00", count: 3)
        await store.holdCommitsForTesting()
        // 4.00 + 5.00 = 9.00; 2.00 would make 11.00 (refused); 1.00 makes 10.00 exactly (accepted, 3 reads);
        // 0.50 would be a 4th read (refused by the count).
        let rows = try [400, 500, 200, 100, 50].map { try Self.row(store, cents: Int64($0)) }
        let tasks = await Self.enqueue(rows, on: store, settings: settings)
        await store.releaseCommitsForTesting()
        var outcomes: [String] = []
        for task in tasks {
            do {
                outcomes.append("ok \(try await task.value.amounts["USD"] ?? -1)")
            } catch let error as StoreAndForwardError {
                outcomes.append("\(error.code) \(error.limit ?? "")")
            }
        }
        #expect(
            outcomes == [
                "ok 400", "ok 900", "limitExceeded capabilities.storeAndForward.maxStoredAmount.USD", "ok 1000",
                "limitExceeded capabilities.storeAndForward.maxStoredCount",
            ]
        )
        let stored = try await store.rows().map(\.record.id)
        #expect(stored == [rows[0], rows[1], rows[3]].map(\.record.id))
        #expect(await store.groupCommitStatistics().groups == 1)
    }

    @Test func aFailedCommitFailsEveryReadInItWithTheError() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let store = try ReadStore.unshared(directory: directory.path, readerIdentifier: "group", now: Date())
        let settings = try Self.settings(maxStored: "10.00")
        _ = try await store.totals()
        // A real COMMIT failure: a deferred foreign key that a read of lane "poison" breaks, checked by SQLite
        // only when the transaction commits.
        try await store.executeForTesting(
            """
            CREATE TABLE poison (batch TEXT REFERENCES batches(id) DEFERRABLE INITIALLY DEFERRED);
            CREATE TRIGGER poison_commit AFTER INSERT ON reads WHEN NEW.lane = 'poison'
            BEGIN INSERT INTO poison VALUES ('no-such-batch'); END;
            """
        )
        await store.holdCommitsForTesting()
        let rows = try [
            Self.row(store, cents: 100), Self.row(store, lane: "poison", cents: 100), Self.row(store, cents: 5000),
            Self.row(store, cents: 200),
        ]
        let tasks = await Self.enqueue(rows, on: store, settings: settings)
        await store.releaseCommitsForTesting()
        var errors: [StoreAndForwardError] = []
        for task in tasks {
            do {
                _ = try await task.value
                Issue.record("a read of the failed group was acknowledged")
            } catch let error as StoreAndForwardError {
                errors.append(error)
            }
        }
        #expect(errors.map(\.code) == [.storeFailed, .storeFailed, .limitExceeded, .storeFailed])
        for index in [0, 1, 3] {
            #expect(errors[index].reason.contains("commit"), "\(errors[index].reason)")
            #expect(errors[index].reason.contains("FOREIGN KEY"), "\(errors[index].reason)")
        }
        #expect(errors[2].limit == "capabilities.storeAndForward.maxStoredAmount.USD")
        #expect(try await store.rows().isEmpty, "nothing of the failed group is stored")

        // The store goes on: the next group commits.
        try await store.executeForTesting("DROP TRIGGER poison_commit")
        _ = try await store.insert(try Self.row(store, cents: 300), settings: settings)
        #expect(try await store.rows().count == 1)
        #expect(try await store.integrityCheck() == ["ok"])
    }
}
