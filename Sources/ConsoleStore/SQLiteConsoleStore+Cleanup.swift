import BackupModel
import Foundation
import GRDB

extension SQLiteConsoleStore {
    private static let cleanupColumns =
        "suborg_id, reason, first_seen_at, state, body, attempts, last_error, updated_at"

    private static func cleanupRecord(_ row: Row) throws -> CleanupItemRecord {
        let stateText: String = row[3]
        guard let state = CleanupItemRecord.State(rawValue: stateText) else {
            throw ConsoleError.internalError("A cleanup item has an unknown state \(stateText).")
        }
        return CleanupItemRecord(
            subOrgId: row[0], reason: row[1], firstSeenAt: row[2], state: state, body: row[4], attempts: row[5],
            lastError: row[6], updatedAt: row[7])
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
                INSERT INTO cleanup_items (tenant, \(cleanupColumns)) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT (tenant, suborg_id) DO UPDATE
                SET first_seen_at = min(first_seen_at, excluded.first_seen_at)
                """
        ).execute(arguments: [
            tenant, item.subOrgId, item.reason, item.firstSeenAt, item.state.rawValue, item.body, item.attempts,
            item.lastError, item.updatedAt,
        ])
        return !existed
    }

    public func cleanupItem(tenant: TenantName, subOrgId: String) throws(ConsoleError) -> CleanupItemRecord? {
        try readOne("reading cleanup item \(subOrgId)") { db in
            try Row.fetchOne(
                db, sql: "SELECT \(Self.cleanupColumns) FROM cleanup_items WHERE tenant = ? AND suborg_id = ?",
                arguments: [tenant.rawValue, subOrgId]
            ).map(Self.cleanupRecord)
        }
    }

    public func enqueueCleanup(tenant: TenantName, _ items: [CleanupItemRecord], audit: AuditDraft?)
        throws(ConsoleError) -> Int
    {
        try write("queueing \(items.count) sub-orgs for cleanup") { db in
            var new = 0
            for item in items where try Self.enqueue(item, tenant: tenant.rawValue, db) { new += 1 }
            if let audit { _ = try insertAudit(audit, db) }
            return new
        }
    }

    public func updateCleanupItem(tenant: TenantName, _ item: CleanupItemRecord, audit: AuditDraft?)
        throws(ConsoleError)
    {
        try write("updating cleanup item \(item.subOrgId)") { db in
            try db.execute(
                sql: """
                    UPDATE cleanup_items SET reason = ?, first_seen_at = ?, state = ?, body = ?, attempts = ?,
                        last_error = ?, updated_at = ?
                    WHERE tenant = ? AND suborg_id = ?
                    """,
                arguments: [
                    item.reason, item.firstSeenAt, item.state.rawValue, item.body, item.attempts, item.lastError,
                    item.updatedAt, tenant.rawValue, item.subOrgId,
                ])
            guard db.changesCount == 1 else {
                throw ConsoleError.notFound("Sub-org \(item.subOrgId) is not in the cleanup journal of \(tenant).")
            }
            if let audit { _ = try insertAudit(audit, db) }
        }
    }

    public func cleanupItems(tenant: TenantName, states: Set<CleanupItemRecord.State>?) throws(ConsoleError)
        -> [CleanupItemRecord]
    {
        try read("listing cleanup items") { db in
            try Row.fetchAll(
                db, sql: "SELECT \(Self.cleanupColumns) FROM cleanup_items WHERE tenant = ? ORDER BY suborg_id",
                arguments: [tenant.rawValue]
            ).map(Self.cleanupRecord).filter { states?.contains($0.state) ?? true }
        }
    }
}
