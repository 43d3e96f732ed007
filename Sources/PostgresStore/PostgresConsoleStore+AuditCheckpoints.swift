import BackupModel
import ConsoleStore
import PostgresNIO

extension PostgresConsoleStore {
    private static let checkpointColumns = "seq, head_hash, at, prev_checkpoint_hash, signature"

    private func insert(_ checkpoint: AuditCheckpoint, _ connection: PostgresConnection) async throws {
        try await execute(
            """
            INSERT INTO audit_checkpoints (seq, head_hash, at, prev_checkpoint_hash, signature)
            VALUES (\(checkpoint.seq), \(checkpoint.headHash), \(checkpoint.atMillis),
                \(checkpoint.prevCheckpointHash), \(checkpoint.signature))
            """, connection)
    }

    private static func checkpoint(_ row: PostgresRandomAccessRow) throws -> AuditCheckpoint {
        AuditCheckpoint(
            seq: try row["seq"].decode(Int64.self), headHash: try row["head_hash"].decode(String.self),
            atMillis: try row["at"].decode(Int64.self),
            prevCheckpointHash: try row["prev_checkpoint_hash"].decode(String.self),
            signature: try row["signature"].decode(String.self))
    }

    private func latestCheckpoint(_ connection: PostgresConnection) async throws -> AuditCheckpoint? {
        try await first(
            "SELECT \(unescaped: Self.checkpointColumns) FROM audit_checkpoints ORDER BY id DESC LIMIT 1",
            connection, Self.checkpoint)
    }

    /// Appends `checkpoint` after the existing ones (under the audit chain's lock, so checkpoints
    /// are numbered in the order their transactions commit).
    public func appendAuditCheckpoint(_ checkpoint: AuditCheckpoint) async throws(ConsoleError) {
        try await write("appending an audit checkpoint") { connection in
            try await lockAudit(connection)
            try await insert(checkpoint, connection)
        }
    }

    /// Every checkpoint, oldest first.
    public func auditCheckpoints() async throws(ConsoleError) -> [AuditCheckpoint] {
        try await read("reading audit checkpoints") { connection in
            try await all(
                "SELECT \(unescaped: Self.checkpointColumns) FROM audit_checkpoints ORDER BY id", connection,
                Self.checkpoint)
        }
    }

    /// The newest checkpoint, if any.
    public func latestAuditCheckpoint() async throws(ConsoleError) -> AuditCheckpoint? {
        try await read("reading audit checkpoints") { connection in try await latestCheckpoint(connection) }
    }

    /// The head entry's seq (0 for an empty log) and the newest checkpoint, read by one statement
    /// (one snapshot).
    public func auditCheckpointLag() async throws(ConsoleError) -> (headSeq: Int64, latest: AuditCheckpoint?) {
        let lag = try await read("reading audit checkpoints") { connection in
            try await first(
                """
                SELECT COALESCE((SELECT seq FROM audit ORDER BY seq DESC LIMIT 1), 0) AS head,
                    c.seq, c.head_hash, c.at, c.prev_checkpoint_hash, c.signature
                FROM (SELECT 1) AS one
                LEFT JOIN LATERAL (SELECT * FROM audit_checkpoints ORDER BY id DESC LIMIT 1) AS c ON TRUE
                """, connection
            ) { row in
                let head = try row["head"].decode(Int64.self)
                let latest = try row["seq"].decode(Int64?.self) == nil ? nil : try Self.checkpoint(row)
                return LagRow(headSeq: head, latest: latest)
            }
        }
        return (lag?.headSeq ?? 0, lag?.latest)
    }

    private struct LagRow: Sendable {
        var headSeq: Int64
        var latest: AuditCheckpoint?
    }

    /// In one transaction under the audit chain's lock: reads the head entry and the newest
    /// checkpoint, asks `make` for the next checkpoint, and appends what it returns. Two signers,
    /// in this process or another, cannot both chain to the same predecessor; nothing is appended
    /// to the chain between the head read and the checkpoint's commit.
    ///
    /// `make` runs inside the transaction, between the reads and the write, as in
    /// ``SQLiteConsoleStore``: it should only compute (sign), not wait on anything.
    public func appendAuditCheckpoint(
        _ make: (_ head: AuditEntry, _ latest: AuditCheckpoint?) throws(ConsoleError) -> AuditCheckpoint?
    ) async throws(ConsoleError) -> AuditCheckpoint? {
        try await write("appending an audit checkpoint") { connection in
            try await lockAudit(connection)
            guard
                let head = try await first(
                    "SELECT \(unescaped: Self.auditColumns) FROM audit ORDER BY seq DESC LIMIT 1", connection,
                    Self.auditEntry)
            else { return nil }
            guard let checkpoint = try make(head, try await latestCheckpoint(connection)) else { return nil }
            try await insert(checkpoint, connection)
            return checkpoint
        }
    }

    /// Entries with `at >= sinceMillis` and `seq > afterSeq`, oldest first, at most `limit`
    /// (`audit export`); `tenant` narrows to one tenant, `nil` is the whole chain.
    public func auditEntries(tenant: TenantName?, sinceMillis: Int64, afterSeq: Int64, limit: Int)
        async throws(ConsoleError) -> [AuditEntry]
    {
        try await read("reading the audit log") { connection in
            try await all(
                """
                SELECT \(unescaped: Self.auditColumns) FROM audit
                WHERE (\(tenant?.rawValue)::TEXT IS NULL OR tenant = \(tenant?.rawValue))
                    AND seq > \(afterSeq) AND at >= \(sinceMillis)
                ORDER BY seq LIMIT \(max(0, limit))
                """, connection, Self.auditEntry)
        }
    }
}
