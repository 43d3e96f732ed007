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

    public func run(_ context: any OperationContext) async throws(ConsoleError) -> Output {
        let creator = try await context.operatorRecord()
        // The right first: key files and URLs are looked at only for who may create tenants.
        try await context.access.checkCreate(try TenantName(spec.name), by: creator)
        let record = try spec.record(createdAt: context.clock.seconds, policy: context.serverPolicy)
        try await context.access.createTenant(record, by: creator) {
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

    public func run(_ context: any OperationContext) async throws(ConsoleError) -> Output {
        let session = try await context.session(in: tenant)
        let policy = context.serverPolicy
        // The URL is looked at only after the role and the tenant's kind were checked.
        let url = try await context.access.setBackupServiceURL(backupServiceURL, session: session) {
            text throws(ConsoleError) in
            let url = try TenantSpec.serviceURL(text, policy: policy)
            try await BackupServiceHealth.check(url)
            return url
        }
        return Output(tenant: tenant, backupServiceUrl: url ?? "")
    }
}

/// `tenant update NAME --turnkey-url URL --turnkey-api-key-file PATH --cleanup-key-file PATH`:
/// a leaked Turnkey key is rotated in place. The new set is checked as `tenant create` checks it
/// (key files owner-only P-256 keys on the console's host, the URL's rules, Turnkey's `whoami`
/// with the API key naming the tenant's organization) before it is saved and audited.
public struct TenantTurnkeyUpdateOperation: ConsoleOperation {
    public static let name = "tenant.update_turnkey"
    public static let streams = true
    public var tenant: String
    public var turnkeyURL: String?
    public var apiKeyFile: String?
    public var cleanupKeyFile: String?

    public struct Output: Codable, Sendable, Equatable {
        public var tenant: String
        public var turnkeyUrl: String
        public var turnkeyApiKey: Bool
        public var cleanupKey: Bool
    }

    public init(tenant: String, turnkeyURL: String?, apiKeyFile: String?, cleanupKeyFile: String?) {
        self.tenant = tenant
        self.turnkeyURL = turnkeyURL
        self.apiKeyFile = apiKeyFile
        self.cleanupKeyFile = cleanupKeyFile
    }

    public func run(_ context: any OperationContext) async throws(ConsoleError) -> Output {
        guard turnkeyURL != nil || apiKeyFile != nil || cleanupKeyFile != nil else {
            throw .usage("Give --turnkey-url, --turnkey-api-key-file or --cleanup-key-file.")
        }
        let session = try await context.session(in: tenant)
        let policy = context.serverPolicy
        let saved = try await context.access.setTurnkeyCredentials(
            url: turnkeyURL, apiKeyFile: apiKeyFile.map(TenantSpec.absolute),
            cleanupKeyFile: cleanupKeyFile.map(TenantSpec.absolute), session: session,
            by: try context.operatorRecord()
        ) { tenant throws(ConsoleError) in
            guard let url = tenant.turnkeyURL, let key = tenant.turnkeyAPIKeyFile, let org = tenant.turnkeyOrgId else {
                throw .invalid("not_configured", "Tenant \(tenant.name) has no Turnkey organization.")
            }
            try TenantSpec.checkKeyFile(key, option: "--turnkey-api-key-file")
            if let cleanup = tenant.cleanupKeyFile {
                try TenantSpec.checkKeyFile(cleanup, option: "--cleanup-key-file")
            }
            do throws(ConsoleError) {
                _ = try OutboundTarget.check(url, option: "--turnkey-url", policy: policy)
            } catch  where error.code == "invalid_url" {
                throw .invalid("invalid_turnkey_url", error.message)
            }
            try context.progress(ProgressEvent(done: 0, detail: "checking Turnkey"))
            _ = try await TurnkeyClient.verifyTenant(url: url, organizationId: org, apiKeyFile: key)
        }
        return Output(
            tenant: tenant, turnkeyUrl: saved.turnkeyURL ?? "", turnkeyApiKey: saved.turnkeyAPIKeyFile != nil,
            cleanupKey: saved.cleanupKeyFile != nil)
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

    public func run(_ context: any OperationContext) async throws(ConsoleError) -> Output {
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

    public func run(_ context: any OperationContext) async throws(ConsoleError) -> Output {
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

    public func run(_ context: any OperationContext) async throws(ConsoleError) -> Output {
        let name = try TenantName(tenant)
        let session = try await context.session(in: name.rawValue)
        try await session.require(.manageOperators)
        guard !checkOnly else { return Output(tenant: name.rawValue, deleted: false, backups: 0) }
        let backups = try await context.access.deleteTenant(session: session)
        context.forgetSessions()
        return Output(tenant: name.rawValue, deleted: true, backups: backups)
    }
}
