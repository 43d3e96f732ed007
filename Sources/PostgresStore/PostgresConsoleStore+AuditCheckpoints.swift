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

    /// The head entry (`nil` for an empty log) and the newest checkpoint, read in one
    /// repeatable-read transaction (one snapshot).
    public func auditHead() async throws(ConsoleError) -> (head: AuditEntry?, latest: AuditCheckpoint?) {
        let read = try await snapshot("reading the audit head") { connection in
            let head = try await first(
                "SELECT \(unescaped: Self.auditColumns) FROM audit ORDER BY seq DESC LIMIT 1", connection,
                Self.auditEntry)
            return HeadRow(head: head, latest: try await latestCheckpoint(connection))
        }
        return (read.head, read.latest)
    }

    private struct HeadRow: Sendable {
        var head: AuditEntry?
        var latest: AuditCheckpoint?
    }

    /// Appends `checkpoint` if the newest checkpoint is still `previous` (by hash; `nil`: none
    /// yet), under the audit chain's lock, so two signers on any servers cannot both chain to
    /// the same predecessor; returns whether it did.
    public func appendAuditCheckpoint(_ checkpoint: AuditCheckpoint, ifLatestIs previous: AuditCheckpoint?)
        async throws(ConsoleError) -> Bool
    {
        try await write("appending an audit checkpoint") { connection in
            try await lockAudit(connection)
            guard try await latestCheckpoint(connection)?.hash == previous?.hash else { return false }
            try await insert(checkpoint, connection)
            return true
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
