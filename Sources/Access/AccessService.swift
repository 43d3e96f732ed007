import BackupCrypto
import BackupModel
import ConsoleStore

/// Credentials, sessions, operators, grants and tenants.
///
/// The one place that turns a token into an operator and an operator plus tenant into a
/// ``Session``. Every method that changes something appends an audit entry via the store.
public struct AccessService: Sendable {
    public static let defaultTenant = "sandbox"

    let store: any ConsoleStore
    let clock: WallClock
    let random: any RandomSource

    public init(store: any ConsoleStore, clock: WallClock = .system, random: any RandomSource = SystemRandom()) {
        self.store = store
        self.clock = clock
        self.random = random
    }

    /// `backupctl init --admin NAME`: the first operator, who may create tenants, admin of a
    /// fresh sandbox tenant. Refuses when any operator exists. Returns the token, shown once.
    public func bootstrap(admin name: OperatorName) async throws(ConsoleError) -> SecretBytes {
        guard try await store.operatorCount() == 0 else {
            throw ConsoleError(
                .conflict, code: "already_initialized",
                "This store already has operators; ask an admin for a token (operator add).")
        }
        let token = OperatorToken.generate(using: random)
        let now = clock.seconds
        let tenant = TenantRecord(
            name: try TenantName(Self.defaultTenant), isSandbox: true, createdAt: now)
        try await store.bootstrap(
            admin: OperatorRecord(name: name, canCreateTenants: true, createdAt: now),
            tokenHash: OperatorToken.hash(token), tenant: tenant,
            audit: AuditDraft(
                operatorName: name.rawValue, tenant: tenant.name.rawValue, action: "console.init",
                target: name.rawValue))
        return token
    }

    /// The operator a token belongs to.
    /// - Throws: `invalid_token` (exit 77) for an unknown token; the token is never echoed.
    public func authenticate(token: SecretBytes) async throws(ConsoleError) -> OperatorRecord {
        guard let op = try await store.operatorRecord(tokenHash: OperatorToken.hash(token)) else {
            throw ConsoleError(
                .permissionDenied, code: "invalid_token", "The operator token is not known to this store.")
        }
        return op
    }

    /// A session for `op` in `tenant`, with the role of its grant there.
    /// - Throws: `not_found` for an unknown tenant, `permission_denied` without a grant. The two
    ///   are told apart only for tenants the operator can see, so names do not leak.
    /// - Parameter command: what the operator tried, for the `access.denied` entry of a refusal
    ///   (the operation's name, e.g. `operator.grant`).
    public func session(operator op: OperatorRecord, tenant name: TenantName, command: String = "use tenant")
        async throws(ConsoleError) -> Session
    {
        let grant = try await store.grants(operator: op.name).first { $0.tenant == name }
        guard let grant else {
            let error = ConsoleError(
                .permissionDenied, code: "permission_denied",
                "Operator \(op.name) has no role in tenant \(name).")
            // Recorded under the tenant when it exists, so its admins see the attempt.
            let exists = try await store.tenant(name) != nil
            await AccessDenial.record(
                error, operatorName: op.name.rawValue, tenant: exists ? name.rawValue : nil, command: command,
                details: ["tenant": name.rawValue], store: store)
            throw error
        }
        guard let tenant = try await store.tenant(name) else {
            throw ConsoleError.notFound("Tenant \(name) does not exist.")
        }
        return Session(operatorName: op.name, tenant: tenant, role: grant.role, auditStore: store)
    }

    /// The tenants `op` holds a role in, with that role.
    public func tenants(visibleTo op: OperatorRecord) async throws(ConsoleError) -> [(TenantRecord, Role)] {
        let grants = try await store.grants(operator: op.name)
        var out: [(TenantRecord, Role)] = []
        for grant in grants.sorted(by: { $0.tenant < $1.tenant }) {
            if let tenant = try await store.tenant(grant.tenant) { out.append((tenant, grant.role)) }
        }
        return out
    }

