import Access
import BackupModel
import ConsoleStore
import Inspect

/// `lookup …`: the backup a factor opens. A keypair miss that the other scope would hit says
/// so; that probe neither shows nor audits the backup.
public struct LookupOperation: ConsoleOperation {
    public static let name = "lookup"
    public static let isQuick = true
    public var query: LookupQuery

    public init(_ query: LookupQuery) { self.query = query }

    public func run(_ context: any OperationContext) async throws(ConsoleError) -> LookupResult {
        let service = LookupService(store: try await context.store())
        let session = try await context.session()
        do {
            return try await service.lookup(query, session: session)
        } catch  where error.code == "not_found" {
            guard case .keypair(let key, let sync) = query,
                await (try? service.resolve(.keypair(publicKey: key, sync: !sync), tenant: session.tenantName)) != nil
            else { throw error }
            let hint =
                sync
                ? " It is in the MAIN scope (an iCloud Keychain key): did you mean `lookup keypair` without --sync?"
                : " It is in the SYNC scope (a device key): did you mean `lookup keypair \(key) --sync`?"
            throw ConsoleError(error.kind, code: error.code, error.message + hint)
        }
    }
}

/// `show BACKUP_ID`: one backup's factors, keys, blob and health.
public struct ShowOperation: ConsoleOperation {
    public static let name = "show"
    public static let isQuick = true
    public var backupId: String

    public init(backupId: String) { self.backupId = backupId }

    public func run(_ context: any OperationContext) async throws(ConsoleError) -> BackupReport {
        try await BackupInspector(store: try await context.store(), clock: context.clock).show(
            backupId: backupId, session: try context.session())
    }
}

/// `check [BACKUP_ID]`: health checks over one backup or the whole tenant (a long job).
public struct CheckOperation: ConsoleOperation {
    public static let name = "check"
    public static let streams = true
    public var backupId: String?
    public var filter: FindingFilter
    public var limit: Int
    /// `--turnkey`: also read each backup's sub-org from Turnkey (the live checks).
    public var turnkey: Bool?

    public init(backupId: String?, filter: FindingFilter, limit: Int, turnkey: Bool = false) {
        self.backupId = backupId
        self.filter = filter
        self.limit = limit
        self.turnkey = turnkey
    }

    public func run(_ context: any OperationContext) async throws(ConsoleError) -> CheckReport {
        guard (1...100_000).contains(limit) else {
            throw ConsoleError.invalid("invalid_limit", "--limit must be between 1 and 100000, got \(limit).")
        }
        var scan = HealthScan(store: try await context.store())
        scan.findingLimit = limit
        scan.filter = filter
        let onProgress: ((Int) throws(ConsoleError) -> Void)? =
            backupId == nil ? { done throws(ConsoleError) in try context.progress(ProgressEvent(done: done)) } : nil
        let session = try await context.session()
        var crossCheck: TurnkeyCrossCheck?
        if turnkey == true {
            try await session.require(.check)
            let (client, signer) = try await context.cleanupService(session).reader(session)
            crossCheck = TurnkeyCrossCheck(store: try await context.store(), client: client, signer: signer)
        }
        return try await scan.check(backupId: backupId, session: session, progress: onProgress, turnkey: crossCheck)
    }
}

/// `stats`: the tenant by factor mix, devices, blob sizes and sub-orgs.
public struct StatsOperation: ConsoleOperation {
    public static let name = "stats"

    public init() {}

    public func run(_ context: any OperationContext) async throws(ConsoleError) -> TenantStats {
        try await StatsService(store: try await context.store(), clock: context.clock).stats(
            session: try context.session())
    }
}

/// `backups list`: backups by factor kind, health and age.
public struct BackupsListOperation: ConsoleOperation {
    public static let name = "backups.list"
    public var query: BackupList.Query

    public init(_ query: BackupList.Query) { self.query = query }

    public func run(_ context: any OperationContext) async throws(ConsoleError) -> BackupList.Listing {
        let clock = context.clock
        return try await BackupList(store: try await context.store(), now: { clock.seconds }).list(
            query, session: try context.session())
    }
}

/// `whoami`: the operator, the chosen tenant and every grant.
public struct WhoamiOperation: ConsoleOperation {
    public static let name = "whoami"
    public static let isQuick = true

    public struct Output: Codable, Sendable, Equatable {
        public var `operator`: String
        public var tenant: String?
        public var role: String?
        public var canCreateTenants: Bool
        public var grants: [[String: String]]
    }

    public init() {}

    public func run(_ context: any OperationContext) async throws(ConsoleError) -> Output {
        let op = try await context.operatorRecord()
        let visible = try await context.access.tenants(visibleTo: op)
        // A tenant asked for (--tenant, use, $BACKUPCTL_TENANT) must be one the operator holds;
        // without one, whoami still answers for an operator with several tenants.
        let current = await context.caller.tenant != nil ? try context.session() : try? context.session()
        return Output(
            operator: op.name.rawValue, tenant: current?.tenantName.rawValue, role: current?.role.name,
            canCreateTenants: op.canCreateTenants,
            grants: visible.map { ["tenant": $0.0.name.rawValue, "role": $0.1.name] })
    }
}

/// `use TENANT`: checks the caller holds a role there (the choice itself is the client's).
public struct UseOperation: ConsoleOperation {
    public static let name = "use"
    public static let isQuick = true
    public var tenant: String

    public struct Output: Codable, Sendable, Equatable {
        public var tenant: String
        public var role: String
    }

    public init(tenant: String) { self.tenant = tenant }

    public func run(_ context: any OperationContext) async throws(ConsoleError) -> Output {
        let name = try TenantName(tenant)
        var caller = context.caller
        caller.tenant = name.rawValue
        let session = try await context.session(as: caller)
        return Output(tenant: name.rawValue, role: session.role.name)
    }
}

/// Backup ids starting with a prefix (the REPL's Tab completion); not audited, like the
/// resolver that turns a prefix into one id before `show` audits the read.
public struct BackupIdsOperation: ConsoleOperation {
    public static let name = "backups.ids"
    public static let isQuick = true
    public var prefix: String
    public var limit: Int

    public struct Output: Codable, Sendable, Equatable {
        public var backupIds: [String]
    }

    public init(prefix: String, limit: Int) {
        self.prefix = prefix
        self.limit = limit
    }

    public func run(_ context: any OperationContext) async throws(ConsoleError) -> Output {
        let session = try await context.session()
        try await session.require(.lookup)
        return Output(
            backupIds: try await context.store().backupIds(
                tenant: session.tenantName, prefix: prefix, limit: min(limit, 200))
        )
    }
}
