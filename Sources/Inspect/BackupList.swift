import Access
import BackupModel
import ConsoleStore

/// `backups list`: the tenant's backups with their factor mix, age and health, filtered by
/// factor kind, health and age — the way from "some backups fail" to the ones to `show`.
public struct BackupList: Sendable {
    /// A main-factor kind to filter on, as operators name them.
    public enum FactorKindFilter: String, Sendable, CaseIterable, Codable {
        case passkey, oidc, keypair

        func matches(_ kind: FactorKind) -> Bool {
            switch (self, kind) {
            case (.passkey, .passkey), (.oidc, .oidcAccount), (.keypair, .ecKeypair): true
            default: false
            }
        }
    }

    /// What to list; `nil` filters are off.
    public struct Query: Sendable, Equatable, Codable {
        public var factorKind: FactorKindFilter?
        public var health: HealthStatus?
        /// Created (its oldest main factor) at least this many seconds ago.
        public var olderThanSeconds: Int64?
        /// Created less than this many seconds ago.
        public var newerThanSeconds: Int64?
        public var limit: Int

        public init(
            factorKind: FactorKindFilter? = nil, health: HealthStatus? = nil, olderThanSeconds: Int64? = nil,
            newerThanSeconds: Int64? = nil, limit: Int = 50
        ) {
            self.factorKind = factorKind
            self.health = health
            self.olderThanSeconds = olderThanSeconds
            self.newerThanSeconds = newerThanSeconds
            self.limit = limit
        }
    }

    /// One listed backup. `backupId` is always the full id.
    public struct Row: Sendable, Equatable, Codable {
        public var backupId: String
        /// Unix seconds of its oldest main factor (sync factors when it has none); `nil` without factors.
        @OptionalUTCSeconds public var createdAt: Int64?
        /// Main factor kinds, in metadata order: `PASSKEY`, `OIDC_ACCOUNT`, `EC_KEYPAIR`.
        public var factors: [String]
        public var syncFactors: Int
        public var blobBytes: Int?
        public var health: HealthStatus
    }

    public struct Listing: Sendable, Equatable, Codable {
        public var tenant: String
        public var backups: [Row]
        /// Whether more backups matched than `limit`.
        public var truncated: Bool
    }

    let store: any ConsoleStore
    let now: @Sendable () -> Int64

    /// - Parameter now: unix seconds, injected so age filters are testable.
    public init(store: any ConsoleStore, now: @escaping @Sendable () -> Int64) {
        self.store = store
        self.now = now
    }

    /// Lists backups in id order, at most `query.limit`; audited as `backup.list`.
    /// - Throws: ``ConsoleError`` `invalid_limit`, `permission_denied`, or the store's errors.
    public func list(_ query: Query, session: Session) async throws(ConsoleError) -> Listing {
        try await session.require(.check)
        guard (1...100_000).contains(query.limit) else {
            throw .invalid("invalid_limit", "--limit must be between 1 and 100000, got \(query.limit).")
        }
        let tenant = session.tenantName
        let inspector = BackupInspector(store: store)
        let nowSeconds = now()
        var rows: [Row] = []
        var truncated = false
        var after: String?
        scan: while true {
            let page = try await store.backups(tenant: tenant, after: after, limit: 200)
            for record in page {
                let metadata = record.metadata
                if let kind = query.factorKind, !metadata.factors.contains(where: { kind.matches($0.kind) }) {
                    continue
                }
                let created = (metadata.factors.isEmpty ? metadata.syncFactors : metadata.factors)
                    .map(\.createdAt.seconds).min()
                if let older = query.olderThanSeconds, (created.map { nowSeconds - $0 < older } ?? true) {
                    continue
                }
                if let newer = query.newerThanSeconds, (created.map { nowSeconds - $0 >= newer } ?? true) {
                    continue
                }
                let health =
                    await HealthChecks.run(try inspector.healthInput(record, tenant: tenant)).map(\.status).max() ?? .ok
                if let wanted = query.health, wanted != health { continue }
                guard rows.count < query.limit else {
                    truncated = true
                    break scan
                }
                rows.append(
                    Row(
                        backupId: record.backupId, createdAt: created, factors: metadata.factors.map(\.kind.tag),
                        syncFactors: metadata.syncFactors.count, blobBytes: record.blobSize, health: health))
            }
            guard page.count == 200, let last = page.last else { break }
            after = last.backupId
        }
        var details = ["listed": "\(rows.count)"]
        if let kind = query.factorKind { details["factorKind"] = kind.rawValue }
        if let health = query.health { details["health"] = health.rawValue }
        if let older = query.olderThanSeconds { details["olderThan"] = "\(older)s" }
        if let newer = query.newerThanSeconds { details["newerThan"] = "\(newer)s" }
        try await store.appendAudit(session.audit("backup.list", details: details))
        return Listing(tenant: tenant.rawValue, backups: rows, truncated: truncated)
    }
}