    /// `tenant create`: only operators allowed to create tenants; the creator becomes its admin.
    ///
    /// `preflight` runs after the permission and name checks and before anything is written:
    /// for a live tenant it is the Turnkey check of URL, parent org and API key (Access sits
    /// beside Turnkey, not above it, so the caller supplies it).
    public func createTenant(
        _ tenant: TenantRecord, by op: OperatorRecord,
        preflight: @Sendable (TenantRecord) async throws(ConsoleError) -> Void
    ) async throws(ConsoleError) {
        try await checkCreate(tenant, by: op)
        try await preflight(tenant)
        try await createTenant(tenant, by: op)
    }

    /// `tenant create` without a remote check (sandbox tenants, tests).
    public func createTenant(_ tenant: TenantRecord, by op: OperatorRecord) async throws(ConsoleError) {
        try await checkCreate(tenant, by: op)
        let draft = AuditDraft(
            operatorName: op.name.rawValue, tenant: tenant.name.rawValue, action: "tenant.create",
            target: tenant.name.rawValue, details: ["sandbox": String(tenant.isSandbox)])
        try await store.createTenant(tenant, audit: draft)
        try await store.grant(
            GrantRecord(operatorName: op.name, tenant: tenant.name, role: .admin),
            audit: AuditDraft(
                operatorName: op.name.rawValue, tenant: tenant.name.rawValue, action: "operator.grant",
                target: op.name.rawValue, details: ["role": Role.admin.name]))
    }

    /// `tenant update NAME --backup-service-url URL`: points a live tenant at its Backup Service
    /// (admin of that tenant). `preflight` checks the URL (and that it answers) before anything
    /// is saved, and returns the form to save. Returns what was saved.
    /// - Throws: `permission_denied`; `invalid_tenant_kind` for a sandbox tenant, which always
    ///   uses the emulator; the preflight's error.
    @discardableResult
    public func setBackupServiceURL(
        _ requested: String?, session: Session, preflight: @Sendable (String) async throws(ConsoleError) -> String
    ) async throws(ConsoleError) -> String? {
        try await session.require(.updateTenant)
        guard !session.tenant.isSandbox else {
            throw .invalid(
                "invalid_tenant_kind",
                "Tenant \(session.tenantName) is a sandbox: it always uses the in-process Backup Service sandbox.")
        }
        guard let store = store as? any LiveTenantStore else {
            throw .internalError("This store does not support live tenants.")
        }
        var url: String?
        if let requested { url = try await preflight(requested) }
        try await store.setBackupServiceURL(
            tenant: session.tenantName, url: url,
            audit: session.audit(
                "tenant.update", target: session.tenantName.rawValue, details: ["backupServiceURL": url ?? "none"]))
        return url
    }

    /// The most backups an operator may let a snapshot retire without `--retire-at-most`.
    public static let maxRetireCount = 1_000_000_000

    /// `tenant update NAME --retire-max-percent P --retire-max-count N`: how much of the tenant a
    /// complete snapshot may retire without confirmation (``TenantPolicy/retireAllowance(of:)``);
    /// admin of that tenant, audited as `tenant.update`. A knob not given keeps its value.
    /// - Returns: the policy as written.
    /// - Throws: `permission_denied`; `invalid_retire_threshold` (nothing given, a percentage
    ///   outside 0…100 or a count outside 0…1,000,000,000) before anything changes.
    public func setRetireThreshold(maxPercent: Int?, maxCount: Int?, session: Session) async throws(ConsoleError)
        -> TenantPolicy
    {
        try await session.require(.updateTenant)
        guard maxPercent != nil || maxCount != nil else {
            throw .invalid("invalid_retire_threshold", "Give --retire-max-percent P, --retire-max-count N or both.")
        }
        if let maxPercent, !(0...100).contains(maxPercent) {
            throw .invalid("invalid_retire_threshold", "--retire-max-percent must be 0…100, got \(maxPercent).")
        }
        if let maxCount, !(0...Self.maxRetireCount).contains(maxCount) {
            throw .invalid(
                "invalid_retire_threshold", "--retire-max-count must be 0…\(Self.maxRetireCount), got \(maxCount).")
        }
        guard let store = store as? any LiveTenantStore else {
            throw .internalError("This store does not support tenant policies.")
        }
        var details: [String: String] = [:]
        if let maxPercent { details["retireMaxPercent"] = "\(maxPercent)" }
        if let maxCount { details["retireMaxCount"] = "\(maxCount)" }
        return try await store.updateTenantPolicy(
            tenant: session.tenantName,
            audit: session.audit("tenant.update", target: session.tenantName.rawValue, details: details)
        ) { policy in
            if let maxPercent { policy.retireMaxPercent = maxPercent }
            if let maxCount { policy.retireMaxCount = maxCount }
        }
    }

