import BackupModel
import ConsoleStore

/// Who is acting, in which tenant, with which role. Every service call takes one.
///
/// A session can only be made by ``AccessService/session(operator:tenant:)``, which reads the
/// grant from the store, so holding a session proves the grant existed when it was made.
public struct Session: Sendable, Equatable {
    public let operatorName: OperatorName
    public let tenant: TenantRecord
    public let role: Role
    /// Where a refused command is audited (set by ``AccessService``; `nil` in bare test sessions).
    let auditStore: (any ConsoleStore)?

    init(operatorName: OperatorName, tenant: TenantRecord, role: Role, auditStore: (any ConsoleStore)? = nil) {
        self.operatorName = operatorName
        self.tenant = tenant
        self.role = role
        self.auditStore = auditStore
    }

    public static func == (a: Session, b: Session) -> Bool {
        a.operatorName == b.operatorName && a.tenant == b.tenant && a.role == b.role
    }

    public var tenantName: TenantName { tenant.name }

    /// Throws `permission_denied` (exit 77) unless the role allows `permission`; the refusal is
    /// audited first, as a failure (``AccessDenial``), never as the action.
    public func require(_ permission: Permission) async throws(ConsoleError) {
        guard role >= permission.minimumRole else {
            let error = ConsoleError(
                .permissionDenied, code: "permission_denied",
                "Operator \(operatorName) has role \(role) in tenant \(tenant.name); `\(permission.commandName)` needs \(permission.minimumRole) or above."
            )
            if let auditStore {
                await AccessDenial.record(
                    error, operatorName: operatorName.rawValue, tenant: tenant.name.rawValue,
                    command: permission.commandName, details: ["role": role.name], store: auditStore)
            }
            throw error
        }
    }

    /// An audit draft attributed to this session.
    public func audit(_ action: String, target: String? = nil, details: [String: String] = [:]) -> AuditDraft {
        AuditDraft(
            operatorName: operatorName.rawValue, tenant: tenant.name.rawValue, action: action, target: target,
            details: details)
    }
}
