import BackupModel
import ConsoleStore

/// Who may change whom. A tenant admin manages its tenant's operators, but never a global
/// operator (one with `tenants:create`, which the tenant cannot give back), and never leaves
/// the tenant without an admin. The global right itself is granted and revoked by those who
/// hold it, and its last holder keeps it.
extension AccessService {
    /// The one global right.
    public static let tenantsCreate = "tenants:create"

    /// `operator grant|revoke NAME --right tenants:create`, by a holder of the right.
    /// - Throws: `permission_denied` (audited) for a caller without it; `not_found`;
    ///   `last_tenant_creator` when it would leave nobody who may create tenants.
    public func setTenantCreation(_ name: OperatorName, allowed: Bool, by op: OperatorRecord) async throws(ConsoleError)
    {
        let verb = allowed ? "grant" : "revoke"
        guard op.canCreateTenants else {
            let error = ConsoleError(
                .permissionDenied, code: "permission_denied",
                "Operator \(op.name) does not hold \(Self.tenantsCreate), so it cannot \(verb) it.")
            await AccessDenial.record(
                error, operatorName: op.name.rawValue, tenant: nil, command: "operator \(verb) --right",
                details: ["operator": name.rawValue], store: store)
            throw error
        }
        guard let target = try await store.operatorRecord(named: name) else {
            throw ConsoleError.notFound("Operator \(name) does not exist.")
        }
        if !allowed, target.canCreateTenants,
            try await store.operators().filter({ $0.canCreateTenants && $0.name != name }).isEmpty
        {
            throw ConsoleError(
                .conflict, code: "last_tenant_creator",
                "Operator \(name) is the only one who may create tenants; grant \(Self.tenantsCreate) to another first."
            )
        }
        guard
            try await store.setCanCreateTenants(
                name, allowed,
                audit: AuditDraft(
                    operatorName: op.name.rawValue, tenant: nil, action: "operator.\(verb)_right",
                    target: name.rawValue,
                    details: ["right": Self.tenantsCreate]))
        else { throw ConsoleError.notFound("Operator \(name) does not exist.") }
    }

    /// Refuses a change to `target`'s roles or token by a caller who is not global when the
    /// target is (audited as a refusal).
    func protectGlobalOperator(_ target: OperatorRecord, session: Session, command: String) async throws(ConsoleError) {
        guard target.canCreateTenants, target.name != session.operatorName else { return }
        guard try await store.operatorRecord(named: session.operatorName)?.canCreateTenants != true else { return }
        let error = ConsoleError(
            .permissionDenied, code: "permission_denied",
            "Operator \(target.name) holds \(Self.tenantsCreate) (a global operator); only another global operator can \(command) it."
        )
        await AccessDenial.record(
            error, operatorName: session.operatorName.rawValue, tenant: session.tenantName.rawValue,
            command: "operator \(command)", details: ["operator": target.name.rawValue], store: store)
        throw error
    }

    /// Refuses to take the admin role from the tenant's last admin (`role` is the new role,
    /// `nil` for a revoke), the caller included.
    func protectLastAdmin(_ name: OperatorName, becoming role: Role?, session: Session) async throws(ConsoleError) {
        guard role != .admin else { return }
        let grants = try await store.grants(tenant: session.tenantName)
        guard grants.contains(where: { $0.operatorName == name && $0.role == .admin }),
            !grants.contains(where: { $0.operatorName != name && $0.role == .admin })
        else { return }
        throw ConsoleError(
            .conflict, code: "last_admin",
            "Operator \(name) is the last admin of tenant \(session.tenantName); make another admin first.")
    }
}

extension AccessService {
    /// `tenant update NAME --turnkey-url URL --turnkey-api-key-file PATH --cleanup-key-file PATH`:
    /// rotates a live tenant's Turnkey credentials (each option left out keeps its value). The
    /// files are paths on the console's host, so this takes the tenant's admin role *and*
    /// `tenants:create`, as creating the tenant did: a tenant admin alone could otherwise point
    /// its tenant at another tenant's key file. `preflight` checks the new set (the key files,
    /// the URL, Turnkey's `whoami`) before anything is saved.
    /// - Returns: the tenant as saved.
    public func setTurnkeyCredentials(
        url: String?, apiKeyFile: String?, cleanupKeyFile: String?, session: Session, by op: OperatorRecord,
        preflight: @Sendable (TenantRecord) async throws(ConsoleError) -> Void
    ) async throws(ConsoleError) -> TenantRecord {
        try await session.require(.updateTenant)
        guard op.canCreateTenants else {
            let error = ConsoleError(
                .permissionDenied, code: "permission_denied",
                "A tenant's Turnkey credentials name key files on the server; changing them takes \(Self.tenantsCreate), as creating the tenant did."
            )
            await AccessDenial.record(
                error, operatorName: op.name.rawValue, tenant: session.tenantName.rawValue, command: "tenant update",
                store: store)
            throw error
        }
        var tenant = session.tenant
        guard !tenant.isSandbox, let current = tenant.turnkeyURL, let currentKey = tenant.turnkeyAPIKeyFile else {
            throw .invalid(
                "invalid_tenant_kind",
                "Tenant \(session.tenantName) is a sandbox: it always uses the in-process Turnkey.")
        }
        guard let store = store as? any LiveTenantStore else {
            throw .internalError("This store does not support live tenants.")
        }
        tenant.turnkeyURL = url ?? current
        tenant.turnkeyAPIKeyFile = apiKeyFile ?? currentKey
        tenant.cleanupKeyFile = cleanupKeyFile ?? tenant.cleanupKeyFile
        try await preflight(tenant)
        let newURL = tenant.turnkeyURL ?? current
        let newKey = tenant.turnkeyAPIKeyFile ?? currentKey
        try await store.setTurnkeyCredentials(
            tenant: tenant.name, url: newURL, apiKeyFile: newKey, cleanupKeyFile: tenant.cleanupKeyFile,
            audit: session.audit(
                "tenant.update", target: tenant.name.rawValue,
                details: [
                    "turnkeyURL": newURL, "turnkeyAPIKeyFile": newKey,
                    "cleanupKeyFile": tenant.cleanupKeyFile ?? "none",
                ]))
        return tenant
    }
}
