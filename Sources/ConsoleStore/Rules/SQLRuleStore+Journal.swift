import BackupModel
import Foundation

/// The cleanup journal: items queued by resets, retirements and scans, written only by
/// compare-and-set, and what the break-glass path keeps beside them.
extension SQLRuleStore {
    /// Inserts a pending item, or merges it into the existing one.
    ///
    /// A `reset` or `retired` item is fresh evidence: the sub-org was referenced by
    /// `lastBackupId` until now. Unless the open item already holds that very evidence, it
    /// replaces the item's reason, first-seen time (the grace clock restarts) and last backup,
    /// turns a `skipped` item `pending`, and takes the item off the workers' queue: what was
    /// queued on older evidence is decided again. Any other reason keeps the existing item with
    /// the earlier first-seen time (a named backup replaces the last one). Returns whether it
    /// was new.
    @discardableResult
    func enqueue(_ item: CleanupItemRecord, tenant: String, _ session: Driver.Session) async throws -> Bool {
        let existed = try await session.exists(
            "SELECT 1 FROM cleanup_items WHERE tenant = \(tenant) AND suborg_id = \(item.subOrgId)")
        let fresh: SQLStatement =
            CleanupItemRecord.freshEvidence.contains(item.reason)
            ? """
            (cleanup_items.state NOT IN ('deleted', 'alreadyGone') AND (cleanup_items.state = 'skipped'
                OR cleanup_items.reason <> excluded.reason
                OR cleanup_items.last_backup_id IS DISTINCT FROM excluded.last_backup_id))
            """ : "1 = 0"
        try await session.execute(
            """
            INSERT INTO cleanup_items (tenant, \(raw: RowMapping.cleanupColumns))
            VALUES (\(tenant), \(item.subOrgId), \(item.reason), \(item.firstSeenAt), \(item.state.rawValue),
                \(item.body), \(item.attempts), \(item.lastError), \(item.updatedAt), \(item.lastBackupId), 0)
            ON CONFLICT (tenant, suborg_id) DO UPDATE
            SET first_seen_at = CASE WHEN \(fresh) THEN excluded.first_seen_at
                    ELSE \(raw: dialect.least)(cleanup_items.first_seen_at, excluded.first_seen_at) END,
                reason = CASE WHEN \(fresh) THEN excluded.reason ELSE cleanup_items.reason END,
                state = CASE WHEN \(fresh) AND cleanup_items.state = 'skipped' THEN 'pending'
                    ELSE cleanup_items.state END,
                queued_at = CASE WHEN \(fresh) THEN NULL ELSE cleanup_items.queued_at END,
                queued_by = CASE WHEN \(fresh) THEN NULL ELSE cleanup_items.queued_by END,
                last_backup_id = coalesce(excluded.last_backup_id, cleanup_items.last_backup_id),
                version = cleanup_items.version + CASE WHEN \(fresh)
                    OR cleanup_items.first_seen_at > excluded.first_seen_at
                    OR (excluded.last_backup_id IS NOT NULL
                        AND (cleanup_items.last_backup_id IS NULL
                            OR excluded.last_backup_id <> cleanup_items.last_backup_id))
                    THEN 1 ELSE 0 END
            """)
        return !existed
    }

    public func cleanupItem(tenant: TenantName, subOrgId: String) async throws(ConsoleError) -> CleanupItemRecord? {
        try await driver.read("reading cleanup item \(subOrgId)") { session in
            try await session.first(
                """
                SELECT \(raw: RowMapping.cleanupColumns) FROM cleanup_items
                WHERE tenant = \(tenant.rawValue) AND suborg_id = \(subOrgId)
                """
            ).map(RowMapping.cleanupItem)
        }
    }

    public func enqueueCleanup(tenant: TenantName, _ items: [CleanupItemRecord], audit: AuditDraft?)
        async throws(ConsoleError) -> Int
    {
        try await audited("queueing \(items.count) sub-orgs for cleanup", audit) { session in
            var new = 0
            for item in items where try await enqueue(item, tenant: tenant.rawValue, session) { new += 1 }
            return new
        }
    }

