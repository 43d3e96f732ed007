import BackupModel
import Foundation
import GRDB

extension SQLiteConsoleStore {
    public func writeBackup(tenant: TenantName, _ write: BackupWrite, audit: AuditDraft) async throws(ConsoleError) {
        let prepared = PreparedWrite(write)
        try await self.write("writing backup \(write.record.backupId)") { db in
            try Self.apply(prepared, tenant: tenant, db)
            _ = try self.insertAudit(audit, db)
        }
    }

    public func writeBackups(tenant: TenantName, _ writes: [BackupWrite], audit: AuditDraft) async throws(ConsoleError)
    {
        let prepared = PreparedWrite.all(writes)
        try await self.write("writing \(writes.count) backups") { db in
            for write in prepared { try Self.apply(write, tenant: tenant, db) }
            _ = try self.insertAudit(audit, db)
        }
    }

    @discardableResult
    public func writeLookupRows(tenant: TenantName, _ rows: [LookupRow], audit: AuditDraft) async throws(ConsoleError)
        -> Int
    {
        try await write("writing \(rows.count) factor index rows") { db in
            let upsert = try db.cachedStatement(
                sql: """
                    INSERT INTO factor_lookup (tenant, pk, backup_id) VALUES (?, ?, ?)
                    ON CONFLICT (tenant, pk) DO UPDATE SET backup_id = excluded.backup_id
                    WHERE backup_id <> excluded.backup_id
                    """)
            var changed = 0
            for row in rows {
                try Self.checkKey(row.pk)
                try upsert.execute(arguments: [tenant.rawValue, row.pk, row.backupId])
                changed += db.changesCount
            }
            _ = try self.insertAudit(audit, db)
            return changed
        }
    }

    static func checkKey(_ pk: String) throws { try BackupWrite.checkKey(pk) }

    /// Writes one backup inside the caller's transaction: the rows it takes over released, then
    /// the conflict check, so a conflict throws before anything of this backup is written (and
    /// the transaction rolls back, the released rows with it).
    static func apply(_ prepared: PreparedWrite, tenant: TenantName, _ db: Database) throws {
        let write = prepared.write
        let record = write.record
        let id = record.backupId
        let t = tenant.rawValue
        try write.validate()
        // Handed over only from the backup the writer saw owning it; otherwise the check below
        // finds the row's new owner and the transaction rolls back.
        let release = try db.cachedStatement(
            sql: "DELETE FROM factor_lookup WHERE tenant = ? AND pk = ? AND backup_id = ?")
        for row in write.takesOver { try release.execute(arguments: [t, row.pk, row.backupId]) }
        let owner = try db.cachedStatement(sql: "SELECT backup_id FROM factor_lookup WHERE tenant = ? AND pk = ?")
        for row in write.lookupRows {
            if let other = try String.fetchOne(owner, arguments: [t, row.pk]), other != id {
                throw ConsoleError(
                    .conflict, code: "factor_conflict",
                    "Factor \(row.pk) is already enrolled in backup \(other), so backup \(id) cannot claim it.")
            }
        }
        try db.cachedStatement(
            sql: """
                INSERT INTO backups (tenant, backup_id, metadata, manifest_hash, blob_size, blob_sha256,
                    imported_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT (tenant, backup_id) DO UPDATE SET metadata = excluded.metadata,
                    manifest_hash = excluded.manifest_hash, blob_size = excluded.blob_size,
                    blob_sha256 = excluded.blob_sha256, updated_at = excluded.updated_at
                """
        ).execute(arguments: [
            t, id, prepared.metadataJSON, record.manifestHash,
            write.blob == nil ? nil : record.blobSize, write.blob == nil ? nil : record.blobSHA256,
            record.importedAt, record.updatedAt,
        ])
        try db.cachedStatement(sql: "DELETE FROM sealed_blobs WHERE tenant = ? AND backup_id = ?")
            .execute(arguments: [t, id])
        if let blob = write.blob {
            try db.cachedStatement(sql: "INSERT INTO sealed_blobs (tenant, backup_id, bytes) VALUES (?, ?, ?)")
                .execute(arguments: [t, id, blob])
        }
        try db.cachedStatement(sql: "DELETE FROM factor_lookup WHERE tenant = ? AND backup_id = ?")
            .execute(arguments: [t, id])
        let insertRow = try db.cachedStatement(
            sql: "INSERT OR IGNORE INTO factor_lookup (tenant, pk, backup_id) VALUES (?, ?, ?)")
        for row in write.lookupRows { try insertRow.execute(arguments: [t, row.pk, id]) }
        try db.cachedStatement(sql: "DELETE FROM suborg_refs WHERE tenant = ? AND backup_id = ?")
            .execute(arguments: [t, id])
        let insertRef = try db.cachedStatement(
            sql: "INSERT INTO suborg_refs (tenant, suborg_id, backup_id) VALUES (?, ?, ?)")
        for subOrg in record.metadata.turnkeySubOrgIds { try insertRef.execute(arguments: [t, subOrg, id]) }
        try writeDerived(prepared.implied, prepared.summary, backupId: id, tenant: t, db)
    }
}
