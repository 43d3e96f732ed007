import BackupCrypto
import BackupModel
import Foundation

/// The audit chain: the one place an entry is appended, and its reads.
extension SQLRuleStore {
    /// Appends `draft` as the next chained entry inside the caller's transaction, at the clock's
    /// time: every audited change of every backend comes through here.
    public func appendChained(_ draft: AuditDraft, _ session: Driver.Session) async throws -> AuditEntry {
        try await appendChained([draft], session)[0]
    }

    /// Appends `drafts`, in order, as the next chained entries inside the caller's transaction.
    ///
    /// The chain lock (``SQLDialect/chainLock``; SQLite's single writer needs none) is taken
    /// first, so the head read next is the one its predecessor committed: each `seq` is the one
    /// before plus one and each `prevHash` the hash before it (64 zeros for the first), and the
    /// chain stays one gap-free sequence across processes.
    public func appendChained(_ drafts: [AuditDraft], _ session: Driver.Session) async throws -> [AuditEntry] {
        try await lockChain(session)
        let head = try await session.first("SELECT seq, hash FROM audit ORDER BY seq DESC LIMIT 1")
        let links = try AuditLink.chain(
            drafts, afterSeq: try head?.get("seq", as: Int64.self) ?? 0,
            prevHash: try head?.get("hash", as: String.self) ?? AuditEntry.genesisHash, clock: clock)
        for link in links {
            let entry = link.entry
            try await session.execute(
                """
                INSERT INTO audit (\(raw: RowMapping.auditColumns))
                VALUES (\(entry.seq), \(entry.at), \(entry.operatorName), \(entry.tenant), \(entry.action),
                    \(entry.target), \(link.detailsText), \(entry.prevHash), \(entry.hash))
                """)
        }
        return links.map(\.entry)
    }

    /// One group commit: `drafts` chained and committed in one transaction of their own (the
    /// default of ``SQLRuleStore/commitAuditGroup(_:)``).
    public func commitAuditGroup(_ drafts: [AuditDraft]) async throws(ConsoleError) -> [AuditEntry] {
        try await driver.transaction(
            drafts.count == 1 ? "appending an audit entry" : "appending \(drafts.count) audit entries"
        ) { session in
            let entries = try await self.appendChained(drafts, session)
            self.checkpoints.reach(.auditGroup)
            return entries
        }
    }

    /// Appends `draft` in a transaction of its own or, when others are appending at the same
    /// time, in one shared with theirs (``AuditGroupCommit``); returns once it is committed.
    @discardableResult
    public func appendAudit(_ draft: AuditDraft) async throws(ConsoleError) -> AuditEntry {
        // Stamped here: the transaction may run in another task, which must not name its first
        // caller's request in everyone's entries.
        try await auditGroup.append(draft.stamped) { drafts throws(ConsoleError) in
            try await self.commitAuditGroup(drafts)
        }
    }

    public func appendReadAudit(_ draft: AuditDraft) async throws(ConsoleError) {
        guard let deferral = AuditDeferral.current else {
            _ = try await appendAudit(draft)
            return
        }
        deferral.keep(draft.stamped, for: auditGroup) { drafts in self.submitAudits(drafts) }
    }

    /// Queues stamped `drafts`, in order, for the next group commits.
    func submitAudits(_ drafts: [AuditDraft]) -> [AuditReceipt] {
        auditGroup.submit(drafts) { drafts throws(ConsoleError) in try await self.commitAuditGroup(drafts) }
    }

    /// Audit entries matching `conditions` (ANDed), in `order`, at most `limit`.
    private func auditRows(_ conditions: [SQLStatement], descending: Bool, limit: Int) async throws(ConsoleError)
        -> [AuditEntry]
    {
        var filter: SQLStatement = ""
        if !conditions.isEmpty {
            filter = "WHERE "
            filter.append(.joined(conditions, separator: " AND "))
        }
        return try await driver.read("reading the audit log") { session in
            try await session.query(
                """
                SELECT \(raw: RowMapping.auditColumns) FROM audit \(filter)
                ORDER BY seq \(raw: descending ? "DESC" : "") LIMIT \(max(0, limit))
                """
            ).map(RowMapping.auditEntry)
        }
    }

    public func auditEntries(tenant: TenantName?, afterSeq: Int64, limit: Int) async throws(ConsoleError)
        -> [AuditEntry]
    {
        try await auditEntries(tenant: tenant, sinceMillis: nil, afterSeq: afterSeq, limit: limit)
    }

    public func auditEntries(tenant: TenantName?, sinceMillis: Int64, afterSeq: Int64, limit: Int)
        async throws(ConsoleError) -> [AuditEntry]
    {
        try await auditEntries(tenant: tenant, sinceMillis: Optional(sinceMillis), afterSeq: afterSeq, limit: limit)
    }

    private func auditEntries(tenant: TenantName?, sinceMillis: Int64?, afterSeq: Int64, limit: Int)
        async throws(ConsoleError) -> [AuditEntry]
    {
        var conditions: [SQLStatement] = ["seq > \(afterSeq)"]
        if let tenant { conditions.append("tenant = \(tenant.rawValue)") }
        if let sinceMillis { conditions.append("at >= \(sinceMillis)") }
        return try await auditRows(conditions, descending: false, limit: limit)
    }

