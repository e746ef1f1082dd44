/// The store's schema, as numbered migrations: migration *n* takes `PRAGMA user_version` from *n* − 1 to *n*, in
/// the same transaction as its statements, so a store is always at one version and never half migrated. Append;
/// never edit a migration that shipped.
enum Migrations {
    static let all: [String] = [
        // 1: reads, batches, used deletion tokens, metadata.
        """
        CREATE TABLE reads (
            seq INTEGER PRIMARY KEY AUTOINCREMENT,
            id TEXT NOT NULL UNIQUE,
            session TEXT NOT NULL,
            lane TEXT NOT NULL,
            device TEXT NOT NULL,
            read_at_ms INTEGER NOT NULL,
            kind TEXT NOT NULL CHECK (kind IN ('purchase', 'refund')),
            currency TEXT NOT NULL,
            amount_minor INTEGER NOT NULL CHECK (amount_minor > 0),
            amount TEXT NOT NULL,
            brand TEXT NOT NULL,
            last_four TEXT NOT NULL,
            expiry_month INTEGER NOT NULL,
            expiry_year INTEGER NOT NULL,
            expiration_state TEXT NOT NULL,
            effective_state TEXT NOT NULL,
            envelope BLOB NOT NULL,
            body BLOB NOT NULL,
            signature BLOB NOT NULL,
            mac BLOB NOT NULL,
            batch_id TEXT REFERENCES batches(id)
        );
        CREATE INDEX reads_by_batch ON reads (batch_id, read_at_ms, seq);
        CREATE TABLE batches (
            id TEXT PRIMARY KEY,
            created_at INTEGER NOT NULL,
            count INTEGER NOT NULL,
            container BLOB NOT NULL,
            digest BLOB NOT NULL,
            state TEXT NOT NULL CHECK (state IN ('active', 'reset', 'resolved')),
            closed_at INTEGER,
            deletion_token TEXT
        );
        CREATE UNIQUE INDEX one_active_batch ON batches (state) WHERE state = 'active';
        CREATE TABLE used_deletion_tokens (
            token_id TEXT PRIMARY KEY,
            batch_id TEXT NOT NULL,
            used_at INTEGER NOT NULL
        );
        CREATE TABLE meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL);
        """,
        // 2: offline sessions with the boot id they were prepared in and their read count; the processor's last
        // contact per boot (a contact before a restart does not count after it); an index covering the totals.
        """
        CREATE TABLE sessions (
            id TEXT PRIMARY KEY,
            boot_id TEXT NOT NULL,
            prepared_at_ms INTEGER NOT NULL,
            expires_at_ms INTEGER NOT NULL,
            read_count INTEGER NOT NULL DEFAULT 0 CHECK (read_count >= 0)
        );
        CREATE TABLE processor_contacts (boot_id TEXT PRIMARY KEY, last_contact INTEGER NOT NULL);
        -- The count and totals every group commit reads: an index-only scan, not the rows and their envelopes.
        CREATE INDEX reads_totals ON reads (currency, amount_minor, batch_id);
        """,
    ]
}
