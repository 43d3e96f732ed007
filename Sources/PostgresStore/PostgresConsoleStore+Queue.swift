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
            // The pick is a materialized CTE: as `IN (SELECT … LIMIT n)` the planner may run
            // the subquery once per row it updates, and claim every item, not `limit` of them.
            try await session.query(
                """
                WITH picked AS MATERIALIZED (
                    SELECT suborg_id FROM cleanup_items
                    WHERE tenant = \(tenant.rawValue) AND state = 'pending' AND queued_at IS NOT NULL
                        AND (claimed_by IS NULL OR lease_expires_at < \(now))
                    ORDER BY suborg_id LIMIT \(max(0, limit))
                    FOR UPDATE SKIP LOCKED)
                UPDATE cleanup_items SET claimed_by = \(worker), lease_expires_at = \(now + leaseMillis)
                FROM picked WHERE cleanup_items.tenant = \(tenant.rawValue) AND cleanup_items.suborg_id = picked.suborg_id
                RETURNING \(raw: Self.returnedColumns), COALESCE(cleanup_items.queued_by, '') AS queued_by
                """
            ).map { QueuedCleanupItem(item: try RowMapping.cleanupItem($0), queuedBy: try $0.get("queued_by")) }
        }
        return claimed.sorted { $0.item.subOrgId < $1.item.subOrgId }
    }

    /// ``RowMapping/cleanupColumns`` of the updated rows (`picked` has a `suborg_id` too).
    private static let returnedColumns = RowMapping.cleanupColumns.split(separator: ", ").map {
        "cleanup_items.\($0)"
    }.joined(separator: ", ")
}
