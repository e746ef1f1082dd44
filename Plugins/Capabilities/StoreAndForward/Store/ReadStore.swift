package import Foundation
internal import ProximaCore
internal import ProximaCrypto
internal import ProximaSystem
internal import Synchronization

/// A read as the store keeps it: the record (signed metadata), its body and signature, the envelope.
package struct StoredRow: Hashable, Sendable {
    package var record: StoredReadRecord
    package var body: [UInt8]
    package var envelope: [UInt8]
    package var signature: [UInt8]
    package var session: String
    package var batchID: String?

    package init(
        record: StoredReadRecord,
        body: [UInt8],
        envelope: [UInt8],
        signature: [UInt8],
        session: String,
        batchID: String?
    ) {
        self.record = record
        self.body = body
        self.envelope = envelope
        self.signature = signature
        self.session = session
        self.batchID = batchID
    }
}

/// Counts and totals of a store.
package struct StoreTotals: Hashable, Sendable {
    /// Every stored read (batched or not).
    package var count = 0
    /// Reads not in the active batch.
    package var unbatched = 0
    /// Minor units per currency, every stored read.
    package var amounts: [String: Int64] = [:]
    package var activeBatchID: String?
    /// The last time the processor was reached (a reader token's `iat`, a deletion token's `iat`).
    package var lastProcessorContact: Date?
}

/// How the store's group commits went: each group is one transaction and one `fsync`.
package struct GroupCommitStatistics: Hashable, Sendable {
    /// Transactions committed (or failed) for stored reads.
    package var groups = 0
    /// Reads they carried (stored, refused or failed).
    package var stores = 0
    package var largestGroup = 0

    /// Reads per transaction.
    package var meanGroupSize: Double { groups == 0 ? 0 : Double(stores) / Double(groups) }
}

/// A batch as the store keeps it.
package struct StoredBatch: Hashable, Sendable {
    package var id: String
    package var count: Int
    package var createdAt: Date
    package var container: [UInt8]
    package var digest: [UInt8]
    /// The processor's deletion token recorded for it (``ReadStore/recordDeletionToken(_:batchID:)``).
    package var deletionToken: String?
}

/// What the processor's deletion token says, verified.
package struct VerifiedDeletionToken: Hashable, Sendable {
    package var tokenID: String
    package var batchID: String
    package var digest: [UInt8]
    package var issuedAt: Date
    package var raw: String
}