    private func checkCreate(_ tenant: TenantRecord, by op: OperatorRecord) async throws(ConsoleError) {
        try await checkCreate(tenant.name, by: op)
    }

    /// Whether `op` may create a tenant named `name` (audited when not): it holds
    /// `tenants:create`, and no tenant has that name.
    public func checkCreate(_ name: TenantName, by op: OperatorRecord) async throws(ConsoleError) {
        guard op.canCreateTenants else {
            let error = ConsoleError(
                .permissionDenied, code: "permission_denied",
                "Operator \(op.name) may not create tenants; an operator holding \(Self.tenantsCreate) can (or grant it: `operator grant \(op.name) --right \(Self.tenantsCreate)`)."
            )
            await AccessDenial.record(
                error, operatorName: op.name.rawValue, tenant: nil, command: "tenant create",
                details: ["tenant": name.rawValue], store: store)
            throw error
        }
        if try await store.tenant(name) != nil {
            throw ConsoleError(.conflict, code: "tenant_exists", "Tenant \(name) already exists.")
        }
    }

    /// `operator add NAME --tenant T --role R`: a new operator with a role in the session's
    /// tenant. Returns its token, shown once.
    public func addOperator(_ name: OperatorName, role: Role, session: Session) async throws(ConsoleError)
        -> SecretBytes
    {
        try await session.require(.manageOperators)
        if try await store.operatorRecord(named: name) != nil {
            throw ConsoleError(
                .conflict, code: "operator_exists",
                "Operator \(name) already exists; use operator grant to give it a role here.")
        }
        let token = OperatorToken.generate(using: random)
        try await store.addOperator(
            OperatorRecord(name: name, canCreateTenants: false, createdAt: clock.seconds),
            tokenHash: OperatorToken.hash(token),
            audit: session.audit("operator.add", target: name.rawValue))
        try await store.grant(
            GrantRecord(operatorName: name, tenant: session.tenantName, role: role),
            audit: session.audit("operator.grant", target: name.rawValue, details: ["role": role.name]))
        return token
    }

    public func grant(_ name: OperatorName, role: Role, session: Session) async throws(ConsoleError) {
        try await session.require(.manageOperators)
        guard let target = try await store.operatorRecord(named: name) else {
            throw ConsoleError.notFound("Operator \(name) does not exist.")
        }
        try await protectGlobalOperator(target, session: session, command: "grant")
        try await protectLastAdmin(name, becoming: role, session: session)
        try await store.grant(
            GrantRecord(operatorName: name, tenant: session.tenantName, role: role),
            audit: session.audit("operator.grant", target: name.rawValue, details: ["role": role.name]))
    }

    /// `operator revoke NAME --tenant T`. Never a global operator's role by a tenant admin,
    /// never the tenant's last admin (``protectLastAdmin(_:becoming:session:)``).
    public func revoke(_ name: OperatorName, session: Session) async throws(ConsoleError) {
        try await session.require(.manageOperators)
        if let target = try await store.operatorRecord(named: name) {
            try await protectGlobalOperator(target, session: session, command: "revoke")
        }
        try await protectLastAdmin(name, becoming: nil, session: session)
        guard
            try await store.revoke(
                operator: name, tenant: session.tenantName,
                audit: session.audit("operator.revoke", target: name.rawValue))
        else {
            throw ConsoleError.notFound("Operator \(name) has no role in tenant \(session.tenantName).")
        }
    }

    /// Operators with a role in the session's tenant.
    public func operators(session: Session) async throws(ConsoleError) -> [GrantRecord] {
        try await session.require(.manageOperators)
        return try await store.grants(tenant: session.tenantName).sorted { $0.operatorName < $1.operatorName }
    }
}
