import BackupCrypto
import BackupModel
import ConsoleStore

/// Operator and tenant lifecycle: token rotation, removal, tenant deletion, audit reading.
extension AccessService {
    /// `operator token rotate NAME`: a new token for NAME; the old one stops working in the same
    /// transaction. Anyone may rotate their own token; another operator's needs the admin role
    /// in every tenant where that operator has a role (and at least one of them: this one).
    /// Returns the new token, shown once.
    public func rotateToken(_ name: OperatorName, session: Session) async throws(ConsoleError) -> SecretBytes {
        if name != session.operatorName { try await requireAdminOver(name, session: session, command: "token rotate") }
        let token = OperatorToken.generate(using: random)
        guard
            try await store.replaceOperatorToken(
                name, tokenHash: OperatorToken.hash(token),
                audit: session.audit("operator.token_rotate", target: name.rawValue))
        else { throw ConsoleError.notFound("Operator \(name) does not exist.") }
        return token
    }

    /// `operator remove NAME`: the operator and all its grants; its token stops working.
    /// Needs the admin role in every tenant where NAME has a role; never yourself.
    public func removeOperator(_ name: OperatorName, session: Session) async throws(ConsoleError) {
        guard name != session.operatorName else {
            throw ConsoleError.invalid(
                "cannot_remove_self", "You cannot remove yourself; another admin can, or rotate your token instead.")
        }
        let target = try await requireAdminOver(name, session: session, command: "remove")
        if target.canCreateTenants,
            try await store.operators().filter({ $0.canCreateTenants && $0.name != name }).isEmpty
        {
            throw ConsoleError(
                .conflict, code: "last_tenant_creator",
                "Operator \(name) is the only one who may create tenants; it cannot be removed.")
        }
        guard try await store.removeOperator(name, audit: session.audit("operator.remove", target: name.rawValue))
        else {
            throw ConsoleError.notFound("Operator \(name) does not exist.")
        }
    }

    /// `tenant delete NAME`: the tenant and everything the console holds for it, in one
    /// transaction. Needs the admin role in that tenant. Returns how many backups went.
    public func deleteTenant(session: Session) async throws(ConsoleError) -> Int {
        try await session.require(.manageOperators)
        let name = session.tenantName
        guard
            let removed = try await store.deleteTenant(
                name,
                audit: CountedAuditDraft(session.audit("tenant.delete", target: name.rawValue), countKey: "backups"))
        else { throw ConsoleError.notFound("Tenant \(name) does not exist.") }
        return removed
    }

    /// The tenant to act in on `name` (`operator token rotate`, `operator remove`) when the
    /// caller chose none: for the caller's own token any of its tenants, otherwise the first
    /// (by name) where `name` has a role and the caller is admin; `nil` when there is none.
    public func tenantToManage(_ name: OperatorName, by op: OperatorRecord) async throws(ConsoleError) -> TenantName? {
        let mine = try await store.grants(operator: op.name)
        if name == op.name { return mine.map(\.tenant).min { $0.rawValue < $1.rawValue } }
        let administered = Set(mine.filter { $0.role == .admin }.map(\.tenant.rawValue))
        return try await store.grants(operator: name).map(\.tenant).filter { administered.contains($0.rawValue) }
            .min { $0.rawValue < $1.rawValue }
    }

    /// The target operator, after checking the session may manage it: admin here, the target
    /// has a role here, and the session's operator is admin wherever the target has a role.
    @discardableResult
    private func requireAdminOver(_ name: OperatorName, session: Session, command: String) async throws(ConsoleError)
        -> OperatorRecord
    {
        try await session.require(.manageOperators)
        guard let target = try await store.operatorRecord(named: name) else {
            throw ConsoleError.notFound("Operator \(name) does not exist.")
        }
        let theirs = try await store.grants(operator: name)
        guard theirs.contains(where: { $0.tenant == session.tenantName }) else {
            throw ConsoleError.notFound("Operator \(name) has no role in tenant \(session.tenantName).")
        }
        try await protectGlobalOperator(target, session: session, command: "change")
        let mine = await Dictionary(
            try store.grants(operator: session.operatorName).map { ($0.tenant, $0.role) }, uniquingKeysWith: max)
        // Audited as a refusal; the message names no tenant the caller does not hold.
        let outside = theirs.filter { mine[$0.tenant] != .admin }
        if !outside.isEmpty {
            let error = ConsoleError(
                .permissionDenied, code: "permission_denied",
                "Operator \(name) also has roles in \(outside.count) tenant(s) where you are not admin; only an admin of all of its tenants can \(command) it."
            )
            await AccessDenial.record(
                error, operatorName: session.operatorName.rawValue, tenant: session.tenantName.rawValue,
                command: "operator \(command)", details: ["operator": name.rawValue], store: store)
            throw error
        }
        return target
    }
}
