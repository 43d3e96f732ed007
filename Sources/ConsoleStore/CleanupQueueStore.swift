import BackupModel

/// The cleanup journal as a work queue for workers in several processes (`backupctl worker`,
/// `serve --workers N`), beside ``LiveTenantStore``.
///
/// `cleanup run --execute --queue` marks the eligible items as queued, naming the operator who
/// queued them. A worker claims queued pending items under a lease (no two workers hold one
/// item; PostgreSQL takes them with `FOR UPDATE SKIP LOCKED`), renews its leases while it works,
/// and releases an item once its outcome is final. Processing itself goes through the journal's
/// compare-and-set (``ConsoleStore/updateCleanupItem(tenant:_:audit:)``) with the body journaled
/// before the first send, so a worker that dies leaves an item another worker finishes by
/// re-sending that same body once the lease has expired. Times are unix milliseconds.
public protocol CleanupQueueStore: LiveTenantStore {
    /// Marks the pending items among `subOrgIds` as queued by `queuedBy`; returns how many.
    func queueCleanup(tenant: TenantName, subOrgIds: [String], queuedBy: String, now: Int64, audit: AuditDraft)
        async throws(ConsoleError) -> Int
    /// Claims up to `limit` queued pending items that nobody holds or whose lease expired, for
    /// `worker` until `now + leaseMillis`, in sub-org order.
    func claimCleanup(tenant: TenantName, worker: String, limit: Int, now: Int64, leaseMillis: Int64)
        async throws(ConsoleError) -> [QueuedCleanupItem]
    /// Extends every lease `worker` holds in `tenant`; returns the sub-orgs it still holds.
    func renewCleanupClaims(tenant: TenantName, worker: String, now: Int64, leaseMillis: Int64)
        async throws(ConsoleError) -> Set<String>
    /// Drops `worker`'s claim on an item (its outcome is recorded).
    func releaseCleanupClaim(tenant: TenantName, worker: String, subOrgId: String) async throws(ConsoleError)
    /// Takes an item off the queue and drops any claim on it: a worker found it referenced or
    /// its proof no longer holding, so it waits for a run to queue it again.
    func unqueueCleanup(tenant: TenantName, subOrgId: String) async throws(ConsoleError)
    /// Reserves the tenant's next Turnkey call under one rate shared by every worker (the
    /// generic cell rate algorithm): up to `burst` at once after a quiet spell, then one every
    /// `1 / perSecond` seconds. Returns when the call may go (unix microseconds).
    func reserveTurnkeyCall(tenant: TenantName, perSecond: Double, burst: Int, nowMicros: Int64)
        async throws(ConsoleError) -> Int64
}

/// A claimed item and who queued it (the operator its audit entries name).
public struct QueuedCleanupItem: Sendable, Equatable {
    public var item: CleanupItemRecord
    public var queuedBy: String

    public init(item: CleanupItemRecord, queuedBy: String) {
        self.item = item
        self.queuedBy = queuedBy
    }
}

/// The slot arithmetic of ``CleanupQueueStore/reserveTurnkeyCall(tenant:perSecond:burst:nowMicros:)``
/// for stores that keep the theoretical arrival time themselves.
public enum GCRA {
    /// The interval between calls at `perSecond`, microseconds (at least 1).
    /// - Throws: `usage` for a rate that is not above zero.
    public static func interval(perSecond: Double) throws(ConsoleError) -> Int64 {
        guard perSecond > 0, perSecond.isFinite else { throw ConsoleError.usage("A rate limit must be above zero.") }
        return max(1, Int64((1_000_000 / perSecond).rounded()))
    }

    /// When the call reserved with theoretical arrival time `tat` (after the update) may go.
    public static func slot(tat: Int64, interval: Int64, burst: Int, nowMicros: Int64) -> Int64 {
        max(nowMicros, tat - interval - interval * Int64(max(0, burst - 1)))
    }
}