/// The store of offline reads: one SQLite database (`store-and-forward.db` in the kernel's data directory,
/// created 0600, WAL, `synchronous=FULL`) owned by this actor, whose executor is a serial queue of its own.
///
/// Every method is one transaction: a read is stored with its limits checked in the same transaction (16 lanes
/// storing at once cannot together cross a limit); a batch is made, resolved or reset whole or not at all. A
/// commit that returned is on disk.
package actor ReadStore {
    package static let fileName = "store-and-forward.db"

    private let executor: StoreExecutor
    package nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }

    package nonisolated let path: String
    package nonisolated let identity: StoreIdentity
    private let rowKey: [UInt8]
    private var connection: SQLiteConnection?

    /// The one store per database file in this process, so every reader of a kernel shares its actor.
    private static let open = Mutex<[String: ReadStore]>([:])

    private init(path: String, identity: StoreIdentity) {
        self.path = path
        self.identity = identity
        rowKey = identity.rowKey
        executor = StoreExecutor(label: "proxima.store-and-forward")
    }

    /// The store in `directory` (made on first use, with its identity).
    /// - Throws: ``StoreAndForwardError`` `storeFailed`, `tampered` (identity).
    package static func shared(directory: String, readerIdentifier: String, now: Date) throws(StoreAndForwardError)
        -> ReadStore
    {
        let path = directory + "/" + fileName
        if let store = open.withLock({ $0[path] }) { return store }
        let identity = try StoreIdentity.loadOrCreate(in: directory, readerIdentifier: readerIdentifier, now: now)
        return open.withLock { stores in
            if let store = stores[path] { return store }
            let store = ReadStore(path: path, identity: identity)
            stores[path] = store
            return store
        }
    }

    /// A store of its own (not shared), for tests that open the same file as a fresh process would.
    package static func unshared(directory: String, readerIdentifier: String, now: Date) throws(StoreAndForwardError)
        -> ReadStore
    {
        let identity = try StoreIdentity.loadOrCreate(in: directory, readerIdentifier: readerIdentifier, now: now)
        return ReadStore(path: directory + "/" + fileName, identity: identity)
    }

    // MARK: Connection and schema

    private func database() throws(StoreAndForwardError) -> SQLiteConnection {
        if let connection { return connection }
        do throws(Errno) {
            // Created 0600 before SQLite sees it: SQLite gives its -wal and -shm files the database's mode.
            try FileDescriptor.open(path, [.readWrite, .create], permissions: 0o600).close()
        } catch {
            throw StoreAndForwardError(.storeFailed, "cannot create \(path): \(error)", underlying: error)
        }
        let opened: SQLiteConnection
        do {
            opened = try SQLiteConnection(path: path)
            try migrate(opened)
        } catch {
            throw failure("open", error)
        }
        connection = opened
        return opened
    }

    private func migrate(_ db: SQLiteConnection) throws {
        let version = Int(try db.query("PRAGMA user_version").first?.first?.integer ?? 0)
        guard version <= Migrations.all.count else {
            throw StoreAndForwardError(
                .storeFailed,
                "\(path) is at schema version \(version); this build knows \(Migrations.all.count): use a newer build"
            )
        }
        for (index, migration) in Migrations.all.enumerated().dropFirst(version) {
            try db.transaction {
                // Re-read under the write lock: another process may have migrated meanwhile.
                let current = Int(try db.query("PRAGMA user_version").first?.first?.integer ?? 0)
                guard current == index else { return }
                try db.execute(migration)
                try db.execute("PRAGMA user_version = \(index + 1)")
            }
        }
    }

    private func failure(_ operation: String, _ error: any Error) -> StoreAndForwardError {
        if let error = error as? StoreAndForwardError { return error }
        if let sqlite = error as? SQLiteError, sqlite.isBusy {
            return StoreAndForwardError(
                .busy,
                "the store \(path) is locked by another process beyond the busy timeout (\(operation)); try again",
                underlying: sqlite
            )
        }
        return StoreAndForwardError(.storeFailed, "cannot \(operation) the store \(path): \(error)", underlying: error)
    }

    @discardableResult
    private func run<T>(_ operation: String, _ body: (SQLiteConnection) throws -> T) throws(StoreAndForwardError) -> T {
        lastTotals.withLock { $0 = nil }
        let db = try database()
        do {
            return try db.transaction { try body(db) }
        } catch {
            throw failure(operation, error)
        }
    }

    // MARK: Reads

    /// Stores a read durably, checking the count and currency limits in the transaction that commits it.
    ///
    /// **Group commit**: reads that arrive (from any lane) while a commit is in flight wait, and go together into
    /// the next single transaction and `fsync`. Inside it each read is checked in arrival order against the totals
    /// as the reads before it left them (a refusal fails that read only); each is inserted under a savepoint of
    /// its own. The call returns only after the `COMMIT` covering its row returned, that is after the WAL holding
    /// it was synced (`synchronous=FULL`): acknowledged ⇒ on disk. A commit that fails fails every read of its
    /// group with the error, and none of them is stored.
    ///
    /// - Parameter bootID: With the session's id in `row`: the session must be recorded (``recordSession(_:)``)
    ///   under this boot id, and its read count goes up in the same transaction; `nil` for tools and tests
    ///   that store without a session.
    /// - Returns: The totals after the read (in its group's arrival order).
    /// - Throws: ``StoreAndForwardError`` `limitExceeded` (naming the limit and figures), `sessionInvalidated`,
    ///   `storeFailed`, `busy`.
    package func insert(_ row: StoredRow, settings: StoreAndForwardSettings, bootID: String? = nil)
        async throws(StoreAndForwardError) -> StoreTotals
    {
        let result = await withCheckedContinuation { continuation in
            waiting.append(WaitingStore(row: row, settings: settings, bootID: bootID, continuation: continuation))
            scheduleCommit()
        }
        return try result.get()
    }

    /// A read waiting for the next group commit, and its caller.
    private struct WaitingStore {
        var row: StoredRow
        var settings: StoreAndForwardSettings
        var bootID: String?
        var continuation: CheckedContinuation<Result<StoreTotals, StoreAndForwardError>, Never>
    }

    /// The totals as this actor last saw them (after a group commit or a read of the totals); `nil` after any
    /// other write. Read without a hop onto the actor (whose queue may be blocked in a commit's `fsync`) by the
    /// check before the tap, which is advisory: the commit checks again, exactly.
    private nonisolated let lastTotals = Mutex<StoreTotals?>(nil)

    /// The totals as last seen by this process, without waiting for the store; `nil` when unknown. Another
    /// process may have stored or deleted reads since: use it only where the commit checks again.
    package nonisolated func recentTotals() -> StoreTotals? { lastTotals.withLock { $0 } }

    private var waiting: [WaitingStore] = []
    private var commitScheduled = false
    private var commitsHeld = false
    private var statistics = GroupCommitStatistics()

    /// Schedules one commit of whatever waits then. The commit runs as a job queued behind the ones already on
    /// this actor's serial queue, so reads arriving while a commit blocks in `fsync` queue up and join the next
    /// group.
    private func scheduleCommit() {
        guard !commitScheduled, !commitsHeld else { return }
        commitScheduled = true
        Task { self.commitWaiting() }
    }

    private func commitWaiting() {
        commitScheduled = false
        guard !commitsHeld, !waiting.isEmpty else { return }
        let group = waiting
        waiting = []
        let results = commit(group)
        statistics.groups += 1
        statistics.stores += group.count
        statistics.largestGroup = max(statistics.largestGroup, group.count)
        // Only now, the COMMIT (and its fsync) having returned, are the callers answered.
        for (store, result) in zip(group, results) { store.continuation.resume(returning: result) }
    }

    /// One transaction for `group`: limits in arrival order against running totals, one savepoint per read.
    private func commit(_ group: [WaitingStore]) -> [Result<StoreTotals, StoreAndForwardError>] {
        let operation = "store \(group.count == 1 ? "a read" : "a group of \(group.count) reads") in"
        let db: SQLiteConnection
        do {
            db = try database()
            try db.execute("BEGIN IMMEDIATE")
        } catch {
            let failure = self.failure(operation, error)
            return group.map { _ in .failure(failure) }
        }
        var results: [Result<StoreTotals, StoreAndForwardError>?] = Array(repeating: nil, count: group.count)
        do {
            var totals = try self.totals(db)
            for (index, store) in group.enumerated() {
                let record = store.row.record
                if let refusal = store.settings.storageRefusal(
                    adding: record.amountMinorUnits,
                    currency: record.currencyCode,
                    to: totals,
                    lane: record.lane
                ) {
                    results[index] = .failure(refusal)
                    continue
                }
                do {
                    try db.execute("SAVEPOINT store_read")
                    try insertRow(db, store.row)
                    if let bootID = store.bootID {
                        try countSessionRead(db, session: store.row.session, bootID: bootID)
                    }
                    try db.execute("RELEASE store_read")
                } catch {
                    // A statement's failure undoes that statement only; SQLite may also roll the whole
                    // transaction back (a full disk, an I/O error): then the group fails as a whole.
                    guard db.isInTransaction else { throw error }
                    try db.execute("ROLLBACK TO store_read")
                    try db.execute("RELEASE store_read")
                    results[index] = .failure(self.failure(operation, error))
                    continue
                }
                totals.count += 1
                totals.unbatched += 1
                totals.amounts[record.currencyCode, default: 0] += record.amountMinorUnits
                results[index] = .success(totals)
            }
            try db.execute("COMMIT")
            let seen = totals
            lastTotals.withLock { $0 = seen }
        } catch {
            lastTotals.withLock { $0 = nil }
            if db.isInTransaction { try? db.execute("ROLLBACK") }
            let failure = self.failure("commit (\(operation))", error)
            // Every read the transaction held fails with the commit's error; refusals stay refusals.
            return results.map { result in
                if case .failure(let refusal)? = result { return .failure(refusal) }
                return .failure(failure)
            }
        }
        return results.map { $0 ?? .failure(StoreAndForwardError(.storeFailed, "a read of the group got no result")) }
    }

    private func insertRow(_ db: SQLiteConnection, _ row: StoredRow) throws {
        let record = row.record
        try db.query(
            """
            INSERT INTO reads (id, session, lane, device, read_at_ms, kind, currency, amount_minor, amount, brand,
                last_four, expiry_month, expiry_year, expiration_state, effective_state, envelope, body, signature,
                mac)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """,
            [
                .text(record.id), .text(row.session), .text(record.lane), .text(record.device),
                .integer(record.readAtMilliseconds), .text(record.kind.name), .text(record.currencyCode),
                .integer(record.amountMinorUnits), .text(record.amount), .text(record.brand),
                .text(record.lastFourDigits), .integer(Int64(record.expirationMonth)),
                .integer(Int64(record.expirationYear)), .text(record.expirationState.name),
                .text(record.effectiveState.name), .blob(row.envelope), .blob(row.body), .blob(row.signature),
                .blob(try HMAC.authenticationCode(for: row.signature + row.body, key: rowKey)),
            ]
        )
    }

    /// Counts a read to its session, which must have been recorded under `bootID`.
    private func countSessionRead(_ db: SQLiteConnection, session: String, bootID: String) throws {
        try db.query(
            "UPDATE sessions SET read_count = read_count + 1 WHERE id = ? AND boot_id = ?",
            [.text(session), .text(bootID)]
        )
        guard db.changes == 0 else { return }
        throw try sessionRefusal(db, session: session, bootID: bootID)
    }

    private func sessionRefusal(_ db: SQLiteConnection, session: String, bootID: String) throws
        -> StoreAndForwardError
    {
        guard
            let recorded = try db.query("SELECT boot_id FROM sessions WHERE id = ?", [.text(session)]).first?.first?
                .text
        else {
            return StoreAndForwardError(
                .sessionInvalidated,
                "offline session \(session) is not recorded in the store: prepare a new one"
            )
        }
        return StoreAndForwardError(
            .sessionInvalidated,
            "the host restarted since offline session \(session) was prepared (boot id \(recorded), now \(bootID)): "
                + "a store-and-forward session is invalid after a restart; prepare online, then a new session"
        )
    }

    /// How group commits went since this store was opened.
    package func groupCommitStatistics() -> GroupCommitStatistics { statistics }

    /// Keeps reads waiting instead of committing them, until ``releaseCommitsForTesting()``: lets a test form a
    /// group of known members.
    package func holdCommitsForTesting() { commitsHeld = true }

    /// Commits what waits, as one group, and resumes group commits.
    package func releaseCommitsForTesting() {
        commitsHeld = false
        scheduleCommit()
    }

    /// How many reads wait for a commit.
    package func waitingStores() -> Int { waiting.count }

    /// Counts and totals.
    package func totals() throws(StoreAndForwardError) -> StoreTotals {
        let db = try database()
        do {
            let totals = try db.readTransaction { try self.totals(db) }
            lastTotals.withLock { $0 = totals }
            return totals
        } catch {
            throw failure("read", error)
        }
    }

    private func totals(_ db: SQLiteConnection) throws -> StoreTotals {
        var totals = StoreTotals()
        for row in try db.query(
            "SELECT currency, COUNT(*), SUM(amount_minor), COUNT(batch_id) FROM reads GROUP BY currency"
        ) {
            let count = Int(row[1].integer ?? 0)
            totals.count += count
            totals.unbatched += count - Int(row[3].integer ?? 0)
            if let currency = row[0].text { totals.amounts[currency] = row[2].integer ?? 0 }
        }
        totals.activeBatchID = try db.query("SELECT id FROM batches WHERE state = 'active'").first?.first?.text
        if let seconds = try db.query("SELECT value FROM meta WHERE key = 'last_processor_contact'").first?.first?
            .integer
        {
            totals.lastProcessorContact = Date(timeIntervalSince1970: TimeInterval(seconds))
        }
        return totals
    }

    /// Records that the processor was reached at `date` (kept when later than the one recorded), during the boot
    /// `bootID`.
    package func recordProcessorContact(_ date: Date, bootID: String) throws(StoreAndForwardError) {
        try run("record the processor contact in") { db in try self.recordProcessorContact(db, date, bootID: bootID) }
    }

    private func recordProcessorContact(_ db: SQLiteConnection, _ date: Date, bootID: String) throws {
        let seconds = Int64(date.timeIntervalSince1970)
        try db.query(
            """
            INSERT INTO meta (key, value) VALUES ('last_processor_contact', ?)
            ON CONFLICT (key) DO UPDATE SET value = MAX(value, excluded.value)
            """,
            [.integer(seconds)]
        )
        try db.query(
            """
            INSERT INTO processor_contacts (boot_id, last_contact) VALUES (?, ?)
            ON CONFLICT (boot_id) DO UPDATE SET last_contact = MAX(last_contact, excluded.last_contact)
            """,
            [.text(bootID), .integer(seconds)]
        )
    }

    /// The last processor contact recorded during the boot `bootID` (one recorded before a restart does not
    /// count: Apple's store-and-forward needs an online session since the device last started).
    package func processorContact(bootID: String) throws(StoreAndForwardError) -> Date? {
        try run("read") { db in
            try db.query("SELECT last_contact FROM processor_contacts WHERE boot_id = ?", [.text(bootID)]).first?
                .first?.integer.map { Date(timeIntervalSince1970: TimeInterval($0)) }
        }
    }

    // MARK: Sessions

    /// An offline session as the store records it: its boot id, times and read count.
    package struct SessionRecord: Hashable, Sendable {
        package var id: String
        package var bootID: String
        package var preparedAt: Date
        package var expiresAt: Date
        /// Reads this session stored, declined ones not counted.
        package var readCount: Int

        package init(id: String, bootID: String, preparedAt: Date, expiresAt: Date, readCount: Int = 0) {
            self.id = id
            self.bootID = bootID
            self.preparedAt = preparedAt
            self.expiresAt = expiresAt
            self.readCount = readCount
        }
    }

    /// Records a new offline session (its reads are refused unless stored under the same boot id).
    package func recordSession(_ session: SessionRecord) throws(StoreAndForwardError) {
        try run("record a session in") { db in
            try db.query(
                "INSERT INTO sessions (id, boot_id, prepared_at_ms, expires_at_ms, read_count) VALUES (?, ?, ?, ?, 0)",
                [
                    .text(session.id), .text(session.bootID),
                    .integer(Int64(session.preparedAt.timeIntervalSince1970 * 1000)),
                    .integer(Int64(session.expiresAt.timeIntervalSince1970 * 1000)),
                ]
            )
        }
    }

    /// The session recorded as `id`, or `nil`.
    package func session(_ id: String) throws(StoreAndForwardError) -> SessionRecord? {
        try run("read") { db in
            try db.query(
                "SELECT boot_id, prepared_at_ms, expires_at_ms, read_count FROM sessions WHERE id = ?",
                [.text(id)]
            ).first.map { row in
                SessionRecord(
                    id: id,
                    bootID: row[0].text ?? "",
                    preparedAt: Date(timeIntervalSince1970: Double(row[1].integer ?? 0) / 1000),
                    expiresAt: Date(timeIntervalSince1970: Double(row[2].integer ?? 0) / 1000),
                    readCount: Int(row[3].integer ?? 0)
                )
            }
        }
    }

    /// Every stored read in order, for tests and `proxima store status --verbose`.
    package func rows() throws(StoreAndForwardError) -> [StoredRow] {
        try run("read") { db in
            try self.rows(
                db,
                "SELECT body, envelope, signature, session, batch_id, mac, id FROM reads ORDER BY read_at_ms, seq"
            )
        }
    }

    /// Rows of `sql` (selecting body, envelope, signature, session, batch_id, mac, id), each checked against its
    /// HMAC and its id column: a row edited in the database throws `tampered`.
    private func rows(_ db: SQLiteConnection, _ sql: String, _ bindings: [SQLiteValue] = []) throws -> [StoredRow] {
        let rowKey = self.rowKey
        return try db.query(sql, bindings).map { row in
            let body = row[0].blob ?? []
            let signature = row[2].blob ?? []
            guard
                (try? HMAC.isValidAuthenticationCode(row[5].blob ?? [], for: signature + body, key: rowKey)) == true
            else {
                throw StoreAndForwardError(
                    .tampered,
                    "stored read \(row[6].text ?? "?") does not verify under the store key (its row was edited); "
                        + "nothing was batched"
                )
            }
            let record: StoredReadRecord
            do {
                record = try StoredReadRecord(body: body)
            } catch let error as BatchContainerError {
                throw StoreAndForwardError(.tampered, "a stored read's record does not parse: \(error.reason)")
            }
            guard record.id == row[6].text else {
                throw StoreAndForwardError(.tampered, "stored read \(row[6].text ?? "?") holds another read's record")
            }
            return StoredRow(
                record: record,
                body: body,
                envelope: row[1].blob ?? [],
                signature: signature,
                session: row[3].text ?? "",
                batchID: row[4].text
            )
        }
    }

    /// Deletes the last read of `session` if it is at most `window` old at `now` and not batched.
    /// - Returns: The declined read's id.
    /// - Throws: `resultNotFound` (no read of the session), `declineFailed` (too late, or batched).
    /// `session` `nil` declines the store's last read, whatever its session (`proxima store decline`).
    package func declineLast(session: String?, now: Date, window: Duration) throws(StoreAndForwardError) -> String {
        try run("decline a read in") { db in
            let last =
                try session.map {
                    try db.query(
                        "SELECT seq, id, read_at_ms, batch_id, session FROM reads WHERE session = ? ORDER BY seq DESC LIMIT 1",
                        [.text($0)]
                    )
                } ?? db.query("SELECT seq, id, read_at_ms, batch_id, session FROM reads ORDER BY seq DESC LIMIT 1")
            guard let row = last.first, let seq = row[0].integer, let id = row[1].text, let readAt = row[2].integer
            else {
                throw StoreAndForwardError(
                    .resultNotFound,
                    session == nil ? "the store holds no read to decline" : "this session has no stored read to decline"
                )
            }
            if let batch = row[3].text {
                throw StoreAndForwardError(
                    .declineFailed,
                    "read \(id) is in batch \(batch) already; only a read not yet batched can be declined"
                )
            }
            let age = Int64(now.timeIntervalSince1970 * 1000) - readAt
            let windowMilliseconds = window.components.seconds * 1000
            guard age <= windowMilliseconds else {
                throw StoreAndForwardError(
                    .declineFailed,
                    "read \(id) was stored \(age / 1000) s ago; decline() is allowed within "
                        + "\(window.components.seconds) s of the read"
                )
            }
            try db.query("DELETE FROM reads WHERE seq = ?", [.integer(seq)])
            if let session = row[4].text {
                try db.query(
                    "UPDATE sessions SET read_count = read_count - 1 WHERE id = ? AND read_count > 0",
                    [.text(session)]
                )
            }
            return id
        }
    }

    // MARK: Batches

    /// The active batch, if any.
    package func activeBatch() throws(StoreAndForwardError) -> StoredBatch? {
        try run("read") { try self.activeBatch($0) }
    }

    private func activeBatch(_ db: SQLiteConnection) throws -> StoredBatch? {
        try db.query(
            "SELECT id, count, created_at, container, digest, deletion_token FROM batches WHERE state = 'active'"
        ).first.map { row in
            StoredBatch(
                id: row[0].text ?? "",
                count: Int(row[1].integer ?? 0),
                createdAt: Date(timeIntervalSince1970: TimeInterval(row[2].integer ?? 0)),
                container: row[3].blob ?? [],
                digest: row[4].blob ?? [],
                deletionToken: row[5].text
            )
        }
    }

    /// Makes the active batch of the oldest `size` unbatched reads (0 = all; by read time, then commit order): verifies each row's signature,
    /// signs the container, and marks the reads, in one transaction.
    /// - Throws: `batchAlreadyExists`, `resultsNotFound`, `batchSizeInvalid`, `tampered` (a row whose signature
    ///   or envelope digest does not verify: nothing is batched), `storeFailed`.
    package func makeBatch(size: Int, readerIdentifier: String, now: Date) throws(StoreAndForwardError) -> StoredBatch {
        let identity = self.identity
        return try run("make a batch in") { db in
            if let active = try self.activeBatch(db) {
                throw StoreAndForwardError(
                    .batchAlreadyExists,
                    "batch \(active.id) of \(active.count) reads is active: resolve it with the processor's "
                        + "deletion token, or reset it, before fetching another"
                )
            }
            let available = Int(
                try db.query("SELECT COUNT(*) FROM reads WHERE batch_id IS NULL").first?.first?.integer ?? 0
            )
            guard available > 0 else {
                throw StoreAndForwardError(.resultsNotFound, "no stored read is waiting to be batched")
            }
            guard size >= 0, size <= available else {
                throw StoreAndForwardError(
                    .batchSizeInvalid,
                    "batch size \(size) is not in 0…\(available) (0 = all \(available) stored reads)"
                )
            }
            let chosen = try self.rows(
                db,
                """
                SELECT body, envelope, signature, session, batch_id, mac, id FROM reads WHERE batch_id IS NULL
                ORDER BY read_at_ms, seq LIMIT ?
                """,
                [.integer(Int64(size == 0 ? available : size))]
            )
            var entries: [BatchContainer.Entry] = []
            entries.reserveCapacity(chosen.count)
            for row in chosen {
                // The row's HMAC was checked when it was read; the envelope must be the one its record signs.
                guard (try? SHA256.hash(row.envelope)) == row.record.envelopeDigest else {
                    throw StoreAndForwardError(
                        .tampered,
                        "stored read \(row.record.id) does not verify under the store key (its row was edited); "
                            + "nothing was batched"
                    )
                }
                entries.append(
                    BatchContainer.Entry(
                        record: row.record,
                        body: row.body,
                        envelope: row.envelope,
                        signature: row.signature
                    )
                )
            }
            let id = RandomUUID.lowercasedString()
            let createdAt = Int64(now.timeIntervalSince1970)
            let container = try BatchContainer.sign(
                id: id,
                readerIdentifier: readerIdentifier,
                createdAt: createdAt,
                entries: entries,
                certificate: identity.certificate.derRepresentation,
                key: identity.privateKey
            ).bytes
            let digest = try BatchContainer.digest(container)
            try db.query(
                "INSERT INTO batches (id, created_at, count, container, digest, state) VALUES (?, ?, ?, ?, ?, 'active')",
                [.text(id), .integer(createdAt), .integer(Int64(entries.count)), .blob(container), .blob(digest)]
            )
            try db.query(
                """
                UPDATE reads SET batch_id = ? WHERE seq IN
                    (SELECT seq FROM reads WHERE batch_id IS NULL ORDER BY read_at_ms, seq LIMIT ?)
                """,
                [.text(id), .integer(Int64(entries.count))]
            )
            return StoredBatch(
                id: id,
                count: entries.count,
                createdAt: Date(timeIntervalSince1970: TimeInterval(createdAt)),
                container: container,
                digest: digest,
                deletionToken: nil
            )
        }
    }

    /// Detaches the active batch's reads (kept, batchable again) and closes the batch as reset.
    /// - Returns: The batch id.
    /// - Throws: `batchNotFound` when no batch is active.
    package func resetBatch(now: Date) throws(StoreAndForwardError) -> String {
        try run("reset the batch of") { db in
            guard let active = try self.activeBatch(db) else {
                throw StoreAndForwardError(.batchNotFound, "no batch is active; there is nothing to reset")
            }
            try db.query("UPDATE reads SET batch_id = NULL WHERE batch_id = ?", [.text(active.id)])
            try db.query(
                "UPDATE batches SET state = 'reset', closed_at = ?, container = x'' WHERE id = ?",
                [.integer(Int64(now.timeIntervalSince1970)), .text(active.id)]
            )
            return active.id
        }
    }

    /// Records a verified processor deletion token for the active batch, to resolve it later with
    /// ``resolve(_:now:)`` (the sketch's `delete(using: batch.deletionToken)`).
    package func recordDeletionToken(_ token: VerifiedDeletionToken) throws(StoreAndForwardError) {
        try run("record a deletion token in") { db in
            _ = try self.checkedBatch(db, for: token)
            try db.query(
                "UPDATE batches SET deletion_token = ? WHERE id = ?",
                [.text(token.raw), .text(token.batchID)]
            )
        }
    }

    /// Deletes the active batch's reads with the processor's verified deletion token for it, and records the
    /// token so it can never be used again.
    /// - Returns: How many reads remain stored.
    /// - Throws: `batchNotFound` (no active batch), `deletionTokenInvalid` (another batch, a replayed token, a
    ///   digest that is not the batch's); nothing is deleted then.
    package func resolve(_ token: VerifiedDeletionToken, now: Date, bootID: String) throws(StoreAndForwardError) -> Int
    {
        try run("resolve a batch in") { db in
            let batch = try self.checkedBatch(db, for: token)
            try db.query("DELETE FROM reads WHERE batch_id = ?", [.text(batch.id)])
            try db.query(
                "UPDATE batches SET state = 'resolved', closed_at = ?, container = x'', deletion_token = ? WHERE id = ?",
                [.integer(Int64(now.timeIntervalSince1970)), .text(token.raw), .text(batch.id)]
            )
            try db.query(
                "INSERT INTO used_deletion_tokens (token_id, batch_id, used_at) VALUES (?, ?, ?)",
                [.text(token.tokenID), .text(batch.id), .integer(Int64(now.timeIntervalSince1970))]
            )
            try self.recordProcessorContact(db, token.issuedAt, bootID: bootID)
            return Int(try db.query("SELECT COUNT(*) FROM reads").first?.first?.integer ?? 0)
        }
    }

    /// The active batch `token` is for, or why the token does not delete it.
    private func checkedBatch(_ db: SQLiteConnection, for token: VerifiedDeletionToken) throws -> StoredBatch {
        if let used = try db.query(
            "SELECT batch_id FROM used_deletion_tokens WHERE token_id = ?",
            [.text(token.tokenID)]
        ).first?.first?.text {
            throw StoreAndForwardError(
                .deletionTokenInvalid,
                "deletion token \(token.tokenID) was used already (for batch \(used)): a replay; nothing deleted"
            )
        }
        guard let active = try activeBatch(db) else {
            let state = try db.query("SELECT state FROM batches WHERE id = ?", [.text(token.batchID)]).first?.first?
                .text
            if let state {
                throw StoreAndForwardError(
                    .deletionTokenInvalid,
                    "the token is for batch \(token.batchID), which was \(state) already; nothing deleted"
                )
            }
            throw StoreAndForwardError(.batchNotFound, "no batch is active; fetch a batch and send it first")
        }
        guard token.batchID == active.id else {
            throw StoreAndForwardError(
                .deletionTokenInvalid,
                "the token is for batch \(token.batchID), not the active batch \(active.id); nothing deleted"
            )
        }
        guard token.digest == active.digest else {
            throw StoreAndForwardError(
                .deletionTokenInvalid,
                "the token's batch digest is not the SHA-256 of batch \(active.id) as this store sent it "
                    + "(the processor received other bytes); nothing deleted"
            )
        }
        return active
    }

    /// SQLite's `PRAGMA integrity_check`: `["ok"]` for a sound database.
    package func integrityCheck() throws(StoreAndForwardError) -> [String] {
        let db = try database()
        do {
            return try db.query("PRAGMA integrity_check").compactMap { $0.first?.text }
        } catch {
            throw failure("check", error)
        }
    }

    /// The schema version (`PRAGMA user_version`).
    package func schemaVersion() throws(StoreAndForwardError) -> Int {
        try run("read") { db in Int(try db.query("PRAGMA user_version").first?.first?.integer ?? 0) }
    }

    /// Runs raw SQL on the store: for tests that edit a row as an attacker would.
    package func executeForTesting(_ sql: String) throws(StoreAndForwardError) {
        let db = try database()
        do { try db.execute(sql) } catch { throw failure("edit", error) }
    }

    /// Closes the connection (reopened on next use).
    package func close() { connection = nil }
}
