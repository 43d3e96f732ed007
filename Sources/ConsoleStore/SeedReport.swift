/// What `seed` wrote into a sandbox tenant.
public struct SeedReport: Codable, Sendable, Equatable {
    public var tenant: String
    public var seed: UInt64
    /// Backups this run added.
    public var backups: Int
    /// Backups of this seed that were already in the tenant (a re-run): left as they are.
    public var existing: Int = 0
    public var lookupRows: Int
    /// Backups whose index rows deliberately disagree with their metadata.
    public var driftedBackups: Int
    /// Distinct sub-orgs referenced by TURNKEY keys (all listed by the sandbox Turnkey).
    public var referencedSubOrgs: Int
    /// Sub-orgs listed by the sandbox Turnkey that no backup references.
    public var orphanSubOrgs: Int
    public var blobBytes: Int

    public init(
        tenant: String, seed: UInt64, backups: Int = 0, lookupRows: Int = 0, driftedBackups: Int = 0,
        referencedSubOrgs: Int = 0, orphanSubOrgs: Int = 0, blobBytes: Int = 0
    ) {
        self.tenant = tenant
        self.seed = seed
        self.backups = backups
        self.lookupRows = lookupRows
        self.driftedBackups = driftedBackups
        self.referencedSubOrgs = referencedSubOrgs
        self.orphanSubOrgs = orphanSubOrgs
        self.blobBytes = blobBytes
    }
}
