import BackupModel

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
