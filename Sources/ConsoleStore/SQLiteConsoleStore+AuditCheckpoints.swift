import BackupModel
import GRDB

/// Where signed audit checkpoints are kept (`audit verify`, `audit export`, the server's signer).
public protocol AuditCheckpointStore: ConsoleStore {
    /// Appends `checkpoint` after the existing ones.
    func appendAuditCheckpoint(_ checkpoint: AuditCheckpoint) async throws(ConsoleError)
    /// Every checkpoint, oldest first.
    func auditCheckpoints() async throws(ConsoleError) -> [AuditCheckpoint]
    /// The newest checkpoint, if any.
    func latestAuditCheckpoint() async throws(ConsoleError) -> AuditCheckpoint?
    /// The head entry's seq (0 for an empty log) and the newest checkpoint, read together.
    func auditCheckpointLag() async throws(ConsoleError) -> (headSeq: Int64, latest: AuditCheckpoint?)
    /// The head entry (`nil` for an empty log) and the newest checkpoint, read together.
    func auditHead() async throws(ConsoleError) -> (head: AuditEntry?, latest: AuditCheckpoint?)
    /// Appends `checkpoint` if the newest checkpoint is still `previous` (compared by hash;
    /// `nil`: there is none yet), in one write transaction; returns whether it did. Two signers
    /// cannot both chain to the same predecessor: the second finds it replaced and appends nothing.
    func appendAuditCheckpoint(_ checkpoint: AuditCheckpoint, ifLatestIs previous: AuditCheckpoint?)
        async throws(ConsoleError) -> Bool
    /// Entries with `at >= sinceMillis` and `seq > afterSeq`, oldest first, at most `limit`
    /// (`audit export`); `tenant` narrows to one tenant, `nil` is the whole chain.
    func auditEntries(tenant: TenantName?, sinceMillis: Int64, afterSeq: Int64, limit: Int) async throws(ConsoleError)
        -> [AuditEntry]
}

extension SQLiteConsoleStore: AuditCheckpointStore {
    private static let checkpointColumns = "seq, head_hash, at, prev_checkpoint_hash, signature"

    private static func insert(_ checkpoint: AuditCheckpoint, _ db: Database) throws {
        try db.execute(
            sql: """
                INSERT INTO audit_checkpoints (seq, head_hash, at, prev_checkpoint_hash, signature)
                VALUES (?, ?, ?, ?, ?)
                """,
            arguments: [
                checkpoint.seq, checkpoint.headHash, checkpoint.atMillis, checkpoint.prevCheckpointHash,
                checkpoint.signature,
            ])
    }

    private static func checkpoint(_ row: Row) -> AuditCheckpoint {
        AuditCheckpoint(
            seq: row["seq"], headHash: row["head_hash"], atMillis: row["at"],
            prevCheckpointHash: row["prev_checkpoint_hash"], signature: row["signature"])
    }

    private static func latestCheckpoint(_ db: Database) throws -> AuditCheckpoint? {
        try Row.fetchOne(
            db, sql: "SELECT \(checkpointColumns) FROM audit_checkpoints ORDER BY id DESC LIMIT 1"
        ).map(checkpoint)
    }

    public func appendAuditCheckpoint(_ checkpoint: AuditCheckpoint) async throws(ConsoleError) {
        try await write("appending an audit checkpoint") { db in try Self.insert(checkpoint, db) }
    }

    public func auditCheckpoints() async throws(ConsoleError) -> [AuditCheckpoint] {
        try await read("reading audit checkpoints") { db in
            try Row.fetchAll(db, sql: "SELECT \(Self.checkpointColumns) FROM audit_checkpoints ORDER BY id")
                .map(Self.checkpoint)
        }
    }

    public func latestAuditCheckpoint() async throws(ConsoleError) -> AuditCheckpoint? {
        try await read("reading audit checkpoints") { db in try Self.latestCheckpoint(db) }
    }

    public func auditCheckpointLag() async throws(ConsoleError) -> (headSeq: Int64, latest: AuditCheckpoint?) {
        try await read("reading audit checkpoints") { db in
            let head = try Int64.fetchOne(db, sql: "SELECT seq FROM audit ORDER BY seq DESC LIMIT 1") ?? 0
            return (head, try Self.latestCheckpoint(db))
        }
    }

    public func auditHead() async throws(ConsoleError) -> (head: AuditEntry?, latest: AuditCheckpoint?) {
        try await read("reading audit checkpoints") { db in
            let head = try Row.fetchOne(
                db, sql: "SELECT \(Self.auditColumns) FROM audit ORDER BY seq DESC LIMIT 1"
            ).map(Self.auditEntry)
            return (head, try Self.latestCheckpoint(db))
        }
    }

    public func appendAuditCheckpoint(_ checkpoint: AuditCheckpoint, ifLatestIs previous: AuditCheckpoint?)
        async throws(ConsoleError) -> Bool
    {
        try await write("appending an audit checkpoint") { db in
            guard try Self.latestCheckpoint(db)?.hash == previous?.hash else { return false }
            try Self.insert(checkpoint, db)
            return true
        }
    }

    public func auditEntries(tenant: TenantName?, sinceMillis: Int64, afterSeq: Int64, limit: Int)
        async throws(ConsoleError) -> [AuditEntry]
    {
        return try await read("reading the audit log") { db in
            let rows: [Row]
            if let tenant {
                rows = try Row.fetchAll(
                    db,
                    sql: """
                        SELECT \(Self.auditColumns) FROM audit WHERE tenant = ? AND seq > ? AND at >= ?
                        ORDER BY seq LIMIT ?
                        """,
                    arguments: [tenant.rawValue, afterSeq, sinceMillis, max(0, limit)])
            } else {
                rows = try Row.fetchAll(
                    db, sql: "SELECT \(Self.auditColumns) FROM audit WHERE seq > ? AND at >= ? ORDER BY seq LIMIT ?",
                    arguments: [afterSeq, sinceMillis, max(0, limit)])
            }
            return try rows.map(Self.auditEntry)
        }
    }
}
