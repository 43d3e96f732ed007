import BackupModel

/// Which audit entries `audit list` shows: the tenant's, narrowed by operator, action and time.
public struct AuditQuery: Sendable, Equatable {
    public var tenant: TenantName
    public var operatorName: String?
    /// An exact action (`backup.show`) or a family with a trailing `.` or `*` (`reset.`, `reset.*`).
    public var action: String?
    /// Unix milliseconds; entries at or after it.
    public var sinceMillis: Int64?
    /// Entries with a higher sequence number only, the first ones after it (`--follow` polls with
    /// the last one seen); 0: the latest ones.
    public var afterSeq: Int64

    public init(
        tenant: TenantName, operatorName: String? = nil, action: String? = nil, sinceMillis: Int64? = nil,
        afterSeq: Int64 = 0
    ) {
        self.tenant = tenant
        self.operatorName = operatorName
        self.action = action
        self.sinceMillis = sinceMillis
        self.afterSeq = afterSeq
    }
}
