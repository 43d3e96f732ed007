import BackupModel

/// The cleanup journal as a work queue (``CleanupQueueStore``) and the sandbox's own Turnkey
/// sub-orgs. A claim here is a guarded `UPDATE` per item inside one write transaction; a
/// backend with row locks may claim with `SKIP LOCKED` instead.
extension SQLRuleStore {
    public func queueCleanup(tenant: TenantName, subOrgIds: [String], queuedBy: String, now: Int64, audit: AuditDraft)
        async throws(ConsoleError) -> Int
    {
        try await audited("queueing \(subOrgIds.count) sub-orgs for the cleanup workers", audit) { session in
            var queued = 0
            for id in subOrgIds {
                queued += try await session.changes(
                    """
                    UPDATE cleanup_items SET queued_by = \(queuedBy), queued_at = \(now)
                    WHERE tenant = \(tenant.rawValue) AND suborg_id = \(id) AND state = 'pending'
                    """)
            }
            return queued
        }
    }

    public func claimCleanup(tenant: TenantName, worker: String, limit: Int, now: Int64, leaseMillis: Int64)
        async throws(ConsoleError) -> [QueuedCleanupItem]
    {
        try await driver.transaction("claiming cleanup items of \(tenant)") { session in
            let rows = try await session.query(
                """
                SELECT suborg_id, queued_by FROM cleanup_items
                WHERE tenant = \(tenant.rawValue) AND state = 'pending' AND queued_at IS NOT NULL
                    AND (claimed_by IS NULL OR lease_expires_at < \(now))
                ORDER BY suborg_id LIMIT \(max(0, limit))\(raw: dialect.lockClause)
                """)
            var claimed: [QueuedCleanupItem] = []
            for row in rows {
                let id: String = try row.get("suborg_id")
                let item = try await session.first(
                    """
                    UPDATE cleanup_items SET claimed_by = \(worker), lease_expires_at = \(now + leaseMillis)
                    WHERE tenant = \(tenant.rawValue) AND suborg_id = \(id)
                    RETURNING \(raw: RowMapping.cleanupColumns)
                    """
                ).map(RowMapping.cleanupItem)
                guard let item else { continue }
                claimed.append(
                    QueuedCleanupItem(item: item, queuedBy: try row.get("queued_by", as: String?.self) ?? ""))
            }
            return claimed
        }
    }

    public func renewCleanupClaims(tenant: TenantName, worker: String, now: Int64, leaseMillis: Int64)
        async throws(ConsoleError) -> Set<String>
    {
        try await driver.transaction("renewing the cleanup claims of a worker") { session in
            Set(
                try await session.values(
                    """
                    UPDATE cleanup_items SET lease_expires_at = \(now + leaseMillis)
                    WHERE tenant = \(tenant.rawValue) AND claimed_by = \(worker)
                    RETURNING suborg_id
                    """, as: String.self))
        }
    }

    public func releaseCleanupClaim(tenant: TenantName, worker: String, subOrgId: String) async throws(ConsoleError) {
        try await driver.transaction("releasing cleanup item \(subOrgId)") { session in
            try await session.execute(
                """
                UPDATE cleanup_items SET claimed_by = NULL, lease_expires_at = NULL
                WHERE tenant = \(tenant.rawValue) AND suborg_id = \(subOrgId) AND claimed_by = \(worker)
                """)
        }
    }

    public func unqueueCleanup(tenant: TenantName, subOrgId: String) async throws(ConsoleError) {
        try await driver.transaction("taking cleanup item \(subOrgId) off the queue") { session in
            try await session.execute(
                """
                UPDATE cleanup_items SET queued_at = NULL, queued_by = NULL, claimed_by = NULL,
                    lease_expires_at = NULL
                WHERE tenant = \(tenant.rawValue) AND suborg_id = \(subOrgId)
                """)
        }
    }

    /// One `INSERT … ON CONFLICT DO UPDATE … RETURNING` per call: the row (or SQLite's writer)
    /// orders concurrent reservations, whichever process makes them.
    public func reserveTurnkeyCall(tenant: TenantName, perSecond: Double, burst: Int, nowMicros: Int64)
        async throws(ConsoleError) -> Int64
    {
        let interval = try GCRA.interval(perSecond: perSecond)
        let tat = try await driver.transaction("reserving a Turnkey call of \(tenant)") { session in
            try await session.value(
                """
                INSERT INTO cleanup_rate (tenant, tat_micros) VALUES (\(tenant.rawValue), \(nowMicros + interval))
                ON CONFLICT (tenant) DO UPDATE
                    SET tat_micros = \(raw: dialect.greatest)(cleanup_rate.tat_micros, \(nowMicros)) + \(interval)
                RETURNING tat_micros
                """, as: Int64.self) ?? 0
        }
        return GCRA.slot(tat: tat, interval: interval, burst: burst, nowMicros: nowMicros)
    }

