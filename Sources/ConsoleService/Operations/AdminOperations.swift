import Access
import BackupModel
import ConsoleStore
import Foundation
import Turnkey

/// `tenant create`: a sandbox, or a live deployment saved only once Turnkey accepts its URL,
/// parent org and API key and its Backup Service answers `/health` (checked from here, the
/// console that will use them).
public struct TenantCreateOperation: ConsoleOperation {
    public static let name = "tenant.create"
    /// The live checks can take seconds; their progress is shown.
    public static let streams = true
    public var spec: TenantSpec

    public struct Output: Codable, Sendable, Equatable {
        public var tenant: String
        public var sandbox: Bool
        public var role: String
    }

    public init(_ spec: TenantSpec) { self.spec = spec }

    public func run(_ context: OperationContext) async throws(ConsoleError) -> Output {
        let record = try spec.record(createdAt: context.clock.seconds)
        try await context.access.createTenant(record, by: try context.operatorRecord()) {
            tenant throws(ConsoleError) in
            guard !tenant.isSandbox, let url = tenant.turnkeyURL, let org = tenant.turnkeyOrgId,
                let keyFile = tenant.turnkeyAPIKeyFile
            else { return }
            if let service = tenant.backupServiceURL {
                try context.progress(ProgressEvent(done: 0, detail: "checking the Backup Service"))
                try await BackupServiceHealth.check(service)
            }
            try context.progress(ProgressEvent(done: 0, detail: "checking Turnkey"))
            _ = try await TurnkeyClient.verifyTenant(url: url, organizationId: org, apiKeyFile: keyFile)
        }
        return Output(tenant: record.name.rawValue, sandbox: record.isSandbox, role: Role.admin.name)
    }
}

/// `tenant update NAME --backup-service-url URL | --clear-backup-service-url`.
public struct TenantUpdateOperation: ConsoleOperation {
    public static let name = "tenant.update"
    public var tenant: String
    /// The new URL; `nil` clears it.
    public var backupServiceURL: String?

    public struct Output: Codable, Sendable, Equatable {
        public var tenant: String
        public var backupServiceUrl: String
    }

    public init(tenant: String, backupServiceURL: String?) {
        self.tenant = tenant
        self.backupServiceURL = backupServiceURL
    }

    public func run(_ context: OperationContext) async throws(ConsoleError) -> Output {
        let url = try backupServiceURL.map { (text) throws(ConsoleError) in try TenantSpec.serviceURL(text) }
        let session = try await context.session(in: tenant)
        try await context.access.setBackupServiceURL(url, session: session) { url throws(ConsoleError) in
            try await BackupServiceHealth.check(url)
        }
        return Output(tenant: tenant, backupServiceUrl: url ?? "")
    }
}

/// `tenant update NAME --retire-max-percent P --retire-max-count N`: how much of the tenant a
/// complete snapshot may retire without `import --retire-at-most` (a separate operation from
/// ``TenantUpdateOperation``, whose absent URL means "clear": a server that predates this one
/// answers an unknown operation rather than clearing the URL).
public struct TenantRetireThresholdOperation: ConsoleOperation {
    public static let name = "tenant.retireThreshold"
    public var tenant: String
    /// `nil`: unchanged.
    public var retireMaxPercent: Int?
    public var retireMaxCount: Int?

    public struct Output: Codable, Sendable, Equatable {
        public var tenant: String
        public var retireMaxPercent: Int
        public var retireMaxCount: Int
    }

    public init(tenant: String, retireMaxPercent: Int?, retireMaxCount: Int?) {
        self.tenant = tenant
        self.retireMaxPercent = retireMaxPercent
        self.retireMaxCount = retireMaxCount
    }

    public func run(_ context: OperationContext) async throws(ConsoleError) -> Output {
        let session = try await context.session(in: tenant)
        let policy = try await context.access.setRetireThreshold(
            maxPercent: retireMaxPercent, maxCount: retireMaxCount, session: session)
        return Output(tenant: tenant, retireMaxPercent: policy.retireMaxPercent, retireMaxCount: policy.retireMaxCount)
    }
}

/// `tenant list`: the caller's tenants. Key files are never named: they are the server's.
public struct TenantListOperation: ConsoleOperation {
    public static let name = "tenant.list"

    public struct Row: Codable, Sendable, Equatable {
        public var name: String
        public var sandbox: Bool
        public var role: String
        public var turnkeyOrg: String?
        public var backupServiceUrl: String?
        /// Whether the tenant has a Turnkey API key / a cleanup key file; never where it is.
        public var turnkeyApiKey: Bool
        public var cleanupKey: Bool
        /// The retire threshold (``TenantPolicy/retireMaxPercent``, ``TenantPolicy/retireMaxCount``);
        /// absent from a server that predates it.
        public var retireMaxPercent: Int?
        public var retireMaxCount: Int?
    }

