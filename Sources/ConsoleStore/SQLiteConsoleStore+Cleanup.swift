import BackupModel
import Foundation
import GRDB

extension SQLiteConsoleStore {
    static let cleanupColumns =
        "suborg_id, reason, first_seen_at, state, body, attempts, last_error, updated_at, last_backup_id, version"

    static func cleanupRecord(_ row: Row) throws -> CleanupItemRecord {
        let stateText: String = row["state"]
        guard let state = CleanupItemRecord.State(rawValue: stateText) else {
            throw ConsoleError.internalError("A cleanup item has an unknown state \(stateText).")
        }
        return CleanupItemRecord(
            subOrgId: row["suborg_id"], reason: row["reason"], firstSeenAt: row["first_seen_at"], state: state,
            body: row["body"], attempts: row["attempts"], lastError: row["last_error"], updatedAt: row["updated_at"],
            lastBackupId: row["last_backup_id"], version: row["version"])
    }

    /// Inserts a pending item, or keeps the existing one with the earlier first-seen time.
    /// Returns whether the item was new.
    @discardableResult
    static func enqueue(_ item: CleanupItemRecord, tenant: String, _ db: Database) throws -> Bool {
        let existed =
            try Bool.fetchOne(
                db.cachedStatement(sql: "SELECT 1 FROM cleanup_items WHERE tenant = ? AND suborg_id = ?"),
                arguments: [tenant, item.subOrgId]) != nil
        try db.cachedStatement(
            sql: """
                INSERT INTO cleanup_items (tenant, \(cleanupColumns)) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0)
                ON CONFLICT (tenant, suborg_id) DO UPDATE
                SET first_seen_at = min(first_seen_at, excluded.first_seen_at),
                    reason = CASE WHEN excluded.reason = 'reset' THEN 'reset' ELSE reason END,
                    last_backup_id = coalesce(excluded.last_backup_id, last_backup_id),
                    version = version + (first_seen_at > excluded.first_seen_at
                        OR (excluded.reason = 'reset' AND reason <> 'reset')
                        OR (excluded.last_backup_id IS NOT NULL AND excluded.last_backup_id IS NOT last_backup_id))
                """
        ).execute(arguments: [
            tenant, item.subOrgId, item.reason, item.firstSeenAt, item.state.rawValue, item.body, item.attempts,
            item.lastError, item.updatedAt, item.lastBackupId,
        ])
        return !existed
    }

    public func cleanupItem(tenant: TenantName, subOrgId: String) async throws(ConsoleError) -> CleanupItemRecord? {
        try await readOne("reading cleanup item \(subOrgId)") { db in
            try Row.fetchOne(
                db, sql: "SELECT \(Self.cleanupColumns) FROM cleanup_items WHERE tenant = ? AND suborg_id = ?",
                arguments: [tenant.rawValue, subOrgId]
            ).map(Self.cleanupRecord)
        }
    }

    public func enqueueCleanup(tenant: TenantName, _ items: [CleanupItemRecord], audit: AuditDraft?)
        async throws(ConsoleError) -> Int
    {
        try await write("queueing \(items.count) sub-orgs for cleanup") { db in
            var new = 0
            for item in items where try Self.enqueue(item, tenant: tenant.rawValue, db) { new += 1 }
            if let audit { _ = try self.insertAudit(audit, db) }
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
        try await write("updating cleanup item \(item.subOrgId)") { db in
            try db.execute(
                sql: """
                    UPDATE cleanup_items SET reason = ?, first_seen_at = ?, state = ?, body = ?, attempts = ?,
                        last_error = ?, updated_at = ?, last_backup_id = ?, version = version + 1
                    WHERE tenant = ? AND suborg_id = ? AND version = ?
                    """,
                arguments: [
                    item.reason, item.firstSeenAt, item.state.rawValue, item.body, item.attempts, item.lastError,
                    item.updatedAt, item.lastBackupId, tenant.rawValue, item.subOrgId, item.version,
                ])
            guard db.changesCount == 1 else {
                let exists =
                    try Bool.fetchOne(
                        db, sql: "SELECT 1 FROM cleanup_items WHERE tenant = ? AND suborg_id = ?",
                        arguments: [tenant.rawValue, item.subOrgId]) != nil
                throw CleanupItemRecord.refusedUpdate(item.subOrgId, tenant: tenant, exists: exists)
            }
            if let audit { _ = try self.insertAudit(audit, db) }
            var updated = item
            updated.version += 1
            return updated
        }
    }

    public func cleanupItems(tenant: TenantName, states: Set<CleanupItemRecord.State>?) async throws(ConsoleError)
        -> [CleanupItemRecord]
    {
        try await read("listing cleanup items") { db in
            try Row.fetchAll(
                db, sql: "SELECT \(Self.cleanupColumns) FROM cleanup_items WHERE tenant = ? ORDER BY suborg_id",
                arguments: [tenant.rawValue]
            ).map(Self.cleanupRecord).filter { states?.contains($0.state) ?? true }
        }
    }
}

extension CleanupItemRecord {
    /// Why a compare-and-set update of a journal item wrote nothing: the item is not there
    /// (`not_found`), or another writer changed it since it was read (`stale_journal_item`).
    public static func refusedUpdate(_ subOrgId: String, tenant: TenantName, exists: Bool) -> ConsoleError {
        guard exists else { return .notFound("Sub-org \(subOrgId) is not in the cleanup journal of \(tenant).") }
        return ConsoleError(
            .conflict, code: "stale_journal_item",
            "Cleanup item \(subOrgId) of \(tenant) was changed by another writer since it was read; nothing was overwritten."
        )
    }
}
