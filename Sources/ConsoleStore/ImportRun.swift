import BackupModel
import Foundation

/// The state of one import: the report, the factors claimed so far in this run, the pending batch.
struct ImportRun {
    let importer: BackupImporter
    let tenant: TenantName
    let dryRun: Bool
    let operatorName: String
    var report: ImportReport
    var index: ExportDirectory.Index?
    var exportIds: Set<String> = []
    /// Backups of the tenant that a complete snapshot no longer holds. A complete snapshot is the
    /// truth about its own moment: a factor such a backup still owns in the store is free for a
    /// backup of the snapshot to claim (the key moved, e.g. an account deleted and made again
    /// with the same passkey) and is handed over, not a conflict. Empty for a partial snapshot.
    var setAside: Set<String> = []
    /// pk → backup, for every backup accepted in this run (its rows replace its stored ones).
    private var claims: [String: String] = [:]
    private var accepted: Set<String> = []
    /// When the copy was taken (its snapshot time, else the import's own time): what a backup
    /// found unchanged is confirmed as of (``ConsoleStore/confirmBackups(tenant:ids:seenAt:)``).
    var seenAt: Int64?
    /// Backups found as stored, not yet confirmed.
    private var unchanged: [String] = []
    private var batch: [BackupWrite] = []
    private var batchBytes = 0
    /// Backups whose factor another backup of the export still owns in the store, and which
    /// that backup (later in id order) may have let go of: judged once every other is.
    private var deferred: [ExportDirectory.Entry] = []

    init(importer: BackupImporter, tenant: TenantName, dryRun: Bool, operatorName: String) {
        self.importer = importer
        self.tenant = tenant
        self.dryRun = dryRun
        self.operatorName = operatorName
        report = ImportReport(dryRun: dryRun)
    }

    private var store: any ConsoleStore { importer.store }

    /// Decides what one readable backup needs: drift findings, conflict, unchanged, or a write.
    /// A factor that another backup of the export still owns in the store defers the decision
    /// (``considerDeferred()``): the export may move it, and its id order must not decide.
    mutating func consider(_ entry: ExportDirectory.Entry, deferrable: Bool = true) async throws(ConsoleError) {
        let metadata = entry.metadata
        let id = metadata.id
        let metadataKeys = Self.unique(metadata.lookupKeys.map(\.rawValue))
        let rows: [String]
        // Drift is found once, on the first look (a deferred backup is looked at twice).
        if let index, !deferrable {
            rows = index.rowsByBackup[id] ?? []
        } else if let index {
            rows = index.rowsByBackup[id] ?? []
            let implied = Set(metadataKeys)
            for pk in metadataKeys {
                switch index.owner[pk] {
                case nil: report.drift.append(DriftFinding(backupId: id, pk: pk, kind: .missingInIndex))
                case let other? where other != id:
                    report.conflicts.append(ImportConflict(pk: pk, backupIds: [other, id]))
                default: break
                }
            }
            for pk in rows where !implied.contains(pk) {
                report.drift.append(DriftFinding(backupId: id, pk: pk, kind: .unauthorizedFactor))
            }
        } else {
            rows = metadataKeys
        }
        // Rows a set-aside backup owns, each naming it: the write takes them over.
        var takesOver: [LookupRow] = []
        for pk in rows {
            guard let other = try await owner(of: pk), other != id else { continue }
            // Conflicts are judged after the backups the snapshot no longer holds are set aside;
            // a factor claimed twice inside the snapshot (`claims`) is still a conflict.
            if setAside.contains(other) && claims[pk] == nil {
                takesOver.append(LookupRow(pk: pk, backupId: other))
                continue
            }
            if deferrable, claims[pk] == nil, exportIds.contains(other), !accepted.contains(other) {
                deferred.append(entry)
                return
            }
            report.conflicts.append(ImportConflict(pk: pk, backupIds: [other, id]))
            report.failed += 1
            return
        }
        for pk in rows { claims[pk] = id }
        accepted.insert(id)
        let lookupRows = rows.map { LookupRow(pk: $0, backupId: id) }
        let existing = try await store.backup(tenant: tenant, id: id)
        var entry = entry
        // No sealed blob in the export (a metadata-only copy) for a backup whose stored blob
        // belongs to the same manifest: the stored one stays, rather than the console saying
        // the user cannot restore.
        let keepsBlob =
            entry.blob == nil && existing?.blobSHA256 != nil
            && existing?.metadata.manifestHash == metadata.manifestHash
        if keepsBlob { entry.blobSHA256 = existing?.blobSHA256 }
        if let existing, try await isUnchanged(entry, existing: existing, rows: lookupRows) {
            report.unchanged += 1
            unchanged.append(id)
            if unchanged.count >= 500 { try await confirmUnchanged() }
            return
        }
        if keepsBlob {
            entry.blob = try await store.sealedBlob(tenant: tenant, backupId: id)
            if entry.blob == nil { entry.blobSHA256 = nil }
        }
        let now = importer.clock()
        let record = BackupRecord(
            backupId: id, metadata: metadata, blobSize: entry.blob?.count, blobSHA256: entry.blobSHA256,
            importedAt: existing?.importedAt ?? now, updatedAt: now)
        report.imported += 1
        report.lookupRowsImported += lookupRows.count
        report.factorsMoved += takesOver.count
        batch.append(BackupWrite(record: record, blob: entry.blob, lookupRows: lookupRows, takesOver: takesOver))
        batchBytes += entry.blob?.count ?? 0
        if batch.count >= importer.batchSize || batchBytes >= importer.batchBytes { try await flush() }
    }

