import BackupModel
import Foundation

/// The cleanup journal: items queued by resets, retirements and scans, written only by
/// compare-and-set, and what the break-glass path keeps beside them.
extension SQLRuleStore {
    /// Inserts a pending item, or keeps the existing one with the earlier first-seen time (a
    /// `reset` reason wins; a named backup replaces the last one). Returns whether it was new.
    @discardableResult
    func enqueue(_ item: CleanupItemRecord, tenant: String, _ session: Driver.Session) async throws -> Bool {
        let existed = try await session.exists(
            "SELECT 1 FROM cleanup_items WHERE tenant = \(tenant) AND suborg_id = \(item.subOrgId)")
        try await session.execute(
            """
            INSERT INTO cleanup_items (tenant, \(raw: RowMapping.cleanupColumns))
            VALUES (\(tenant), \(item.subOrgId), \(item.reason), \(item.firstSeenAt), \(item.state.rawValue),
                \(item.body), \(item.attempts), \(item.lastError), \(item.updatedAt), \(item.lastBackupId), 0)
            ON CONFLICT (tenant, suborg_id) DO UPDATE
            SET first_seen_at = \(raw: dialect.least)(cleanup_items.first_seen_at, excluded.first_seen_at),
                reason = CASE WHEN excluded.reason = 'reset' THEN 'reset' ELSE cleanup_items.reason END,
                last_backup_id = coalesce(excluded.last_backup_id, cleanup_items.last_backup_id),
                version = cleanup_items.version + CASE WHEN cleanup_items.first_seen_at > excluded.first_seen_at
                    OR (excluded.reason = 'reset' AND cleanup_items.reason <> 'reset')
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
                    last_backup_id = \(item.lastBackupId), version = version + 1
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
