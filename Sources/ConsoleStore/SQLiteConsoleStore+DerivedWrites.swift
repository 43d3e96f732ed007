import BackupModel
import Foundation
import GRDB

/// Writing the derived index of the metadata (`backup_factors`, `backup_summary`): always
/// inside the transaction that writes the metadata, so the two cannot disagree.
extension SQLiteConsoleStore {
    /// Replaces the derived rows of one backup, inside the caller's write transaction.
    static func writeDerived(
        _ implied: [ImpliedKey], _ s: BackupSummary, backupId id: String, tenant t: String, _ db: Database
    ) throws {
        try db.cachedStatement(sql: "DELETE FROM backup_factors WHERE tenant = ? AND backup_id = ?")
            .execute(arguments: [t, id])
        let insertKey = try db.cachedStatement(
            sql: """
                INSERT INTO backup_factors (tenant, backup_id, pk, position, copies, factor_id)
                VALUES (?, ?, ?, ?, ?, ?)
                """)
        for key in implied {
            try insertKey.execute(arguments: [t, id, key.pk, key.position, key.copies, key.factorId])
        }
        try db.cachedStatement(
            sql: """
                INSERT OR REPLACE INTO backup_summary (tenant, \(summaryColumns))
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """
        ).execute(arguments: [
            t, id, s.mainFactors, s.syncFactors, s.passkeys, s.oidcFactors, s.keychainFactors, s.prfKeys,
            s.icloudKeys, s.turnkeyKeys, s.unindexedFactors, s.badSyncFactors, s.firstBadSyncFactor?.factorId,
            s.firstBadSyncFactor?.problem.code, s.malformedManifestHash, s.blobSize,
        ])
    }

    /// Removes the derived rows of one backup (a reset); the foreign keys would cascade too,
    /// but the intent belongs next to the other deletes.
    static func deleteDerived(backupId id: String, tenant t: String, _ db: Database) throws {
        try db.execute(sql: "DELETE FROM backup_factors WHERE tenant = ? AND backup_id = ?", arguments: [t, id])
        try db.execute(sql: "DELETE FROM backup_summary WHERE tenant = ? AND backup_id = ?", arguments: [t, id])
    }

    /// Derives the rows of every stored backup (migration `v4-derived-factors`), a page at a time.
    /// - Throws: ``ConsoleError`` `internal_error` naming a backup whose stored metadata does not decode.
    static func backfillDerived(_ db: Database) throws {
        var last: Int64 = 0
        while true {
            let page = try Row.fetchAll(
                db,
                sql: """
                    SELECT rowid AS row_id, tenant, backup_id, metadata, blob_size FROM backups
                    WHERE rowid > ? ORDER BY rowid LIMIT 1000
                    """, arguments: [last])
            guard let lastRow = page.last else { return }
            for row in page {
                let id: String = row["backup_id"]
                let text: String = row["metadata"]
                let metadata: BackupMetadata
                do {
                    metadata = try BackupMetadata.decode(Data(text.utf8))
                } catch {
                    throw ConsoleError.internalError(
                        "Backup \(id) has unreadable metadata in the store, so its factors cannot be indexed: "
                            + error.message)
                }
                let summary = BackupSummary(metadata: metadata, blobSize: row["blob_size"])
                try writeDerived(ImpliedKey.of(metadata), summary, backupId: id, tenant: row["tenant"], db)
            }
            last = lastRow["row_id"]
        }
    }
}

/// A backup write with everything derived from its metadata computed before the write
/// transaction: the stored JSON, the implied keys and the summary (P-256 checks included).
/// Batches are prepared on every core, so the single writer only runs SQL.
struct PreparedWrite: Sendable {
    let write: BackupWrite
    let metadataJSON: String
    let implied: [ImpliedKey]
    let summary: BackupSummary

    init(_ write: BackupWrite) {
        self.write = write
        let metadata = write.record.metadata
        metadataJSON = String(decoding: metadata.encoded(.stored), as: UTF8.self)
        implied = ImpliedKey.of(metadata)
        summary = BackupSummary(metadata: metadata, blobSize: write.blob == nil ? nil : write.record.blobSize)
    }

    /// Prepares `writes` in order, in parallel when there are enough to be worth it.
    static func all(_ writes: [BackupWrite]) -> [PreparedWrite] {
        guard writes.count >= 64 else { return writes.map(PreparedWrite.init) }
        let slots = PreparedSlots(count: writes.count)
        let workers = max(1, min(ProcessInfo.processInfo.activeProcessorCount, writes.count))
        DispatchQueue.concurrentPerform(iterations: workers) { worker in
            var local: [(Int, PreparedWrite)] = []
            for i in stride(from: worker, to: writes.count, by: workers) { local.append((i, PreparedWrite(writes[i]))) }
            slots.store(local)
        }
        return slots.take(writes)
    }
}

/// Result slots of ``PreparedWrite/all(_:)``; a lock guards the array.
private final class PreparedSlots: @unchecked Sendable {
    private let lock = NSLock()
    private var values: [PreparedWrite?]

    init(count: Int) { values = Array(repeating: nil, count: count) }

    func store(_ results: [(Int, PreparedWrite)]) {
        lock.withLock { for (i, value) in results { values[i] = value } }
    }

    /// The prepared writes in order; any slot left empty is prepared here.
    func take(_ writes: [BackupWrite]) -> [PreparedWrite] {
        lock.withLock { values.enumerated().map { $1 ?? PreparedWrite(writes[$0]) } }
    }
}
