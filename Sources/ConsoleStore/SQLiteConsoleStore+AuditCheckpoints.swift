import BackupModel
import GRDB

/// Where signed audit checkpoints are kept (`audit verify`, `audit export`, the server's signer).
public protocol AuditCheckpointStore: ConsoleStore {
    /// Appends `checkpoint` after the existing ones.
    func appendAuditCheckpoint(_ checkpoint: AuditCheckpoint) throws(ConsoleError)
    /// Every checkpoint, oldest first.
    func auditCheckpoints() throws(ConsoleError) -> [AuditCheckpoint]
    /// The newest checkpoint, if any.
    func latestAuditCheckpoint() throws(ConsoleError) -> AuditCheckpoint?
    /// The head entry's seq (0 for an empty log) and the newest checkpoint, read together
    /// (held read audits are not written: they are not in the chain yet).
    func auditCheckpointLag() throws(ConsoleError) -> (headSeq: Int64, latest: AuditCheckpoint?)
    /// In one write transaction: reads the head entry and the newest checkpoint, asks `make`
    /// for the next checkpoint, and appends what it returns. Two signers cannot both chain to
    /// the same predecessor.
    func appendAuditCheckpoint(
        _ make: (_ head: AuditEntry, _ latest: AuditCheckpoint?) throws(ConsoleError) -> AuditCheckpoint?
    ) throws(ConsoleError) -> AuditCheckpoint?
    /// Entries with `at >= sinceMillis` and `seq > afterSeq`, oldest first, at most `limit`
    /// (`audit export`); `tenant` narrows to one tenant, `nil` is the whole chain.
    func auditEntries(tenant: TenantName?, sinceMillis: Int64, afterSeq: Int64, limit: Int) throws(ConsoleError)
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

    public func appendAuditCheckpoint(_ checkpoint: AuditCheckpoint) throws(ConsoleError) {
        try write("appending an audit checkpoint") { db in try Self.insert(checkpoint, db) }
    }

    public func auditCheckpoints() throws(ConsoleError) -> [AuditCheckpoint] {
        try read("reading audit checkpoints") { db in
            try Row.fetchAll(db, sql: "SELECT \(Self.checkpointColumns) FROM audit_checkpoints ORDER BY id")
                .map(Self.checkpoint)
        }
    }

    public func latestAuditCheckpoint() throws(ConsoleError) -> AuditCheckpoint? {
        try read("reading audit checkpoints") { db in try Self.latestCheckpoint(db) }
    }

    public func auditCheckpointLag() throws(ConsoleError) -> (headSeq: Int64, latest: AuditCheckpoint?) {
        try read("reading audit checkpoints") { db in
            let head = try Int64.fetchOne(db, sql: "SELECT seq FROM audit ORDER BY seq DESC LIMIT 1") ?? 0
            return (head, try Self.latestCheckpoint(db))
        }
    }

    public func appendAuditCheckpoint(
        _ make: (_ head: AuditEntry, _ latest: AuditCheckpoint?) throws(ConsoleError) -> AuditCheckpoint?
    ) throws(ConsoleError) -> AuditCheckpoint? {
        try write("appending an audit checkpoint") { db in
            guard
                let head = try Row.fetchOne(
                    db, sql: "SELECT \(Self.auditColumns) FROM audit ORDER BY seq DESC LIMIT 1"
                ).map(Self.auditEntry)
            else { return nil }
            guard let checkpoint = try make(head, try Self.latestCheckpoint(db)) else { return nil }
            try Self.insert(checkpoint, db)
            return checkpoint
        }
    }

    public func auditEntries(tenant: TenantName?, sinceMillis: Int64, afterSeq: Int64, limit: Int)
        throws(ConsoleError) -> [AuditEntry]
    {
        try flushAudit()
        return try read("reading the audit log") { db in
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
