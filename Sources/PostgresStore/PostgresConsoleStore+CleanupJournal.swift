import BackupModel
import ConsoleStore
import PostgresNIO

/// The cleanup journal (`cleanup_items`) and the user-stamped break-glass requests, as
/// ``SQLiteConsoleStore`` keeps them: the same merge rules, the same compare-and-set.
extension PostgresConsoleStore {
    static let cleanupColumns = PostgresCleanupQueue.columns

    /// Inserts a pending item, or keeps the existing one with the earlier first-seen time (a
    /// `reset` reason and a named backup win); returns whether the item was new.
    @discardableResult
    static func enqueue(
        _ item: CleanupItemRecord, tenant: String, _ connection: PostgresConnection, logger: Logger
    ) async throws -> Bool {
        let rows = try await connection.query(
            """
            INSERT INTO cleanup_items (tenant, suborg_id, reason, first_seen_at, state, body, attempts, last_error,
                updated_at, last_backup_id, version)
            VALUES (\(tenant), \(item.subOrgId), \(item.reason), \(item.firstSeenAt), \(item.state.rawValue),
                \(item.body), \(item.attempts), \(item.lastError), \(item.updatedAt), \(item.lastBackupId), 0)
            ON CONFLICT (tenant, suborg_id) DO UPDATE
            SET first_seen_at = LEAST(cleanup_items.first_seen_at, excluded.first_seen_at),
                reason = CASE WHEN excluded.reason = 'reset' THEN 'reset' ELSE cleanup_items.reason END,
                last_backup_id = COALESCE(excluded.last_backup_id, cleanup_items.last_backup_id),
                version = cleanup_items.version + CASE WHEN cleanup_items.first_seen_at > excluded.first_seen_at
                    OR (excluded.reason = 'reset' AND cleanup_items.reason <> 'reset')
                    OR (excluded.last_backup_id IS NOT NULL
                        AND excluded.last_backup_id IS DISTINCT FROM cleanup_items.last_backup_id)
                    THEN 1 ELSE 0 END
            RETURNING (xmax = 0)
            """, logger: logger)
        for try await inserted in rows.decode(Bool.self) { return inserted }
        return false
    }

    public func cleanupItem(tenant: TenantName, subOrgId: String) async throws(ConsoleError) -> CleanupItemRecord? {
        try await read("reading cleanup item \(subOrgId)") { connection in
            for try await row in try await connection.query(
                """
                SELECT \(unescaped: Self.cleanupColumns) FROM cleanup_items
                WHERE tenant = \(tenant.rawValue) AND suborg_id = \(subOrgId)
                """, logger: database.logger)
            {
                return try PostgresCleanupQueue.item(row)
            }
            return nil
        }
    }

    public func enqueueCleanup(tenant: TenantName, _ items: [CleanupItemRecord], audit: AuditDraft?)
        async throws(ConsoleError) -> Int
    {
        try await write("queueing \(items.count) sub-orgs for cleanup") { connection in
            var new = 0
            for item in items {
                if try await Self.enqueue(item, tenant: tenant.rawValue, connection, logger: database.logger) {
                    new += 1
                }
            }
            if let audit { _ = try await insertAudit(audit, connection) }
            return new
        }
    }

    /// Compare-and-set: writes only if the stored item still has `item.version` (the worker
    /// claim columns are left alone), and returns it with its new version; an older read fails
    /// with `stale_journal_item` and changes nothing.
    @discardableResult
    public func updateCleanupItem(tenant: TenantName, _ item: CleanupItemRecord, audit: AuditDraft?)
        async throws(ConsoleError) -> CleanupItemRecord
    {
        try await write("updating cleanup item \(item.subOrgId)") { connection in
            let updated = try await exists(
                """
                UPDATE cleanup_items SET reason = \(item.reason), first_seen_at = \(item.firstSeenAt),
                    state = \(item.state.rawValue), body = \(item.body), attempts = \(item.attempts),
                    last_error = \(item.lastError), updated_at = \(item.updatedAt),
                    last_backup_id = \(item.lastBackupId), version = version + 1
                WHERE tenant = \(tenant.rawValue) AND suborg_id = \(item.subOrgId) AND version = \(item.version)
                RETURNING version
                """, connection)
            guard updated else {
                let present = try await exists(
                    "SELECT 1 FROM cleanup_items WHERE tenant = \(tenant.rawValue) AND suborg_id = \(item.subOrgId)",
                    connection)
                throw CleanupItemRecord.refusedUpdate(item.subOrgId, tenant: tenant, exists: present)
            }
            if let audit { _ = try await insertAudit(audit, connection) }
            var written = item
            written.version += 1
            return written
        }
    }

    public func cleanupItems(tenant: TenantName, states: Set<CleanupItemRecord.State>?) async throws(ConsoleError)
        -> [CleanupItemRecord]
    {
        try await read("listing cleanup items") { connection in
            var items: [CleanupItemRecord] = []
            for try await row in try await connection.query(
                """
                SELECT \(unescaped: Self.cleanupColumns) FROM cleanup_items WHERE tenant = \(tenant.rawValue)
                ORDER BY suborg_id
                """, logger: database.logger)
            {
                let item = try PostgresCleanupQueue.item(row)
                if states?.contains(item.state) ?? true { items.append(item) }
            }
            return items
        }
    }

    public func cleanupCounts(tenant: TenantName) async throws(ConsoleError) -> [CleanupItemRecord.State: Int] {
        let rows = try await read("counting cleanup items") { connection in
            try await all(
                "SELECT state, count(*) FROM cleanup_items WHERE tenant = \(tenant.rawValue) GROUP BY state",
                connection
            ) { (try $0[0].decode(String.self), try $0[1].decode(Int.self)) }
        }
        var counts: [CleanupItemRecord.State: Int] = [:]
        for (state, count) in rows {
            if let state = CleanupItemRecord.State(rawValue: state) { counts[state] = count }
        }
        return counts
    }

    // MARK: Stamped teardowns

    public func saveStampedTeardown(tenant: TenantName, _ teardown: StampedTeardown, audit: AuditDraft?)
        async throws(ConsoleError)
    {
        try await write("storing the stamped teardown of \(teardown.subOrgId)") { connection in
            try await execute(
                """
                INSERT INTO cleanup_stamped (tenant, suborg_id, body, stamp, submitted_at)
                VALUES (\(tenant.rawValue), \(teardown.subOrgId), \(teardown.body), \(teardown.stamp),
                    \(teardown.submittedAt))
                ON CONFLICT (tenant, suborg_id) DO UPDATE
                SET body = excluded.body, stamp = excluded.stamp, submitted_at = excluded.submitted_at
                """, connection)
            if let audit { _ = try await insertAudit(audit, connection) }
        }
    }

    public func stampedTeardown(tenant: TenantName, subOrgId: String) async throws(ConsoleError) -> StampedTeardown? {
        try await read("reading the stamped teardown of \(subOrgId)") { connection in
            try await first(
                """
                SELECT body, stamp, submitted_at FROM cleanup_stamped
                WHERE tenant = \(tenant.rawValue) AND suborg_id = \(subOrgId)
                """, connection
            ) {
                StampedTeardown(
                    subOrgId: subOrgId, body: try $0[0].decode(String.self), stamp: try $0[1].decode(String.self),
                    submittedAt: try $0[2].decode(Int64.self))
            }
        }
    }
}
