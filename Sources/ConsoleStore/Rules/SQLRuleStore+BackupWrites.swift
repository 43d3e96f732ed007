import BackupModel
import Foundation

/// Writing and deleting backups with everything hanging off them (blob, lookup rows, sub-org
/// refs, and the derived index: implied keys and summary), always in one transaction so the
/// metadata and what reads derive from it cannot disagree.
extension SQLRuleStore {
    public func writeBackup(tenant: TenantName, _ write: BackupWrite, audit: AuditDraft) async throws(ConsoleError) {
        let prepared = PreparedWrite(write)
        try await audited("writing backup \(write.record.backupId)", audit) { session in
            try await apply(prepared, tenant: tenant.rawValue, session)
        }
    }

    public func writeBackups(tenant: TenantName, _ writes: [BackupWrite], audit: AuditDraft) async throws(ConsoleError)
    {
        let prepared = PreparedWrite.all(writes)
        try await audited("writing \(writes.count) backups", audit) { session in
            for write in prepared { try await apply(write, tenant: tenant.rawValue, session) }
        }
    }

    /// Writes one backup inside the caller's transaction: the rows it takes over released, then
    /// the conflict check, so a conflict throws before anything of this backup is written (and
    /// the transaction rolls back, the released rows with it).
    func apply(_ prepared: PreparedWrite, tenant t: String, _ session: Driver.Session) async throws {
        let write = prepared.write
        let record = write.record
        let id = record.backupId
        try write.validate()
        // Handed over only from the backup the writer saw owning it; otherwise the check below
        // finds the row's new owner and the transaction rolls back.
        for row in write.takesOver {
            try await session.execute(
                "DELETE FROM factor_lookup WHERE tenant = \(t) AND pk = \(row.pk) AND backup_id = \(row.backupId)")
        }
        for row in write.lookupRows {
            if let other = try await session.value(
                "SELECT backup_id FROM factor_lookup WHERE tenant = \(t) AND pk = \(row.pk)", as: String.self),
                other != id
            {
                throw ConsoleError(
                    .conflict, code: "factor_conflict",
                    "Factor \(row.pk) is already enrolled in backup \(other), so backup \(id) cannot claim it.")
            }
        }
        let hasBlob = write.blob != nil
        try await session.execute(
            """
            INSERT INTO backups (tenant, backup_id, metadata, manifest_hash, blob_size, blob_sha256,
                imported_at, updated_at)
            VALUES (\(t), \(id), \(prepared.metadataJSON), \(record.manifestHash), \(hasBlob ? record.blobSize : nil),
                \(hasBlob ? record.blobSHA256 : nil), \(record.importedAt), \(record.updatedAt))
            ON CONFLICT (tenant, backup_id) DO UPDATE SET metadata = excluded.metadata,
                manifest_hash = excluded.manifest_hash, blob_size = excluded.blob_size,
                blob_sha256 = excluded.blob_sha256, updated_at = excluded.updated_at
            """)
        try await session.execute("DELETE FROM sealed_blobs WHERE tenant = \(t) AND backup_id = \(id)")
        if let blob = write.blob {
            try await session.execute(
                "INSERT INTO sealed_blobs (tenant, backup_id, bytes) VALUES (\(t), \(id), \(blob))")
        }
        try await session.execute("DELETE FROM factor_lookup WHERE tenant = \(t) AND backup_id = \(id)")
        for row in write.lookupRows {
            try await session.execute(
                """
                INSERT INTO factor_lookup (tenant, pk, backup_id) VALUES (\(t), \(row.pk), \(id))
                ON CONFLICT DO NOTHING
                """)
        }
        try await session.execute("DELETE FROM suborg_refs WHERE tenant = \(t) AND backup_id = \(id)")
        for subOrg in record.metadata.turnkeySubOrgIds {
            try await session.execute(
                """
                INSERT INTO suborg_refs (tenant, suborg_id, backup_id) VALUES (\(t), \(subOrg), \(id))
                ON CONFLICT DO NOTHING
                """)
        }
        try await writeDerived(prepared.implied, prepared.summary, backupId: id, tenant: t, session)
    }

    /// Replaces the derived rows of one backup, inside the caller's write transaction.
    func writeDerived(
        _ implied: [ImpliedKey], _ s: BackupSummary, backupId id: String, tenant t: String, _ session: Driver.Session
    ) async throws {
        try await deleteDerived(backupId: id, tenant: t, session)
        for key in implied {
            try await session.execute(
                """
                INSERT INTO backup_factors (tenant, backup_id, pk, position, copies, factor_id)
                VALUES (\(t), \(id), \(key.pk), \(key.position), \(key.copies), \(key.factorId))
                """)
        }
        try await session.execute(
            """
            INSERT INTO backup_summary (tenant, \(raw: RowMapping.summaryColumns))
            VALUES (\(t), \(id), \(s.mainFactors), \(s.syncFactors), \(s.passkeys), \(s.oidcFactors),
                \(s.keychainFactors), \(s.prfKeys), \(s.icloudKeys), \(s.turnkeyKeys), \(s.unindexedFactors),
                \(s.badSyncFactors), \(s.firstBadSyncFactor?.factorId), \(s.firstBadSyncFactor?.problem.code),
                \(s.malformedManifestHash), \(s.blobSize))
            """)
    }

    /// Removes the derived rows of one backup; the foreign keys would cascade too, but the
    /// intent belongs next to the other deletes.
    func deleteDerived(backupId id: String, tenant t: String, _ session: Driver.Session) async throws {
        try await session.execute("DELETE FROM backup_factors WHERE tenant = \(t) AND backup_id = \(id)")
        try await session.execute("DELETE FROM backup_summary WHERE tenant = \(t) AND backup_id = \(id)")
    }

    /// Deletes one backup's metadata, blob, lookup rows, sub-org refs and derived rows, inside
    /// the caller's transaction (the backup's row locked first where the backend locks rows).
    /// - Returns: what was removed, `nil` when the backup was not there.
    func deleteBackupRows(tenant t: String, backupId id: String, _ session: Driver.Session) async throws
        -> ResetWipe?
    {
        let metadataText = try await session.value(
            "SELECT metadata FROM backups WHERE tenant = \(t) AND backup_id = \(id)\(raw: dialect.lockClause)",
            as: String.self)
        // The sub-orgs come from the metadata and the refs alike, so a ref without its key still counts.
        var subOrgs = metadataText.flatMap { try? BackupMetadata.decode(Data($0.utf8)).turnkeySubOrgIds } ?? []
        let refs: [String] = try await session.values(
            "SELECT suborg_id FROM suborg_refs WHERE tenant = \(t) AND backup_id = \(id) ORDER BY suborg_id")
        for ref in refs where !subOrgs.contains(ref) { subOrgs.append(ref) }
        let rowsRemoved = try await session.changes(
            "DELETE FROM factor_lookup WHERE tenant = \(t) AND backup_id = \(id)")
        guard metadataText != nil || rowsRemoved > 0 else { return nil }
        // Blob, refs and derived rows go by ON DELETE CASCADE too; deleted explicitly so the intent is here.
        try await session.execute("DELETE FROM sealed_blobs WHERE tenant = \(t) AND backup_id = \(id)")
        try await session.execute("DELETE FROM suborg_refs WHERE tenant = \(t) AND backup_id = \(id)")
        try await deleteDerived(backupId: id, tenant: t, session)
        try await session.execute("DELETE FROM backups WHERE tenant = \(t) AND backup_id = \(id)")
        return ResetWipe(backupId: id, lookupRowsRemoved: rowsRemoved, turnkeySubOrgIds: subOrgs)
    }
}
