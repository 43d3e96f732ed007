import Access
import BackupModel
import ConsoleStore

/// `show BACKUP_ID` and `check BACKUP_ID`: one backup, its index rows and its health.
public struct BackupInspector: Sendable {
    let store: any ConsoleStore
    let clock: WallClock

    public init(store: any ConsoleStore, clock: WallClock = .system) {
        self.store = store
        self.clock = clock
    }

    /// The full report of one backup; audited as `backup.show`.
    /// - Throws: ``ConsoleError`` `invalid_backup_account_id`, `not_found`, `permission_denied`.
    public func show(backupId: String, session: Session) async throws(ConsoleError) -> BackupReport {
        try await session.require(.show)
        let record = try await record(backupId, tenant: session.tenantName)
        let rows = try await store.lookupRows(tenant: session.tenantName, backupId: record.backupId).map(\.pk)
        let input = try await healthInput(record, tenant: session.tenantName, rows: rows)
        var report = BackupReport(record: record, indexRows: rows, input: input)
        report.snapshot = try await SnapshotAge.of(store: store, tenant: session.tenant, now: clock.seconds)
        try await store.appendReadAudit(
            session.audit("backup.show", target: record.backupId, details: ["health": report.overall.rawValue]))
        return report
    }

    /// The backup, or `not_found`; the id may be a unique prefix (``BackupIdResolver``), and is
    /// checked for syntax first so a typo says so.
    func record(_ backupId: String, tenant: TenantName) async throws(ConsoleError) -> BackupRecord {
        let id = try await BackupIdResolver(store: store).resolve(backupId, tenant: tenant)
        guard let record = try await store.backup(tenant: tenant, id: id) else {
            throw ConsoleError.notFound("No backup \(HealthChecks.abbreviateId(id)) in tenant \(tenant).")
        }
        return record
    }

    /// Gathers what the checks need: the backup's own index rows, and for each metadata key
    /// the backup does not own, which backup (if any) the index gives it to.
    ///
    /// One query for the rows; one more per missing key only, which drift makes rare.
    func healthInput(_ record: BackupRecord, tenant: TenantName, rows: [String]? = nil) async throws(ConsoleError)
        -> HealthInput
    {
        let indexRows: [String]
        if let rows {
            indexRows = rows
        } else {
            indexRows = try await store.lookupRows(tenant: tenant, backupId: record.backupId).map(\.pk)
        }
        return try await Self.healthInput(record, rows: indexRows) { (pk: String) throws(ConsoleError) in
            try await store.lookup(tenant: tenant, pk: pk)?.backupId
        }
    }

    /// ``healthInput(_:tenant:rows:)`` over rows the caller fetched; `owner` answers for missing keys.
    static func healthInput(
        _ record: BackupRecord, rows: [String], owner: (String) async throws(ConsoleError) -> String?
    ) async throws(ConsoleError) -> HealthInput {
        var others: [String: String] = [:]
        let owned = Set(rows)
        for key in record.metadata.lookupKeys where !owned.contains(key.rawValue) {
            if let other = try await owner(key.rawValue), other != record.backupId { others[key.rawValue] = other }
        }
        return HealthInput(
            backupId: record.backupId, metadata: record.metadata, indexRows: rows, otherOwners: others,
            blobSize: record.blobSize)
    }
}
