import BackupModel

/// The store operations the Turnkey cleanup needs beyond ``ConsoleStore``.
///
/// A separate protocol so the core protocol stays as it is; every ``SQLRuleStore`` conforms.
/// Everything here is bounded: pages, `IN` lists of one page, per-state counts.
public protocol CleanupJournalStore: ConsoleStore {
    /// Which of `ids` (one page, ≤ 1000) some backup of the tenant references.
    func referencedSubOrgs(tenant: TenantName, among ids: [String]) async throws(ConsoleError) -> Set<String>
    /// Stores (or replaces) the user-stamped break-glass request for a journaled sub-org.
    func saveStampedTeardown(tenant: TenantName, _ teardown: StampedTeardown, audit: AuditDraft?)
        async throws(ConsoleError)
    func stampedTeardown(tenant: TenantName, subOrgId: String) async throws(ConsoleError) -> StampedTeardown?
    /// How many journal items are in each state.
    func cleanupCounts(tenant: TenantName) async throws(ConsoleError) -> [CleanupItemRecord.State: Int]
}

/// A break-glass deletion stamped by the user (`recovery stamp`): the exact body and its stamp.
public struct StampedTeardown: Sendable, Equatable, Codable {
    public var subOrgId: String
    public var body: String
    /// The `X-Stamp` value (secp256k1 scheme); not a secret, it authorises this one body only.
    public var stamp: String
    public var submittedAt: Int64

    public init(subOrgId: String, body: String, stamp: String, submittedAt: Int64) {
        self.subOrgId = subOrgId
        self.body = body
        self.stamp = stamp
        self.submittedAt = submittedAt
    }
}