    public struct Output: Codable, Sendable, Equatable {
        public var tenants: [Row]
    }

    public init() {}

    public func run(_ context: OperationContext) async throws(ConsoleError) -> Output {
        Output(
            tenants: try await context.access.tenants(visibleTo: try context.operatorRecord()).map {
                Row(
                    name: $0.0.name.rawValue, sandbox: $0.0.isSandbox, role: $0.1.name, turnkeyOrg: $0.0.turnkeyOrgId,
                    backupServiceUrl: $0.0.backupServiceURL, turnkeyApiKey: $0.0.turnkeyAPIKeyFile != nil,
                    cleanupKey: $0.0.cleanupKeyFile != nil, retireMaxPercent: $0.0.policy.retireMaxPercent,
                    retireMaxCount: $0.0.policy.retireMaxCount)
            })
    }
}

/// `tenant delete NAME`. With `checkOnly` it only checks the caller may (the client asks for
/// confirmation in between, so a refusal never waits for one).
public struct TenantDeleteOperation: ConsoleOperation {
    public static let name = "tenant.delete"
    public var tenant: String
    public var checkOnly: Bool

    public struct Output: Codable, Sendable, Equatable {
        public var tenant: String
        public var deleted: Bool
        public var backups: Int
    }

    public init(tenant: String, checkOnly: Bool) {
        self.tenant = tenant
        self.checkOnly = checkOnly
    }

    public func run(_ context: OperationContext) async throws(ConsoleError) -> Output {
        let name = try TenantName(tenant)
        let session = try await context.session(in: name.rawValue)
        try await session.require(.manageOperators)
        guard !checkOnly else { return Output(tenant: name.rawValue, deleted: false, backups: 0) }
        let backups = try await context.access.deleteTenant(session: session)
        context.console.forgetSessions()
        return Output(tenant: name.rawValue, deleted: true, backups: backups)
    }
}

/// `operator add NAME --tenant T --role R`: the new operator's token travels back once.
public struct OperatorAddOperation: ConsoleOperation {
    public static let name = "operator.add"
    public var operatorName: String
    public var tenant: String
    /// By name on the wire (`viewer` …); an unknown name is `invalid_role`.
    public var role: String

    public struct Output: Codable, Sendable, Equatable {
        public var `operator`: String
        public var tenant: String
        public var role: String
        /// Shown once; the store keeps only its hash.
        public var token: String
    }

    public init(operatorName: String, tenant: String, role: Role) {
        self.operatorName = operatorName
        self.tenant = tenant
        self.role = role.name
    }

    public func run(_ context: OperationContext) async throws(ConsoleError) -> Output {
        let name = try OperatorName(operatorName)
        let role = try Role(name: role)
        let token = try await context.access.addOperator(name, role: role, session: try context.session(in: tenant))
        return Output(
            operator: name.rawValue, tenant: tenant, role: role.name,
            token: token.withUnsafeBytes { String(decoding: $0, as: UTF8.self) })
    }
}

/// `operator grant|revoke NAME --tenant T [--role R]`; `role == nil` revokes.
public struct OperatorGrantOperation: ConsoleOperation {
    public static let name = "operator.grant"
    public var operatorName: String
    public var tenant: String
    /// By name on the wire; `nil` revokes.
    public var role: String?

    public struct Output: Codable, Sendable, Equatable {
        public var `operator`: String
        public var tenant: String
        public var role: String?
    }

    public init(operatorName: String, tenant: String, role: Role?) {
        self.operatorName = operatorName
        self.tenant = tenant
        self.role = role?.name
    }

    public func run(_ context: OperationContext) async throws(ConsoleError) -> Output {
        let name = try OperatorName(operatorName)
        let role = try role.map { (text) throws(ConsoleError) in try Role(name: text) }
        let session = try await context.session(in: tenant)
        if let role {
            try await context.access.grant(name, role: role, session: session)
        } else {
            try await context.access.revoke(name, session: session)
        }
        // A role changed here must not live on in this process's session cache.
        context.console.forgetSessions()
        return Output(operator: name.rawValue, tenant: tenant, role: role?.name)
    }
}

/// `operator list`: operators with a role in the current tenant.
public struct OperatorListOperation: ConsoleOperation {
    public static let name = "operator.list"

    public struct Output: Codable, Sendable, Equatable {
        public var tenant: String
        public var operators: [[String: String]]
    }

