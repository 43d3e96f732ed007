import BackupModel
import ConsoleStore
import PostgresNIO

/// The queue for cleanup workers on several machines: claims with `FOR UPDATE SKIP LOCKED`
/// (two workers never wait for, nor take, one item), leases renewed by heartbeats, and one
/// rate per tenant (``PostgresRateLimiter``) however many workers send.
extension PostgresConsoleStore: CleanupQueueStore {
    public func queueCleanup(tenant: TenantName, subOrgIds: [String], queuedBy: String, now: Int64, audit: AuditDraft)
        async throws(ConsoleError) -> Int
    {
        try await write("queueing \(subOrgIds.count) sub-orgs for the cleanup workers") { connection in
            let queued =
                try await first(
                    """
                    WITH marked AS (
                        UPDATE cleanup_items SET queued_by = \(queuedBy), queued_at = \(now)
                        WHERE tenant = \(tenant.rawValue) AND suborg_id = ANY(\(subOrgIds)) AND state = 'pending'
                        RETURNING 1)
                    SELECT count(*) FROM marked
                    """, connection
                ) { try $0[0].decode(Int.self) } ?? 0
            _ = try await insertAudit(audit, connection)
            return queued
        }
    }

    public func claimCleanup(tenant: TenantName, worker: String, limit: Int, now: Int64, leaseMillis: Int64)
        async throws(ConsoleError) -> [QueuedCleanupItem]
    {
        try await write("claiming cleanup items of \(tenant)") { connection in
            var claimed: [QueuedCleanupItem] = []
            for try await row in try await connection.query(
                """
                UPDATE cleanup_items SET claimed_by = \(worker), lease_expires_at = \(now + leaseMillis)
                WHERE tenant = \(tenant.rawValue) AND suborg_id IN (
                    SELECT suborg_id FROM cleanup_items
                    WHERE tenant = \(tenant.rawValue) AND state = 'pending' AND queued_at IS NOT NULL
                        AND (claimed_by IS NULL OR lease_expires_at < \(now))
                    ORDER BY suborg_id LIMIT \(max(0, limit))
                    FOR UPDATE SKIP LOCKED)
                RETURNING \(unescaped: Self.cleanupColumns), COALESCE(queued_by, '')
                """, logger: database.logger)
            {
                let (
                    id, reason, firstSeen, stateName, body, attempts, lastError, updated, lastBackup, version, queuedBy
                ) =
                    try row.decode(
                        (String, String, Int64, String, String?, Int64, String?, Int64, String?, Int64, String).self)
                guard let state = CleanupItemRecord.State(rawValue: stateName) else {
                    throw ConsoleError.internalError("Cleanup item \(id) has an unknown state \(stateName.prefix(40)).")
                }
                let item = CleanupItemRecord(
                    subOrgId: id, reason: reason, firstSeenAt: firstSeen, state: state, body: body,
                    attempts: Int(attempts), lastError: lastError, updatedAt: updated, lastBackupId: lastBackup,
                    version: version)
                claimed.append(QueuedCleanupItem(item: item, queuedBy: queuedBy))
            }
            return claimed.sorted { $0.item.subOrgId < $1.item.subOrgId }
        }
    }

    public func renewCleanupClaims(tenant: TenantName, worker: String, now: Int64, leaseMillis: Int64)
        async throws(ConsoleError) -> Set<String>
    {
        try await PostgresCleanupQueue(database: database).heartbeat(
            tenant: tenant, worker: worker, now: now, leaseMillis: leaseMillis)
    }

    public func releaseCleanupClaim(tenant: TenantName, worker: String, subOrgId: String) async throws(ConsoleError) {
        try await write("releasing cleanup item \(subOrgId)") { connection in
            try await execute(
                """
                UPDATE cleanup_items SET claimed_by = NULL, lease_expires_at = NULL
                WHERE tenant = \(tenant.rawValue) AND suborg_id = \(subOrgId) AND claimed_by = \(worker)
                """, connection)
        }
    }

    public func reserveTurnkeyCall(tenant: TenantName, perSecond: Double, burst: Int, nowMicros: Int64)
        async throws(ConsoleError) -> Int64
    {
        try await PostgresRateLimiter(database: database).reserve(
            tenant: tenant, perSecond: perSecond, burst: burst, nowMicros: nowMicros)
    }
}
