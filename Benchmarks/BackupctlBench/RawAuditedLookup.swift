import BackupCrypto
import BackupModel
import GRDBSQLite
import SQLiteStore

/// The reference of an audited lookup: the store's resolve statement and one audit row written
/// in a transaction of its own (`BEGIN IMMEDIATE`, the head read, `INSERT`, `COMMIT`), all
/// through the SQLite C API with prepared statements, on a connection of its own to the same
/// file. The rows go to a copy of the audit table (`bench_audit`, the same columns, checks and
/// index as the store's since migration `v12-audit-hash-unindexed`), so the console's chain is
/// untouched.
final class RawAuditedLookup {
    private var db: OpaquePointer?
    private var resolve: OpaquePointer?
    private var head: OpaquePointer?
    private var insert: OpaquePointer?
    private var begin: OpaquePointer?
    private var commit: OpaquePointer?

    init(path: String) throws {
        guard sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, nil) == SQLITE_OK,
            sqlite3_busy_timeout(db, 5000) == SQLITE_OK,
            sqlite3_exec(db, "PRAGMA cache_size = -65536", nil, nil, nil) == SQLITE_OK,
            // As the store's connections (GRDB's pool in WAL mode): commits do not wait for fsync.
            sqlite3_exec(db, "PRAGMA synchronous = NORMAL", nil, nil, nil) == SQLITE_OK,
            sqlite3_exec(
                db,
                """
                CREATE TABLE IF NOT EXISTS bench_audit (
                    seq INTEGER PRIMARY KEY CHECK (seq > 0), at INTEGER NOT NULL, operator TEXT NOT NULL,
                    tenant TEXT, action TEXT NOT NULL, target TEXT,
                    details TEXT NOT NULL CHECK (json_valid(details)),
                    prev_hash TEXT NOT NULL CHECK (length(prev_hash) = 64),
                    hash TEXT NOT NULL CHECK (length(hash) = 64)) STRICT;
                CREATE INDEX IF NOT EXISTS bench_audit_by_tenant ON bench_audit(tenant, seq)
                """, nil, nil, nil) == SQLITE_OK,
            sqlite3_prepare_v2(db, SQLiteConsoleStore.resolveSQL, -1, &resolve, nil) == SQLITE_OK,
            sqlite3_prepare_v2(db, "SELECT seq, hash FROM bench_audit ORDER BY seq DESC LIMIT 1", -1, &head, nil)
                == SQLITE_OK,
            sqlite3_prepare_v2(
                db,
                """
                INSERT INTO bench_audit (seq, at, operator, tenant, action, target, details, prev_hash, hash)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
                """, -1, &insert, nil) == SQLITE_OK,
            sqlite3_prepare_v2(db, "BEGIN IMMEDIATE", -1, &begin, nil) == SQLITE_OK,
            sqlite3_prepare_v2(db, "COMMIT", -1, &commit, nil) == SQLITE_OK
        else { throw ConsoleError.internalError("server bench: cannot open the raw SQLite connection") }
    }

    deinit {
        for statement in [resolve, head, insert, begin, commit] { sqlite3_finalize(statement) }
        sqlite3_close_v2(db)
    }

    /// Resolves `pk` in `tenant` and, on a hit, appends one audit row; whether it was a hit.
    func lookup(tenant: String, pk: String, at millis: Int64) -> Bool {
        guard let backupId = resolveBackup(tenant: tenant, pk: pk) else { return false }
        guard step(begin) else { return false }
        var link = headLink()
        return append(tenant: tenant, backupId: backupId, after: &link, at: millis) && step(commit)
    }

    /// A script's store work without the console: each key resolved and, on a hit, one audit
    /// row, the rows of each `group` keys in one transaction (as a script's group commit);
    /// how many hit.
    func lookups(tenant: String, pks: [String], group: Int, at millis: Int64) -> Int {
        var hits = 0
        var start = 0
        while start < pks.count {
            guard step(begin) else { return hits }
            var link = headLink()
            for pk in pks[start..<min(pks.count, start + group)] {
                guard let backupId = resolveBackup(tenant: tenant, pk: pk) else { continue }
                if append(tenant: tenant, backupId: backupId, after: &link, at: millis) { hits += 1 }
            }
            guard step(commit) else { return hits }
            start += group
        }
        return hits
    }

    /// The next row's `seq` and the newest row's hash (1 and the genesis hash for none).
    private func headLink() -> (seq: Int64, prevHash: String) {
        defer { sqlite3_reset(head) }
        guard sqlite3_step(head) == SQLITE_ROW, let hash = sqlite3_column_text(head, 1) else {
            return (1, AuditEntry.genesisHash)
        }
        return (sqlite3_column_int64(head, 0) + 1, String(cString: hash))
    }

    /// Inserts one row chained after `link` and moves `link` past it; whether it was inserted.
    private func append(
        tenant: String, backupId: String, after link: inout (seq: Int64, prevHash: String), at millis: Int64
    )
        -> Bool
    {
        let hash = SHA256.hex(Array((link.prevHash + backupId + String(link.seq)).utf8))
        let texts = [
            "bench", tenant, "backup.lookup", backupId, #"{"kind":"passkey","scope":"MAIN"}"#, link.prevHash, hash,
        ]
        sqlite3_bind_int64(insert, 1, link.seq)
        sqlite3_bind_int64(insert, 2, millis)
        for (offset, text) in texts.enumerated() {
            sqlite3_bind_text(insert, Int32(offset + 3), text, -1, Self.transient)
        }
        defer { sqlite3_reset(insert) }
        guard sqlite3_step(insert) == SQLITE_DONE else { return false }
        link = (link.seq + 1, hash)
        return true
    }

    private func resolveBackup(tenant: String, pk: String) -> String? {
        tenant.withCString { t in
            pk.withCString { k in
                defer { sqlite3_reset(resolve) }
                sqlite3_bind_text(resolve, 1, t, -1, nil)
                sqlite3_bind_text(resolve, 2, k, -1, nil)
                guard sqlite3_step(resolve) == SQLITE_ROW, let id = sqlite3_column_text(resolve, 0) else { return nil }
                return String(cString: id)
            }
        }
    }

    private func step(_ statement: OpaquePointer?) -> Bool {
        defer { sqlite3_reset(statement) }
        return sqlite3_step(statement) == SQLITE_DONE
    }

    private static let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)
}
