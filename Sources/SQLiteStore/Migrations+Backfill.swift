import BackupModel
import ConsoleStore
import Foundation
import GRDB

/// The backfill of migration `v4-derived-factors`: it runs inside GRDB's synchronous migrator,
/// before any store exists, so it writes the derived rows itself (with the v4 schema's
/// statements, frozen like the migration); every later write goes through the shared rules.
extension SQLiteConsoleStore {
    /// Writes the derived rows of one backup that has none yet.
    private static func writeDerived(
        _ implied: [ImpliedKey], _ s: BackupSummary, backupId id: String, tenant t: String, _ db: Database
    ) throws {
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
