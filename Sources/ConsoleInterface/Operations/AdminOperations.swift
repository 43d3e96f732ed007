import Access
import BackupModel
import ConsoleStore
import Foundation
import Turnkey

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

    public func run(_ context: any OperationContext) async throws(ConsoleError) -> Output {
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

    public func run(_ context: any OperationContext) async throws(ConsoleError) -> Output {
        let name = try OperatorName(operatorName)
        let role = try role.map { (text) throws(ConsoleError) in try Role(name: text) }
        let session = try await context.session(in: tenant)
        if let role {
            try await context.access.grant(name, role: role, session: session)
        } else {
            try await context.access.revoke(name, session: session)
        }
        // A role changed here must not live on in this process's session cache.
        context.forgetSessions()
        return Output(operator: name.rawValue, tenant: tenant, role: role?.name)
    }
}

/// `operator grant|revoke NAME --right tenants:create`: the global right to create tenants,
/// given or taken by an operator who holds it.
public struct OperatorRightOperation: ConsoleOperation {
    public static let name = "operator.right"
    public var operatorName: String
    public var right: String
    public var allowed: Bool

    public struct Output: Codable, Sendable, Equatable {
        public var `operator`: String
        public var right: String
        public var granted: Bool
    }

    public init(operatorName: String, right: String, allowed: Bool) {
        self.operatorName = operatorName
        self.right = right
        self.allowed = allowed
    }

    public func run(_ context: any OperationContext) async throws(ConsoleError) -> Output {
        let name = try OperatorName(operatorName)
        guard right == AccessService.tenantsCreate else {
            throw .usage(
                "--right must be \(AccessService.tenantsCreate), got \(SecretShape.excerpt(right, limit: 40)).")
        }
        try await context.access.setTenantCreation(name, allowed: allowed, by: try context.operatorRecord())
        context.forgetSessions()
        return Output(operator: name.rawValue, right: right, granted: allowed)
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

    public func run(_ context: any OperationContext) async throws(ConsoleError) -> Output {
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

    public func run(_ context: any OperationContext) async throws(ConsoleError) -> Output {
        let name = try OperatorName(operatorName)
        let session = try await OperatorTokenRotateOperation.session(managing: name, context)
        guard !checkOnly else {
            return Output(operator: name.rawValue, tenant: session.tenantName.rawValue, removed: false)
        }
        try await context.access.removeOperator(name, session: session)
        context.forgetSessions()
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

    public func run(_ context: any OperationContext) async throws(ConsoleError) -> Output {
        let name = try OperatorName(operatorName)
        let token = try await context.access.rotateToken(name, session: try await Self.session(managing: name, context))
        context.forgetSessions()
        return Output(operator: name.rawValue, token: token.withUnsafeBytes { String(decoding: $0, as: UTF8.self) })
    }

    /// The caller's session for acting on operator `name`: the chosen tenant, or, when an
    /// operator with several tenants chose none, one where the caller may act on `name` (these
    /// commands are about the operator, not a tenant; the rights are checked in every tenant).
    static func session(managing name: OperatorName, _ context: any OperationContext) async throws(ConsoleError)
        -> Session
    {
        do {
            return try await context.session()
        } catch  where error.code == "usage" && context.caller.tenant == nil {
            guard let tenant = try await context.access.tenantToManage(name, by: try await context.operatorRecord())
            else { throw error }
            return try await context.session(in: tenant.rawValue)
        }
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

    /// On a server the directory is the server's, below `--import-root/TENANT` only
    /// (``ServerPolicy/importDirectory(_:tenant:)``), checked after the role so that nobody
    /// but the tenant's admin learns anything of the server's disk.
    public func run(_ context: any OperationContext) async throws(ConsoleError) -> ImportReport {
        let session = try await context.session()
        try await session.require(.importBackups)
        let directory =
            try context.serverPolicy.map { (policy) throws(ConsoleError) in
                try policy.importDirectory(self.directory, tenant: session.tenantName)
            } ?? self.directory
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

    public func run(_ context: any OperationContext) async throws(ConsoleError) -> SeedReport {
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
        return try await session(as: caller)
    }
}
