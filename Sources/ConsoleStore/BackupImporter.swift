import BackupModel
import Foundation

/// `import DIR [--dry-run]`: loads a backup-service export into one tenant.
///
/// Each backup is checked and compared with the store on its own, so one bad file or one
/// conflicting factor fails that backup only. With `factor_lookup.jsonl` the service's index is
/// imported as it is — drift included, since that is what support must see — and every
/// disagreement with the metadata is reported; without it, the index is built from the
/// metadata. Writes go in batches (one transaction and one audit entry each) plus one `import`
/// entry per run. A dry run computes the same report and writes nothing.
public struct BackupImporter: Sendable {
    public let store: any ConsoleStore
    /// Unix seconds, for the records' `importedAt` / `updatedAt`.
    public let clock: @Sendable () -> Int64
    /// Backups per write transaction unless a caller says otherwise.
    public static let defaultBatchSize = 250
    /// Backups per write transaction, and the blob bytes that close a batch early.
    public var batchSize = BackupImporter.defaultBatchSize
    public var batchBytes = 64 * 1024 * 1024

    public init(
        store: any ConsoleStore, clock: @escaping @Sendable () -> Int64 = { Int64(Date().timeIntervalSince1970) }
    ) {
        self.store = store
        self.clock = clock
    }

    /// Imports `directory` into `tenant`.
    /// - Parameter progress: called after each backup directory with the number done so far.
    /// - Throws: ``ConsoleError`` when the directory cannot be listed, the tenant does not exist,
    ///   or the store fails; problems with single files are in the report instead.
    /// - Parameter setAside: backups of the tenant a complete snapshot no longer holds (see
    ///   ``ImportRun/setAside``); their factors may be claimed by the export's backups.
    /// - Parameter snapshotAt: when the copy was taken, if known: the backups it holds as stored
    ///   are confirmed as of then (else as of the import).
    public func run(
        directory: URL, tenant: TenantName, dryRun: Bool, operatorName: String, setAside: Set<String> = [],
        snapshotAt: Int64? = nil, progress: ((Int) throws(ConsoleError) -> Void)? = nil
    ) async throws(ConsoleError) -> ImportReport {
        guard try await store.tenant(tenant) != nil else { throw .notFound("Tenant \(tenant) does not exist.") }
        let export = ExportDirectory(root: directory)
        let names = try export.backupDirectories()
        var run = ImportRun(importer: self, tenant: tenant, dryRun: dryRun, operatorName: operatorName)
        run.index = export.readIndex(problems: &run.report.problems)
        if let index = run.index, index.rows.isEmpty, !names.isEmpty,
            !run.report.problems.contains(where: { $0.path == ExportDirectory.indexFile })
        {
            // A service with backups has index rows: an empty file is a failed scan, not a
            // service whose index lost everything. Imported as is, it would remove every lookup
            // row; the index is built from the metadata instead, and the snapshot is partial.
            run.report.problems.append(
                .init(
                    path: ExportDirectory.indexFile, code: "empty_index",
                    reason:
                        "The index file holds no rows while the export holds \(names.count) backup\(names.count == 1 ? "" : "s") (a failed scan?); the lookup rows were built from the metadata instead, and the snapshot is partial."
                ))
            run.index = nil
        }
        run.exportIds = Set(names)
        run.seenAt = snapshotAt
        run.setAside = setAside.subtracting(run.exportIds)
        for (done, name) in names.enumerated() {
            run.report.backupsSeen += 1
            if let entry = export.readBackup(name, problems: &run.report.problems) {
                try await run.consider(entry)
            } else {
                run.report.failed += 1
            }
            try progress?(done + 1)
        }
        try await run.considerDeferred()
        try await run.flush()
        try await run.confirmUnchanged()
        try await run.importOrphanRows()
        if !dryRun {
            let r = run.report
            try await store.appendAudit(
                AuditDraft(
                    operatorName: operatorName, tenant: tenant.rawValue, action: "import", target: directory.path,
                    details: [
                        "seen": "\(r.backupsSeen)", "imported": "\(r.imported)", "unchanged": "\(r.unchanged)",
                        "failed": "\(r.failed)", "lookupRows": "\(r.lookupRowsImported)",
                        "problems": "\(r.problems.count)", "drift": "\(r.drift.count)",
                        "conflicts": "\(r.conflicts.count)",
                    ]))
        }
        return run.report
    }
}

extension ConsoleStore {
    /// Loads the export by ``BackupImporter``'s rules; its batches go through ``writeBackups``
    /// (one `COPY` per batch on PostgreSQL).
    public func importExport(
        directory: URL, tenant: TenantName, dryRun: Bool, operatorName: String, setAside: Set<String>,
        snapshotAt: Int64?, clock: @escaping @Sendable () -> Int64, progress: ((Int) throws(ConsoleError) -> Void)?
    ) async throws(ConsoleError) -> ImportReport {
        try await BackupImporter(store: self, clock: clock).run(
            directory: directory, tenant: tenant, dryRun: dryRun, operatorName: operatorName, setAside: setAside,
            snapshotAt: snapshotAt, progress: progress)
    }
}

extension SandboxStore {
    /// Seeds the sandbox tenant by ``SandboxSeeder``'s rules.
    public func seedSandbox(
        tenant: TenantRecord, backups: Int, orphans: Int, seed: UInt64, operatorName: String,
        clock: @escaping @Sendable () -> Int64, progress: ((Int) throws(ConsoleError) -> Void)?
    ) async throws(ConsoleError) -> SeedReport {
        try await SandboxSeeder(store: self, clock: clock).run(
            tenant: tenant, backups: backups, orphans: orphans, seed: seed, operatorName: operatorName,
            progress: progress)
    }
}
