import BackupModel

extension BackupWrite {
    /// What every store checks of a write before touching the database: the metadata names
    /// the backup, a blob fits and matches its record, and each lookup row names this backup
    /// with a MAIN or SYNC key.
    /// - Throws: ``ConsoleError`` `backup_id_mismatch`, `blob_too_large`, `blob_mismatch`,
    ///   `lookup_row_mismatch`, `invalid_lookup_key` or `invalid_handover` (a row taken over that
    ///   the write does not own afterwards, or from the backup itself).
    public func validate() throws(ConsoleError) {
        let id = record.backupId
        guard record.metadata.id == id else {
            throw ConsoleError.invalid(
                "backup_id_mismatch", "Backup \(id) carries metadata for \(record.metadata.id); they must match.")
        }
        if let blob {
            guard blob.count <= BackupMetadata.maxBlobBytes else {
                throw ConsoleError.invalid(
                    "blob_too_large", "The sealed blob of \(id) has \(blob.count) bytes; at most 15 MB is allowed.")
            }
            guard record.blobSize == blob.count, record.blobSHA256 != nil else {
                throw ConsoleError.invalid(
                    "blob_mismatch", "The record of \(id) must carry the size and SHA-256 of its sealed blob.")
            }
        }
        for row in lookupRows {
            guard row.backupId == id else {
                throw ConsoleError.invalid(
                    "lookup_row_mismatch", "A lookup row written with backup \(id) names backup \(row.backupId).")
            }
            try Self.checkKey(row.pk)
        }
        guard !takesOver.isEmpty else { return }
        let owned = Set(lookupRows.map(\.pk))
        for row in takesOver where row.backupId == id || !owned.contains(row.pk) {
            throw ConsoleError.invalid(
                "invalid_handover",
                "Backup \(id) may take over factor \(row.pk) from backup \(row.backupId) only as one of its own rows, from another backup."
            )
        }
    }

    /// A FactorLookup key must name its scope.
    /// - Throws: ``ConsoleError`` `invalid_lookup_key`.
    public static func checkKey(_ pk: String) throws(ConsoleError) {
        guard pk.hasPrefix("MAIN#") || pk.hasPrefix("SYNC#") else {
            throw ConsoleError.invalid(
                "invalid_lookup_key",
                "Invalid FactorLookup key \(SecretShape.quoted(pk, limit: 80)): the scope must be MAIN or SYNC.")
        }
    }
}
