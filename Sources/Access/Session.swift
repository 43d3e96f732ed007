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

    init(operatorName: OperatorName, tenant: TenantRecord, role: Role) {
        self.operatorName = operatorName
        self.tenant = tenant
        self.role = role
    }

    public var tenantName: TenantName { tenant.name }

    /// Throws `permission_denied` (exit 77) unless the role allows `permission`.
    public func require(_ permission: Permission) throws(ConsoleError) {
        guard role >= permission.minimumRole else {
            throw ConsoleError(
                .permissionDenied, code: "permission_denied",
                "Operator \(operatorName) has role \(role) in tenant \(tenant.name); `\(permission.commandName)` needs \(permission.minimumRole) or above."
            )
        }
    }

    /// An audit draft attributed to this session.
    public func audit(_ action: String, target: String? = nil, details: [String: String] = [:]) -> AuditDraft {
        AuditDraft(
            operatorName: operatorName.rawValue, tenant: tenant.name.rawValue, action: action, target: target,
            details: details)
    }
}
