import BackupModel
import ConsoleStore

/// The queue's claim, PostgreSQL's way (overriding the shared rules): one statement with
/// `FOR UPDATE SKIP LOCKED`, so workers on several machines never wait for, nor take, one item.
/// Everything else of the queue (leases, releases, the shared GCRA rate) is the shared rules'.
extension PostgresConsoleStore {
    public func claimCleanup(tenant: TenantName, worker: String, limit: Int, now: Int64, leaseMillis: Int64)
        async throws(ConsoleError) -> [QueuedCleanupItem]
    {
        let claimed = try await driver.transaction("claiming cleanup items of \(tenant)") { session in
            try await session.query(
                """
                UPDATE cleanup_items SET claimed_by = \(worker), lease_expires_at = \(now + leaseMillis)
                WHERE tenant = \(tenant.rawValue) AND suborg_id IN (
                    SELECT suborg_id FROM cleanup_items
                    WHERE tenant = \(tenant.rawValue) AND state = 'pending' AND queued_at IS NOT NULL
                        AND (claimed_by IS NULL OR lease_expires_at < \(now))
                    ORDER BY suborg_id LIMIT \(max(0, limit))
                    FOR UPDATE SKIP LOCKED)
                RETURNING \(raw: RowMapping.cleanupColumns), COALESCE(queued_by, '') AS queued_by
                """
            ).map { QueuedCleanupItem(item: try RowMapping.cleanupItem($0), queuedBy: try $0.get("queued_by")) }
        }
        return claimed.sorted { $0.item.subOrgId < $1.item.subOrgId }
    }
}
