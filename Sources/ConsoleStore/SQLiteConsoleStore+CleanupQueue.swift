import BackupModel
import Foundation
import GRDB

/// The queue on SQLite: one writer at a time, so a claim is a guarded `UPDATE` in a write
/// transaction; workers in several processes on one file still never hold the same item.
extension SQLiteConsoleStore: CleanupQueueStore {
    public func queueCleanup(tenant: TenantName, subOrgIds: [String], queuedBy: String, now: Int64, audit: AuditDraft)
        async throws(ConsoleError) -> Int
    {
        try await write("queueing \(subOrgIds.count) sub-orgs for the cleanup workers") { db in
            let mark = try db.cachedStatement(
                sql: """
                    UPDATE cleanup_items SET queued_by = ?, queued_at = ?
                    WHERE tenant = ? AND suborg_id = ? AND state = 'pending'
                    """)
            var queued = 0
            for id in subOrgIds {
                try mark.execute(arguments: [queuedBy, now, tenant.rawValue, id])
                queued += db.changesCount
            }
            _ = try self.insertAudit(audit, db)
            return queued
        }
    }

    public func claimCleanup(tenant: TenantName, worker: String, limit: Int, now: Int64, leaseMillis: Int64)
        async throws(ConsoleError) -> [QueuedCleanupItem]
    {
        try await write("claiming cleanup items of \(tenant)") { db in
            let rows = try Row.fetchAll(
                db,
                sql: """
                    SELECT suborg_id, queued_by FROM cleanup_items
                    WHERE tenant = ? AND state = 'pending' AND queued_at IS NOT NULL
                        AND (claimed_by IS NULL OR lease_expires_at < ?)
                    ORDER BY suborg_id LIMIT ?
                    """, arguments: [tenant.rawValue, now, max(0, limit)])
            var claimed: [QueuedCleanupItem] = []
            for row in rows {
                let id: String = row["suborg_id"]
                try db.execute(
                    sql:
                        "UPDATE cleanup_items SET claimed_by = ?, lease_expires_at = ? WHERE tenant = ? AND suborg_id = ?",
                    arguments: [worker, now + leaseMillis, tenant.rawValue, id])
                guard
                    let item = try Row.fetchOne(
                        db,
                        sql: "SELECT \(Self.cleanupColumns) FROM cleanup_items WHERE tenant = ? AND suborg_id = ?",
                        arguments: [tenant.rawValue, id]
                    ).map(Self.cleanupRecord)
                else { continue }
                claimed.append(QueuedCleanupItem(item: item, queuedBy: row["queued_by"] ?? ""))
            }
            return claimed
        }
    }

    public func renewCleanupClaims(tenant: TenantName, worker: String, now: Int64, leaseMillis: Int64)
        async throws(ConsoleError) -> Set<String>
    {
        try await write("renewing the cleanup claims of a worker") { db in
            try db.execute(
                sql: "UPDATE cleanup_items SET lease_expires_at = ? WHERE tenant = ? AND claimed_by = ?",
                arguments: [now + leaseMillis, tenant.rawValue, worker])
            return Set(
                try String.fetchAll(
                    db, sql: "SELECT suborg_id FROM cleanup_items WHERE tenant = ? AND claimed_by = ?",
                    arguments: [tenant.rawValue, worker]))
        }
    }

    public func releaseCleanupClaim(tenant: TenantName, worker: String, subOrgId: String) async throws(ConsoleError) {
        try await write("releasing cleanup item \(subOrgId)") { db in
            try db.execute(
                sql: """
                    UPDATE cleanup_items SET claimed_by = NULL, lease_expires_at = NULL
                    WHERE tenant = ? AND suborg_id = ? AND claimed_by = ?
                    """, arguments: [tenant.rawValue, subOrgId, worker])
        }
    }

    public func reserveTurnkeyCall(tenant: TenantName, perSecond: Double, burst: Int, nowMicros: Int64)
        async throws(ConsoleError) -> Int64
    {
        let interval = try GCRA.interval(perSecond: perSecond)
        let tat = try await write("reserving a Turnkey call of \(tenant)") { db in
            try db.execute(
                sql: """
                    INSERT INTO cleanup_rate (tenant, tat_micros) VALUES (?, ?)
                    ON CONFLICT (tenant) DO UPDATE SET tat_micros = max(tat_micros, ?) + ?
                    """, arguments: [tenant.rawValue, nowMicros + interval, nowMicros, interval])
            return try Int64.fetchOne(
                db, sql: "SELECT tat_micros FROM cleanup_rate WHERE tenant = ?", arguments: [tenant.rawValue]) ?? 0
        }
        return GCRA.slot(tat: tat, interval: interval, burst: burst, nowMicros: nowMicros)
    }
}
