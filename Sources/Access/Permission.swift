import BackupModel

/// Everything a service can be asked to do, and the least role that may do it.
///
/// This table is the role matrix; services ask ``Session/require(_:)`` before touching data.
public enum Permission: String, Sendable, CaseIterable {
    case lookup, show, check, stats, cleanupScan, cleanupStatus
    case resetBegin, resetComplete
    case cleanupRun, cleanupTeardown, cleanupIngestLog
    case importBackups, seed, manageOperators, auditList, auditVerify
    case updateTenant

    /// The command words an operator typed, for messages.
    public var commandName: String {
        switch self {
        case .lookup: "lookup"
        case .show: "show"
        case .check: "check"
        case .stats: "stats"
        case .cleanupScan: "cleanup scan"
        case .cleanupStatus: "cleanup status"
        case .resetBegin: "reset begin"
        case .resetComplete: "reset complete"
        case .cleanupRun: "cleanup run"
        case .cleanupTeardown: "cleanup teardown-request/submit"
        case .cleanupIngestLog: "cleanup ingest-log"
        case .importBackups: "import"
        case .seed: "seed"
        case .manageOperators: "operator add/grant/revoke/list"
        case .auditList: "audit list"
        case .auditVerify: "audit verify"
        case .updateTenant: "tenant update"
        }
    }

    public var minimumRole: Role {
        switch self {
        case .lookup, .show, .check, .stats, .cleanupScan, .cleanupStatus: .viewer
        case .resetBegin, .resetComplete: .support
        case .cleanupRun, .cleanupTeardown, .cleanupIngestLog: .cleaner
        case .importBackups, .seed, .manageOperators, .auditList, .auditVerify, .updateTenant: .admin
        }
    }
}