    // MARK: Sandbox Turnkey sub-organizations

    @discardableResult
    public func addSandboxSubOrgs(tenant: TenantName, _ subOrgIds: [String], createdAt: Int64, audit: AuditDraft?)
        async throws(ConsoleError) -> Int
    {
        try await audited("recording \(subOrgIds.count) sandbox sub-orgs", audit) { session in
            // Ids already there keep their first time and do not count; 500 rows a statement.
            var new = 0
            for start in stride(from: 0, to: subOrgIds.count, by: 500) {
                let rows = subOrgIds[start..<min(start + 500, subOrgIds.count)].map {
                    SQLStatement("(\(tenant.rawValue), \($0), \(createdAt))")
                }
                new += try await session.changes(
                    """
                    INSERT INTO sandbox_suborgs (tenant, suborg_id, created_at)
                    VALUES \(SQLStatement.joined(rows, separator: ", ")) ON CONFLICT DO NOTHING
                    """)
            }
            return new
        }
    }

    @discardableResult
    public func putSandboxSubOrgStates(
        tenant: TenantName, _ states: [String: String], createdAt: Int64, audit: AuditDraft?
    ) async throws(ConsoleError) -> Int {
        try await audited("recording \(states.count) sandbox sub-orgs with their state", audit) { session in
            // Ids already there keep their first time and get the new state; 500 rows a statement.
            let sorted = states.sorted { $0.key < $1.key }
            var new = 0
            for start in stride(from: 0, to: sorted.count, by: 500) {
                let batch = sorted[start..<min(start + 500, sorted.count)]
                let ids = SQLStatement.joined(batch.map { SQLStatement("\($0.key)") }, separator: ", ")
                let known =
                    try await session.value(
                        """
                        SELECT count(*) FROM sandbox_suborgs WHERE tenant = \(tenant.rawValue) AND suborg_id IN (\(ids))
                        """, as: Int.self) ?? 0
                new += batch.count - known
                let rows = batch.map { SQLStatement("(\(tenant.rawValue), \($0.key), \(createdAt), \($0.value))") }
                try await session.execute(
                    """
                    INSERT INTO sandbox_suborgs (tenant, suborg_id, created_at, state)
                    VALUES \(SQLStatement.joined(rows, separator: ", "))
                    ON CONFLICT (tenant, suborg_id) DO UPDATE SET state = excluded.state
                    """)
            }
            return new
        }
    }

    public func sandboxSubOrgState(tenant: TenantName, subOrgId: String) async throws(ConsoleError) -> String? {
        try await driver.read("reading the state of sandbox sub-org \(subOrgId)") { session in
            try await session.value(
                "SELECT state FROM sandbox_suborgs WHERE tenant = \(tenant.rawValue) AND suborg_id = \(subOrgId)",
                as: String?.self) ?? nil
        }
    }

    public func removeSandboxSubOrg(tenant: TenantName, subOrgId: String, audit: AuditDraft?) async throws(ConsoleError)
        -> Bool
    {
        try await audited("removing sandbox sub-org \(subOrgId)", audit) { session in
            try await session.changes(
                "DELETE FROM sandbox_suborgs WHERE tenant = \(tenant.rawValue) AND suborg_id = \(subOrgId)") > 0
        }
    }

    public func sandboxSubOrgPage(tenant: TenantName, after: String, limit: Int) async throws(ConsoleError) -> [String]
    {
        try await driver.read("listing sandbox sub-orgs") { session in
            try await session.values(
                """
                SELECT suborg_id FROM sandbox_suborgs WHERE tenant = \(tenant.rawValue) AND suborg_id > \(after)
                ORDER BY suborg_id LIMIT \(Self.clampBatch(limit))
                """)
        }
    }

    public func sandboxSubOrgExists(tenant: TenantName, subOrgId: String) async throws(ConsoleError) -> Bool {
        try await driver.read("reading sandbox sub-org \(subOrgId)") { session in
            try await session.exists(
                "SELECT 1 FROM sandbox_suborgs WHERE tenant = \(tenant.rawValue) AND suborg_id = \(subOrgId)")
        }
    }

    public func sandboxSubOrgCount(tenant: TenantName) async throws(ConsoleError) -> Int {
        try await driver.read("counting sandbox sub-orgs") { session in
            try await session.value(
                "SELECT count(*) FROM sandbox_suborgs WHERE tenant = \(tenant.rawValue)", as: Int.self) ?? 0
        }
    }
}
