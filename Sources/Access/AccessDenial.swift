import BackupModel
import ConsoleStore

/// The audit entry of a refused command: action `access.denied` with the error code and the
/// command that was refused, so the log records the attempt and never the action itself.
enum AccessDenial {
    static let action = "access.denied"

    /// Appends the entry. A store that cannot take it does not change the refusal, which the
    /// caller throws either way.
    static func record(
        _ error: ConsoleError, operatorName: String, tenant: String?, command: String, details: [String: String] = [:],
        store: any ConsoleStore
    ) async {
        var all = details
        all["code"] = error.code
        all["command"] = command
        all["outcome"] = "failure"
        _ = try? await store.appendAudit(
            AuditDraft(operatorName: operatorName, tenant: tenant, action: action, target: command, details: all))
    }
}
