import BackupModel
import ConsoleStore
import PostgresNIO

/// A tenant's cleanup journal as a work queue for workers on several machines.
///
/// A worker claims items with `FOR UPDATE SKIP LOCKED` (two workers never wait for, nor take,
/// the same item), holds them under a lease it renews with heartbeats, and records each outcome
/// only while it still holds the item. A worker that dies stops renewing; once its lease has
/// expired another worker claims the item, with the body journaled before the first send, and
/// re-sends that body unchanged. Times are unix milliseconds, given by the caller.
public struct PostgresCleanupQueue: Sendable {
    public let database: PostgresStoreDatabase

    public init(database: PostgresStoreDatabase) { self.database = database }

    /// Claims up to `limit` items of `tenant` in `states`, in sub-org order, that nobody holds or
    /// whose lease expired before `now`, for `worker` until `now + leaseMillis`.
    public func claim(
        tenant: TenantName, worker: String, states: Set<CleanupItemRecord.State>, limit: Int, now: Int64,
        leaseMillis: Int64
    ) async throws(ConsoleError) -> [CleanupItemRecord] {
        let stateNames = states.map(\.rawValue).sorted()
        let until = now + leaseMillis
        let bounded = max(0, limit)
        return try await database.withTransaction("claiming cleanup items of \(tenant)") { connection in
            let rows = try await connection.query(
                // A materialized pick, as in PostgresConsoleStore.claimCleanup: `IN (SELECT …
                // LIMIT n)` may be run once per updated row and claim more than `limit`.
                """
                WITH picked AS MATERIALIZED (
                    SELECT suborg_id FROM cleanup_items
                    WHERE tenant = \(tenant.rawValue) AND state = ANY(\(stateNames))
                        AND (claimed_by IS NULL OR lease_expires_at < \(now))
                    ORDER BY suborg_id LIMIT \(bounded)
                    FOR UPDATE SKIP LOCKED)
                UPDATE cleanup_items c SET claimed_by = \(worker), lease_expires_at = \(until)
                FROM picked WHERE c.tenant = \(tenant.rawValue) AND c.suborg_id = picked.suborg_id
                RETURNING \(unescaped: Self.qualifiedColumns)
                """, logger: database.logger)
            var items: [CleanupItemRecord] = []
            for try await row in rows { items.append(try Self.item(row)) }
            return items.sorted { $0.subOrgId < $1.subOrgId }
        }
    }

    /// The heartbeat: extends every lease `worker` holds in `tenant` to `now + leaseMillis`.
    /// - Returns: the sub-orgs it still holds (one whose lease expired and that another worker
    ///   claimed is not among them: the worker must drop it).
    public func heartbeat(tenant: TenantName, worker: String, now: Int64, leaseMillis: Int64)
        async throws(ConsoleError) -> Set<String>
    {
        let until = now + leaseMillis
        return try await database.withTransaction("renewing the cleanup leases of \(worker)") { connection in
            let rows = try await connection.query(
                """
                UPDATE cleanup_items SET lease_expires_at = \(until)
                WHERE tenant = \(tenant.rawValue) AND claimed_by = \(worker)
                RETURNING suborg_id
                """, logger: database.logger)
            var held: Set<String> = []
            for try await id in rows.decode(String.self) { held.insert(id) }
            return held
        }
    }