    /// Decides the deferred backups, now that every other backup of the export has been judged:
    /// a factor their owner let go of is free, one it still holds is a conflict.
    mutating func considerDeferred() async throws(ConsoleError) {
        let waiting = deferred
        deferred = []
        for entry in waiting { try await consider(entry, deferrable: false) }
    }

    /// The backup owning `pk` once this run's accepted backups have replaced their stored rows.
    private func owner(of pk: String) async throws(ConsoleError) -> String? {
        if let claimed = claims[pk] { return claimed }
        guard let stored = try await store.lookup(tenant: tenant, pk: pk)?.backupId else { return nil }
        return accepted.contains(stored) ? nil : stored
    }

    private func isUnchanged(_ entry: ExportDirectory.Entry, existing: BackupRecord, rows: [LookupRow])
        async throws(ConsoleError) -> Bool
    {
        guard existing.blobSHA256 == entry.blobSHA256,
            existing.metadata.encoded(.stored) == entry.metadata.encoded(.stored)
        else { return false }
        return Set(try await store.lookupRows(tenant: tenant, backupId: entry.metadata.id)) == Set(rows)
    }

    /// Writes the pending batch in one transaction; on a conflict (a concurrent writer) the
    /// batch is retried backup by backup so only the conflicting ones fail.
    mutating func flush() async throws(ConsoleError) {
        defer {
            batch = []
            batchBytes = 0
        }
        guard !dryRun, !batch.isEmpty else { return }
        let ids = batch.map(\.record.backupId)
        var draft = AuditDraft(
            operatorName: operatorName, tenant: tenant.rawValue, action: "backup.import",
            target: ids.count == 1 ? ids[0] : nil,
            details: ["count": "\(ids.count)", "first": ids.first ?? "", "last": ids.last ?? ""])
        let moved = batch.reduce(0) { $0 + $1.takesOver.count }
        // Factors handed over from backups the snapshot no longer holds go in the same transaction.
        if moved > 0 { draft.details["factorsMoved"] = "\(moved)" }
        do {
            try await store.writeBackups(tenant: tenant, batch, audit: draft)
        } catch  where error.kind == .conflict || error.kind == .invalidInput || error.kind == .notFound {
            for write in batch {
                let id = write.record.backupId
                var single = AuditDraft(
                    operatorName: operatorName, tenant: tenant.rawValue, action: "backup.import", target: id)
                if !write.takesOver.isEmpty { single.details["factorsMoved"] = "\(write.takesOver.count)" }
                do {
                    try await store.writeBackup(tenant: tenant, write, audit: single)
                } catch  where error.kind != .internalError {
                    report.imported -= 1
                    report.failed += 1
                    report.lookupRowsImported -= write.lookupRows.count
                    report.factorsMoved -= write.takesOver.count
                    report.problems.append(ImportProblem(path: id, code: error.code, reason: error.message))
                }
            }
        }
    }

    /// Confirms the backups found as stored since the last call: the copy saw them exist, so a
    /// complete snapshot older than it cannot retire them.
    mutating func confirmUnchanged() async throws(ConsoleError) {
        defer { unchanged = [] }
        guard !dryRun, !unchanged.isEmpty else { return }
        try await store.confirmBackups(tenant: tenant, ids: unchanged, seenAt: seenAt ?? importer.clock())
    }

    /// Imports the index rows whose backup is not in the export, as they are, and reports them.
    mutating func importOrphanRows() async throws(ConsoleError) {
        guard let index else { return }
        let orphans = index.rows.filter { !exportIds.contains($0.backupId) }
        guard !orphans.isEmpty else { return }
        var changed: [LookupRow] = []
        for row in orphans {
            report.drift.append(DriftFinding(backupId: row.backupId, pk: row.pk, kind: .orphanRow))
            if try await store.lookup(tenant: tenant, pk: row.pk) != row { changed.append(row) }
        }
        report.lookupRowsImported += changed.count
        guard !dryRun, !changed.isEmpty else { return }
        try await store.writeLookupRows(
            tenant: tenant, changed,
            audit: AuditDraft(
                operatorName: operatorName, tenant: tenant.rawValue, action: "lookup.import",
                details: ["count": "\(changed.count)", "reason": "rows of backups not in the export"]))
    }

    static func unique(_ keys: [String]) -> [String] {
        var seen = Set<String>()
        return keys.filter { seen.insert($0).inserted }
    }
}
