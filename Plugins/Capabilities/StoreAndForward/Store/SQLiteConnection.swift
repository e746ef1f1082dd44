internal import CSQLite
internal import ProximaCore

/// A SQLite error: the result code, the extended code and SQLite's message, with what was being done.
package struct SQLiteError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The primary result code (`SQLITE_BUSY` = 5, `SQLITE_CORRUPT` = 11, …).
    package let code: Int32
    package let extendedCode: Int32
    package let operation: String
    package let message: String

    package var description: String { "SQLite \(operation): \(message) (code \(extendedCode))" }

    /// Another connection holds the write lock beyond the busy timeout.
    package var isBusy: Bool { code == SQLITE_BUSY || code == SQLITE_LOCKED }
}

/// One SQLite connection (`sqlite3 *`) and its prepared statements.
///
/// Not `Sendable`: it lives inside the ``ReadStore`` actor, whose executor is a serial queue of its own, so every
/// (blocking) SQLite call runs there and never on Swift's cooperative pool.
final class SQLiteConnection {
    private let handle: OpaquePointer
    private var statements: [String: OpaquePointer] = [:]
    let path: String

    /// Opens (creating) the database at `path` in WAL mode with foreign keys on and a busy timeout; the file must
    /// exist already (``ReadStore`` creates it 0600 first, so it is never readable by others).
    init(path: String, busyTimeoutMilliseconds: Int32 = 10_000) throws(SQLiteError) {
        var db: OpaquePointer?
        let flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX
        let status = sqlite3_open_v2(path, &db, flags, nil)
        guard status == SQLITE_OK, let db else {
            let message = db.map { String(cString: sqlite3_errmsg($0)) } ?? "out of memory"
            if let db { sqlite3_close_v2(db) }
            throw SQLiteError(code: status & 0xFF, extendedCode: status, operation: "open \(path)", message: message)
        }
        handle = db
        self.path = path
        sqlite3_extended_result_codes(db, 1)
        sqlite3_busy_timeout(db, busyTimeoutMilliseconds)
        try execute("PRAGMA journal_mode=WAL")
        try execute("PRAGMA foreign_keys=ON")
        // Every commit that returns has reached the disk: the WAL is synced on each commit (FULL), not only at
        // checkpoints (NORMAL). See Docs/store-and-forward.md.
        try execute("PRAGMA synchronous=FULL")
    }

    deinit {
        for statement in statements.values { sqlite3_finalize(statement) }
        sqlite3_close_v2(handle)
    }

    private func failure(_ status: Int32, _ operation: String) -> SQLiteError {
        SQLiteError(
            code: status & 0xFF,
            extendedCode: sqlite3_extended_errcode(handle),
            operation: operation,
            message: String(cString: sqlite3_errmsg(handle))
        )
    }

    /// Runs statements without results (`;`-separated).
    func execute(_ sql: String) throws(SQLiteError) {
        let status = sqlite3_exec(handle, sql, nil, nil, nil)
        guard status == SQLITE_OK else { throw failure(status, "\(sql.prefix(60))") }
    }

    /// Runs `body` in an immediate transaction (the write lock taken at once), committed when it returns and
    /// rolled back when it throws.
    func transaction<T>(_ body: () throws -> T) throws -> T {
        try execute("BEGIN IMMEDIATE")
        do {
            let value = try body()
            try execute("COMMIT")
            return value
        } catch {
            try? execute("ROLLBACK")
            throw error
        }
    }

    /// Runs `body` in a deferred (read) transaction: one snapshot of the database, no write lock.
    func readTransaction<T>(_ body: () throws -> T) throws -> T {
        try execute("BEGIN")
        do {
            let value = try body()
            try execute("COMMIT")
            return value
        } catch {
            try? execute("ROLLBACK")
            throw error
        }
    }

    /// Whether a transaction is open (SQLite rolls one back by itself after some errors: a full disk, I/O).
    var isInTransaction: Bool { sqlite3_get_autocommit(handle) == 0 }

    /// The rows of `sql` with `bindings`, each row as its column values.
    @discardableResult
    func query(_ sql: String, _ bindings: [SQLiteValue] = []) throws(SQLiteError) -> [[SQLiteValue]] {
        let statement = try prepared(sql)
        defer {
            sqlite3_reset(statement)
            sqlite3_clear_bindings(statement)
        }
        for (index, value) in bindings.enumerated() {
            let position = Int32(index + 1)
            let status: Int32
            switch value {
            case .null: status = sqlite3_bind_null(statement, position)
            case .integer(let number): status = sqlite3_bind_int64(statement, position, number)
            case .text(let text): status = sqlite3_bind_text(statement, position, text, -1, csqlite_transient())
            case .blob(let bytes):
                status = bytes.withUnsafeBytes { raw in
                    sqlite3_bind_blob(statement, position, raw.baseAddress, Int32(raw.count), csqlite_transient())
                }
            }
            guard status == SQLITE_OK else { throw failure(status, "bind \(position) of \(sql.prefix(40))") }
        }
        var rows: [[SQLiteValue]] = []
        while true {
            let status = sqlite3_step(statement)
            if status == SQLITE_DONE { break }
            guard status == SQLITE_ROW else { throw failure(status, "\(sql.prefix(60))") }
            let columns = sqlite3_column_count(statement)
            var row: [SQLiteValue] = []
            row.reserveCapacity(Int(columns))
            for column in 0..<columns {
                switch sqlite3_column_type(statement, column) {
                case SQLITE_INTEGER: row.append(.integer(sqlite3_column_int64(statement, column)))
                case SQLITE_TEXT: row.append(.text(String(cString: sqlite3_column_text(statement, column))))
                case SQLITE_BLOB:
                    let count = Int(sqlite3_column_bytes(statement, column))
                    if count == 0 {
                        row.append(.blob([]))
                    } else if let base = sqlite3_column_blob(statement, column) {
                        row.append(.blob(Array(UnsafeRawBufferPointer(start: base, count: count))))
                    } else {
                        row.append(.null)
                    }
                default: row.append(.null)
                }
            }
            rows.append(row)
        }
        return rows
    }

    /// Rows changed by the last statement.
    var changes: Int { Int(sqlite3_changes(handle)) }

    private func prepared(_ sql: String) throws(SQLiteError) -> OpaquePointer {
        if let statement = statements[sql] { return statement }
        var statement: OpaquePointer?
        let status = sqlite3_prepare_v2(handle, sql, -1, &statement, nil)
        guard status == SQLITE_OK, let statement else { throw failure(status, "prepare \(sql.prefix(60))") }
        statements[sql] = statement
        return statement
    }
}

/// A value bound to or read from SQLite.
enum SQLiteValue: Hashable, Sendable {
    case null
    case integer(Int64)
    case text(String)
    case blob([UInt8])

    var integer: Int64? { if case .integer(let value) = self { value } else { nil } }
    var text: String? { if case .text(let value) = self { value } else { nil } }
    var blob: [UInt8]? { if case .blob(let value) = self { value } else { nil } }
}