    /// Compare-and-set: writes only if the stored item still has `item.version`, and returns the
    /// item with its new version. A writer holding an older read fails with `stale_journal_item`
    /// and changes nothing, so a stale worker can never overwrite a newer state.
    @discardableResult
    public func updateCleanupItem(tenant: TenantName, _ item: CleanupItemRecord, audit: AuditDraft?)
        async throws(ConsoleError) -> CleanupItemRecord
    {
        try await audited("updating cleanup item \(item.subOrgId)", audit) { session in
            let changed = try await session.changes(
                """
                UPDATE cleanup_items SET reason = \(item.reason), first_seen_at = \(item.firstSeenAt),
                    state = \(item.state.rawValue), body = \(item.body), attempts = \(item.attempts),
                    last_error = \(item.lastError), updated_at = \(item.updatedAt),
                    last_backup_id = \(item.lastBackupId), \(Self.queueKept(item)), version = version + 1
                WHERE tenant = \(tenant.rawValue) AND suborg_id = \(item.subOrgId) AND version = \(item.version)
                """)
            guard changed == 1 else {
                let exists = try await session.exists(
                    "SELECT 1 FROM cleanup_items WHERE tenant = \(tenant.rawValue) AND suborg_id = \(item.subOrgId)")
                throw CleanupItemRecord.refusedUpdate(item.subOrgId, tenant: tenant, exists: exists)
            }
            var updated = item
            updated.version += 1
            return updated
        }
    }

    /// The queue columns of an update: an item stays queued for the workers only while it is
    /// `pending` on the evidence it was queued on (its reason and first-seen time unchanged).
    static func queueKept(_ item: CleanupItemRecord) -> SQLStatement {
        guard item.state == .pending else { return "queued_at = NULL, queued_by = NULL" }
        return """
            queued_at = CASE WHEN reason = \(item.reason) AND first_seen_at = \(item.firstSeenAt) THEN queued_at END,
                queued_by = CASE WHEN reason = \(item.reason) AND first_seen_at = \(item.firstSeenAt) THEN queued_by END
            """
    }

    public func cleanupItems(tenant: TenantName, states: Set<CleanupItemRecord.State>?) async throws(ConsoleError)
        -> [CleanupItemRecord]
    {
        try await driver.read("listing cleanup items") { session in
            try await session.query(
                """
                SELECT \(raw: RowMapping.cleanupColumns) FROM cleanup_items WHERE tenant = \(tenant.rawValue)
                ORDER BY suborg_id
                """
            ).map(RowMapping.cleanupItem).filter { states?.contains($0.state) ?? true }
        }
    }

    public func cleanupCounts(tenant: TenantName) async throws(ConsoleError) -> [CleanupItemRecord.State: Int] {
        let rows = try await driver.read("counting cleanup items") { session in
            try await session.query(
                "SELECT state, count(*) AS items FROM cleanup_items WHERE tenant = \(tenant.rawValue) GROUP BY state")
        }
        var counts: [CleanupItemRecord.State: Int] = [:]
        for row in rows {
            if let state = CleanupItemRecord.State(rawValue: try row.get("state")) {
                counts[state] = try row.get("items")
            }
        }
        return counts
    }

    public func saveStampedTeardown(tenant: TenantName, _ teardown: StampedTeardown, audit: AuditDraft?)
        async throws(ConsoleError)
    {
        try await audited("storing the stamped teardown of \(teardown.subOrgId)", audit) { session in
            try await session.execute(
                """
                INSERT INTO cleanup_stamped (tenant, suborg_id, body, stamp, submitted_at)
                VALUES (\(tenant.rawValue), \(teardown.subOrgId), \(teardown.body), \(teardown.stamp),
                    \(teardown.submittedAt))
                ON CONFLICT (tenant, suborg_id) DO UPDATE
                SET body = excluded.body, stamp = excluded.stamp, submitted_at = excluded.submitted_at
                """)
        }
    }

    public func stampedTeardown(tenant: TenantName, subOrgId: String) async throws(ConsoleError) -> StampedTeardown? {
        try await driver.read("reading the stamped teardown of \(subOrgId)") { session in
            try await session.first(
                """
                SELECT body, stamp, submitted_at FROM cleanup_stamped
                WHERE tenant = \(tenant.rawValue) AND suborg_id = \(subOrgId)
                """
            ).map {
                StampedTeardown(
                    subOrgId: subOrgId, body: try $0.get("body"), stamp: try $0.get("stamp"),
                    submittedAt: try $0.get("submitted_at"))
            }
        }
    }
}