    /// Writes `item` (compare-and-set on ``CleanupItemRecord/version``) while `worker` still
    /// holds it: the body before its first send (`release: false`), or the outcome, which also
    /// releases the claim.
    /// - Returns: the item as written, or `nil` when the worker no longer holds it or the item
    ///   changed since it was read; then nothing was written and the worker must drop it.
    public func record(
        tenant: TenantName, worker: String, item: CleanupItemRecord, release: Bool
    ) async throws(ConsoleError) -> CleanupItemRecord? {
        try await database.withTransaction("recording cleanup item \(item.subOrgId)") { connection in
            let rows = try await connection.query(
                """
                UPDATE cleanup_items SET
                    state = \(item.state.rawValue), body = \(item.body), attempts = \(item.attempts),
                    last_error = \(item.lastError), updated_at = \(item.updatedAt),
                    last_backup_id = \(item.lastBackupId), version = version + 1,
                    claimed_by = CASE WHEN \(release) THEN NULL ELSE claimed_by END,
                    lease_expires_at = CASE WHEN \(release) THEN NULL ELSE lease_expires_at END
                WHERE tenant = \(tenant.rawValue) AND suborg_id = \(item.subOrgId)
                    AND version = \(item.version) AND claimed_by = \(worker)
                RETURNING \(unescaped: Self.columns)
                """, logger: database.logger)
            for try await row in rows { return try Self.item(row) }
            return nil
        }
    }

    static let columns =
        "suborg_id, reason, first_seen_at, state, body, attempts::BIGINT, last_error, updated_at, last_backup_id, version"
    /// ``columns`` of the claimed rows (`picked` has a `suborg_id` too).
    static let qualifiedColumns = columns.split(separator: ", ").map { "c.\($0)" }.joined(separator: ", ")

    static func item(_ row: PostgresRow) throws -> CleanupItemRecord {
        let (id, reason, firstSeen, stateName, body, attempts, lastError, updated, lastBackup, version) =
            try row.decode((String, String, Int64, String, String?, Int64, String?, Int64, String?, Int64).self)
        guard let state = CleanupItemRecord.State(rawValue: stateName) else {
            throw ConsoleError.internalError("Cleanup item \(id) has an unknown state \(stateName.prefix(40)).")
        }
        return CleanupItemRecord(
            subOrgId: id, reason: reason, firstSeenAt: firstSeen, state: state, body: body, attempts: Int(attempts),
            lastError: lastError, updatedAt: updated, lastBackupId: lastBackup, version: version)
    }
}

/// The rate limit that a tenant's cleanup workers share wherever they run, so N workers send
/// at the tenant's rate, not N times it: the generic cell rate algorithm on one row per tenant.
///
/// Each Turnkey call reserves a slot with one `INSERT … ON CONFLICT DO UPDATE` (the row lock
/// orders concurrent reservations); the worker sends at the slot's time. Up to `burst` calls
/// may go at once after a quiet spell, then one every `1 / perSecond` seconds.
public struct PostgresRateLimiter: Sendable {
    public let database: PostgresStoreDatabase

    public init(database: PostgresStoreDatabase) { self.database = database }

    /// Reserves the next call of `tenant`.
    /// - Parameter nowMicros: the caller's clock, unix microseconds.
    /// - Returns: when the call may be sent (unix microseconds; `nowMicros` or earlier: at once).
    public func reserve(tenant: TenantName, perSecond: Double, burst: Int, nowMicros: Int64)
        async throws(ConsoleError) -> Int64
    {
        guard perSecond > 0, perSecond.isFinite else { throw ConsoleError.usage("A rate limit must be above zero.") }
        let interval = max(1, Int64((1_000_000 / perSecond).rounded()))
        let tolerance = interval * Int64(max(0, burst - 1))
        let tat = try await database.withConnection("reserving a Turnkey call of \(tenant)") { connection in
            let rows = try await connection.query(
                """
                INSERT INTO cleanup_rate (tenant, tat_micros) VALUES (\(tenant.rawValue), \(nowMicros + interval))
                ON CONFLICT (tenant) DO UPDATE
                    SET tat_micros = GREATEST(cleanup_rate.tat_micros, \(nowMicros)) + \(interval)
                RETURNING tat_micros
                """, logger: database.logger)
            for try await value in rows.decode(Int64.self) { return value }
            throw ConsoleError.internalError("Reserving a Turnkey call returned no row.")
        }
        return max(nowMicros, tat - interval - tolerance)
    }
}
