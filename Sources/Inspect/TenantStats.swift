import Access
import BackupModel
import ConsoleStore

/// What `stats` reports about a tenant: factor mixes, devices per backup, blob sizes and
/// Turnkey sub-orgs. Buckets are arrays in a fixed order, so tables and JSON are stable.
public struct TenantStats: Sendable, Equatable, Codable {
    /// A label and how many backups fall under it.
    public struct Bucket: Sendable, Equatable, Codable {
        public var label: String
        public var backups: Int
    }

    public var tenant: String
    public var backups: Int
    /// By the set of main factor kinds, e.g. `oidc+passkey`; most common first.
    public var factorMix: [Bucket]
    /// By number of sync factors (devices): `0` … `4`, `5+`.
    public var devices: [Bucket]
    /// By sealed blob size.
    public var blobSizes: [Bucket]
    public var blobBytesTotal: Int
    /// Distinct sub-orgs the tenant's TURNKEY keys reference.
    public var subOrgsReferenced: Int
    /// Backups with at least one TURNKEY key.
    public var backupsWithSubOrg: Int
    /// How old the data is: the newest snapshot of the Backup Service (live tenants).
    public var snapshot: SnapshotAge?

    static let deviceLabels = ["0", "1", "2", "3", "4", "5+"]
    static let blobLabels = ["none", "< 4 KiB", "4-64 KiB", "64 KiB-1 MiB", "1-15 MiB", "> 15 MiB"]

    static func blobBucket(_ size: Int?) -> Int {
        guard let size else { return 0 }
        switch size {
        case ..<4096: return 1
        case ..<65_536: return 2
        case ..<1_048_576: return 3
        case ...BackupMetadata.maxBlobBytes: return 4
        default: return 5
        }
    }

    /// `keychain`, `oidc`, `passkey` joined by `+` in that order; `none` without main factors.
    static func mix(_ summary: BackupSummary) -> String {
        var kinds: [String] = []
        if summary.keychainFactors > 0 { kinds.append("keychain") }
        if summary.oidcFactors > 0 { kinds.append("oidc") }
        if summary.passkeys > 0 { kinds.append("passkey") }
        return kinds.isEmpty ? "none" : kinds.joined(separator: "+")
    }
}

/// Computes ``TenantStats`` by streaming the tenant's backup summaries (bounded memory).
public struct StatsService: Sendable {
    let store: any ConsoleStore
    public var batchSize = 1000

    let clock: WallClock

    public init(store: any ConsoleStore, clock: WallClock = .system) {
        self.store = store
        self.clock = clock
    }

    /// `stats`; audited as `backup.stats`.
    public func stats(session: Session) async throws(ConsoleError) -> TenantStats {
        try await session.require(.stats)
        let tenant = session.tenantName
        var backups = 0
        var mixes: [String: Int] = [:]
        var devices = Array(repeating: 0, count: TenantStats.deviceLabels.count)
        var blobs = Array(repeating: 0, count: TenantStats.blobLabels.count)
        var blobBytes = 0
        var withSubOrg = 0
        // The summaries the store derived at write time: no metadata JSON is decoded. Every
        // TURNKEY key names a sub-org, so a backup has a sub-org exactly when it has such a key.
        let pageSize = min(max(batchSize, 1), 100_000)
        var after: String?
        while true {
            let page = try await store.backupSummaries(tenant: tenant, after: after, limit: pageSize)
            for summary in page {
                backups += 1
                mixes[TenantStats.mix(summary), default: 0] += 1
                devices[min(summary.syncFactors, devices.count - 1)] += 1
                blobs[TenantStats.blobBucket(summary.blobSize)] += 1
                blobBytes += summary.blobSize ?? 0
                if summary.turnkeyKeys > 0 { withSubOrg += 1 }
            }
            guard page.count == pageSize, let last = page.last else { break }
            after = last.backupId
        }
        var subOrgs = 0
        var afterSubOrg: String?
        while true {
            let page = try await store.referencedSubOrgs(tenant: tenant, after: afterSubOrg, limit: 10_000)
            subOrgs += page.count
            guard page.count == 10_000, let last = page.last else { break }
            afterSubOrg = last
        }
        try await store.appendAudit(session.audit("backup.stats", details: ["backups": "\(backups)"]))
        func buckets(_ labels: [String], _ counts: [Int]) -> [TenantStats.Bucket] {
            zip(labels, counts).map { TenantStats.Bucket(label: $0.0, backups: $0.1) }
        }
        return TenantStats(
            tenant: tenant.rawValue, backups: backups,
            factorMix: mixes.sorted { ($1.value, $0.key) < ($0.value, $1.key) }.map {
                TenantStats.Bucket(label: $0.key, backups: $0.value)
            },
            devices: buckets(TenantStats.deviceLabels, devices), blobSizes: buckets(TenantStats.blobLabels, blobs),
            blobBytesTotal: blobBytes, subOrgsReferenced: subOrgs, backupsWithSubOrg: withSubOrg,
            snapshot: try await SnapshotAge.of(store: store, tenant: session.tenant, now: clock.seconds))
    }
}