    public func latestAuditEntries(tenant: TenantName?, limit: Int) async throws(ConsoleError) -> [AuditEntry] {
        let conditions: [SQLStatement] = tenant.map { ["tenant = \($0.rawValue)"] } ?? []
        return try await auditRows(conditions, descending: true, limit: limit).reversed()
    }

    /// The entries matching `query`, oldest first: with an `afterSeq`, the first `limit` after it
    /// (a follower or a client paging forward misses none however far behind it is); without one
    /// (0), the latest `limit`.
    public func auditEntries(_ query: AuditQuery, limit: Int) async throws(ConsoleError) -> [AuditEntry] {
        var conditions: [SQLStatement] = ["tenant = \(query.tenant.rawValue)", "seq > \(query.afterSeq)"]
        if let op = query.operatorName { conditions.append("operator = \(op)") }
        if let action = query.action {
            if action.hasSuffix(".") || action.hasSuffix("*") {
                let family = action.hasSuffix("*") ? String(action.dropLast()) : action
                // A family prefix: a range on the text, no LIKE wildcards to escape.
                let action = "action\(dialect.bytewise)"
                conditions.append("\(raw: action) >= \(family) AND \(raw: action) < \(family + "\u{7F}")")
            } else {
                conditions.append("action = \(action)")
            }
        }
        if let since = query.sinceMillis { conditions.append("at >= \(since)") }
        guard query.afterSeq == 0 else { return try await auditRows(conditions, descending: false, limit: limit) }
        return try await auditRows(conditions, descending: true, limit: limit).reversed()
    }

    // MARK: Checkpoints

    private func latestCheckpoint(_ session: Driver.Session) async throws -> AuditCheckpoint? {
        try await session.first(
            "SELECT \(raw: RowMapping.checkpointColumns) FROM audit_checkpoints ORDER BY id DESC LIMIT 1"
        ).map(RowMapping.checkpoint)
    }

    /// Takes the chain lock where the backend needs one (``SQLDialect/chainLock``); the commit
    /// or rollback releases it.
    func lockChain(_ session: Driver.Session) async throws {
        if let lock = dialect.chainLock { try await session.execute(lock) }
    }

    /// Appends a checkpoint under the chain lock, so two signers (on any servers) are ordered
    /// and the second finds the first's checkpoint.
    private func insert(_ checkpoint: AuditCheckpoint, _ session: Driver.Session) async throws {
        try await lockChain(session)
        try await session.execute(
            """
            INSERT INTO audit_checkpoints (seq, head_hash, at, prev_checkpoint_hash, signature)
            VALUES (\(checkpoint.seq), \(checkpoint.headHash), \(checkpoint.atMillis),
                \(checkpoint.prevCheckpointHash), \(checkpoint.signature))
            """)
    }

    public func appendAuditCheckpoint(_ checkpoint: AuditCheckpoint) async throws(ConsoleError) {
        try await driver.transaction("appending an audit checkpoint") { session in try await insert(checkpoint, session)
        }
    }

    public func appendAuditCheckpoint(_ checkpoint: AuditCheckpoint, ifLatestIs previous: AuditCheckpoint?)
        async throws(ConsoleError) -> Bool
    {
        try await driver.transaction("appending an audit checkpoint") { session in
            try await lockChain(session)
            guard try await latestCheckpoint(session)?.hash == previous?.hash else { return false }
            try await insert(checkpoint, session)
            return true
        }
    }

    public func auditCheckpoints() async throws(ConsoleError) -> [AuditCheckpoint] {
        try await driver.read("reading audit checkpoints") { session in
            try await session.query(
                "SELECT \(raw: RowMapping.checkpointColumns) FROM audit_checkpoints ORDER BY id"
            ).map(RowMapping.checkpoint)
        }
    }

    public func latestAuditCheckpoint() async throws(ConsoleError) -> AuditCheckpoint? {
        try await driver.read("reading audit checkpoints") { session in try await latestCheckpoint(session) }
    }

    public func auditCheckpointLag() async throws(ConsoleError) -> (headSeq: Int64, latest: AuditCheckpoint?) {
        let lag = try await driver.snapshot("reading audit checkpoints") { session in
            let head = try await session.value("SELECT seq FROM audit ORDER BY seq DESC LIMIT 1", as: Int64.self)
            return CheckpointLag(headSeq: head ?? 0, latest: try await latestCheckpoint(session))
        }
        return (lag.headSeq, lag.latest)
    }

    public func auditHead() async throws(ConsoleError) -> (head: AuditEntry?, latest: AuditCheckpoint?) {
        let found = try await driver.snapshot("reading audit checkpoints") { session in
            let head = try await session.first(
                "SELECT \(raw: RowMapping.auditColumns) FROM audit ORDER BY seq DESC LIMIT 1"
            ).map(RowMapping.auditEntry)
            return AuditHead(head: head, latest: try await latestCheckpoint(session))
        }
        return (found.head, found.latest)
    }
}

private struct CheckpointLag: Sendable {
    var headSeq: Int64
    var latest: AuditCheckpoint?
}

private struct AuditHead: Sendable {
    var head: AuditEntry?
    var latest: AuditCheckpoint?
}
