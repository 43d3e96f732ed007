import BackupModel

/// Everything a service can be asked to do, and the least role that may do it.
///
/// This table is the role matrix; services ask ``Session/require(_:)`` before touching data.
public enum Permission: String, Sendable, CaseIterable {
    case lookup, show, check, stats, cleanupScan, cleanupStatus
    case resetBegin, resetComplete
    case cleanupRun, cleanupTeardown, cleanupIngestLog
    case importBackups, seed, manageOperators, auditList, auditVerify

    public var minimumRole: Role {
        switch self {
        case .lookup, .show, .check, .stats, .cleanupScan, .cleanupStatus: .viewer
        case .resetBegin, .resetComplete: .support
        case .cleanupRun, .cleanupTeardown, .cleanupIngestLog: .cleaner
        case .importBackups, .seed, .manageOperators, .auditList, .auditVerify: .admin
        }
    }
}