    public init() {}

    public func run(_ context: OperationContext) async throws(ConsoleError) -> Output {
        let session = try await context.session()
        let grants = try await context.access.operators(session: session)
        return Output(
            tenant: session.tenantName.rawValue,
            operators: grants.map { ["operator": $0.operatorName.rawValue, "role": $0.role.name] })
    }
}

/// `operator remove NAME`. With `checkOnly` it only resolves the tenant the removal is
/// confirmed against (the client asks in between).
public struct OperatorRemoveOperation: ConsoleOperation {
    public static let name = "operator.remove"
    public var operatorName: String
    public var checkOnly: Bool

    public struct Output: Codable, Sendable, Equatable {
        public var `operator`: String
        public var tenant: String
        public var removed: Bool
    }

    public init(operatorName: String, checkOnly: Bool) {
        self.operatorName = operatorName
        self.checkOnly = checkOnly
    }

    public func run(_ context: OperationContext) async throws(ConsoleError) -> Output {
        let name = try OperatorName(operatorName)
        let session = try await context.session()
        guard !checkOnly else {
            return Output(operator: name.rawValue, tenant: session.tenantName.rawValue, removed: false)
        }
        try await context.access.removeOperator(name, session: session)
        context.console.forgetSessions()
        return Output(operator: name.rawValue, tenant: session.tenantName.rawValue, removed: true)
    }
}

/// `operator token rotate NAME`: the new token travels back once; the old one stops at once.
public struct OperatorTokenRotateOperation: ConsoleOperation {
    public static let name = "operator.token.rotate"
    public var operatorName: String

    public struct Output: Codable, Sendable, Equatable {
        public var `operator`: String
        public var token: String
    }

    public init(operatorName: String) { self.operatorName = operatorName }

    public func run(_ context: OperationContext) async throws(ConsoleError) -> Output {
        let name = try OperatorName(operatorName)
        let token = try await context.access.rotateToken(name, session: try context.session())
        context.console.forgetSessions()
        return Output(operator: name.rawValue, token: token.withUnsafeBytes { String(decoding: $0, as: UTF8.self) })
    }
}

/// `import DIR`: a Backup Service export, read where the console runs (the server's disk,
/// when there is one). A long job: progress per backup directory; cancellable between batches.
public struct ImportOperation: ConsoleOperation {
    public static let name = "import"
    public static let streams = true
    public var directory: String
    public var dryRun: Bool
    public var snapshotAt: String?
    public var complete: Bool
    /// `--retire-at-most N`: the operator's confirmation that a complete snapshot may retire up
    /// to N backups, beyond the tenant's allowance.
    public var retireAtMost: Int?

    public init(directory: String, dryRun: Bool, snapshotAt: String?, complete: Bool, retireAtMost: Int? = nil) {
        self.directory = directory
        self.dryRun = dryRun
        self.snapshotAt = snapshotAt
        self.complete = complete
        self.retireAtMost = retireAtMost
    }

    public func run(_ context: OperationContext) async throws(ConsoleError) -> ImportReport {
        let session = try await context.session()
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        let total = entries.filter { $0 != "factor_lookup.jsonl" && $0 != SnapshotManifest.fileName }.count
        return try await DataAdminService(store: try await context.store(), clock: context.clock).importExport(
            directory: directory, dryRun: dryRun, session: session, snapshotAt: snapshotAt, complete: complete,
            retireAtMost: retireAtMost,
            progress: { done throws(ConsoleError) in try context.progress(ProgressEvent(done: done, total: total)) })
    }
}

/// `seed --backups N`: synthetic backups for a sandbox tenant (a long job).
public struct SeedOperation: ConsoleOperation {
    public static let name = "seed"
    public static let streams = true
    public var backups: Int
    public var orphans: Int
    public var seed: UInt64

    public init(backups: Int, orphans: Int, seed: UInt64) {
        self.backups = backups
        self.orphans = orphans
        self.seed = seed
    }

    public func run(_ context: OperationContext) async throws(ConsoleError) -> SeedReport {
        let total = backups
        return try await DataAdminService(store: try await context.store(), clock: context.clock).seed(
            backups: backups, orphans: orphans, seed: seed, session: try context.session(),
            progress: { done throws(ConsoleError) in try context.progress(ProgressEvent(done: done, total: total)) })
    }
}

extension OperationContext {
    /// The caller's session in `tenant` (named by the command, not the one chosen with `use`).
    public func session(in tenant: String) async throws(ConsoleError) -> Session {
        var caller = caller
        caller.tenant = try TenantName(tenant).rawValue
        return try await console.session(caller)
    }
}
