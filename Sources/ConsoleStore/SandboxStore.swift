import BackupModel

/// What only sandbox tenants need of the store, kept out of the production seams
/// (``ConsoleStore``, ``LiveTenantStore``, ``CleanupQueueStore``): the Turnkey sandbox's own
/// sub-orgs, the sandbox Backup Service's reset, and seeding synthetic backups. Every store that
/// runs the shared rules (``SQLRuleStore``) provides it; a console holds both
/// (``FullConsoleStore``) so that its sandbox emulators can run on its store.
public protocol SandboxStore: ConsoleStore {
    /// Bytes free for new data on the store's disk, when the store can see it (SQLite: the
    /// database file's filesystem); `nil` when it cannot (PostgreSQL's disk is its server's).
    /// Seeding refuses a count that would not fit (``SandboxSeeder``).
    func availableBytes() -> Int64?
    /// Records sub-orgs the Turnkey sandbox lists under the tenant's parent org; existing ids
    /// keep their first `createdAt`. Returns how many were new.
    @discardableResult
    func addSandboxSubOrgs(tenant: TenantName, _ subOrgIds: [String], createdAt: Int64, audit: AuditDraft?)
        async throws(ConsoleError) -> Int
    /// Removes one (the sandbox's `delete_sub_organization`); returns whether it was there.
    func removeSandboxSubOrg(tenant: TenantName, subOrgId: String, audit: AuditDraft?) async throws(ConsoleError)
        -> Bool
    /// Up to `limit` sandbox sub-org ids greater than `after`, in id order.
    func sandboxSubOrgPage(tenant: TenantName, after: String, limit: Int) async throws(ConsoleError) -> [String]
    func sandboxSubOrgExists(tenant: TenantName, subOrgId: String) async throws(ConsoleError) -> Bool
    func sandboxSubOrgCount(tenant: TenantName) async throws(ConsoleError) -> Int
    /// Records sandbox sub-orgs with their Turnkey state (`id → JSON`, as the Turnkey sandbox
    /// keeps a sub-org), replacing the state of ids already there; returns how many were new.
    @discardableResult
    func putSandboxSubOrgStates(tenant: TenantName, _ states: [String: String], createdAt: Int64, audit: AuditDraft?)
        async throws(ConsoleError) -> Int
    /// A sandbox sub-org's Turnkey state; `nil` when it has none (or is not there).
    func sandboxSubOrgState(tenant: TenantName, subOrgId: String) async throws(ConsoleError) -> String?

    /// The sandbox service's `/v1/reset` steps 6–7 in one transaction: mark the token used and
    /// delete the backup (blob, metadata, lookup rows), without queueing or auditing — the
    /// sandbox service is not the console. Returns `false`, changing nothing, when the token
    /// was already used (`already_used`).
    func sandboxServiceReset(tenant: TenantName, tokenHash: String, backupId: String, now: Int64)
        async throws(ConsoleError) -> Bool

    /// Writes synthetic backups and orphan sub-orgs into a sandbox tenant by ``SandboxSeeder``'s rules.
    func seedSandbox(
        tenant: TenantRecord, backups: Int, orphans: Int, seed: UInt64, operatorName: String,
        clock: @escaping @Sendable () -> Int64, progress: ((Int) throws(ConsoleError) -> Void)?
    ) async throws(ConsoleError) -> SeedReport
}

/// Everything a console process holds of its store: the production seams and the sandbox's.
public typealias FullConsoleStore = CleanupQueueStore & SandboxStore

extension SandboxStore {
    public func availableBytes() -> Int64? { nil }
}
