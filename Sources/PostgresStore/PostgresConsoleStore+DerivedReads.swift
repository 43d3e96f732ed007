import BackupModel
import ConsoleStore
import PostgresNIO

/// Reads over the derived index (per-backup summaries, the keys each backup's metadata implies):
/// the tenant-wide health scan without decoding metadata JSON, as ``SQLiteConsoleStore``'s.
extension PostgresConsoleStore {
    static let summaryColumns = """
        backup_id, main_factors, sync_factors, passkeys, oidc_factors, keychain_factors, prf_keys, icloud_keys, \
        turnkey_keys, unindexed_factors, bad_sync_factors, bad_sync_factor_id, bad_sync_problem, \
        malformed_manifest_hash, blob_size
        """

    static func summary(_ row: PostgresRandomAccessRow) throws -> BackupSummary {
        func count(_ name: String) throws -> Int { try row[name].decode(Int.self) }
        var bad: BackupSummary.BadSyncFactor?
        if let id = try row["bad_sync_factor_id"].decode(String?.self),
            let code = try row["bad_sync_problem"].decode(String?.self), let problem = SyncFactorProblem(code: code)
        {
            bad = BackupSummary.BadSyncFactor(factorId: id, problem: problem)
        }
        return BackupSummary(
            backupId: try row["backup_id"].decode(String.self), mainFactors: try count("main_factors"),
            syncFactors: try count("sync_factors"), passkeys: try count("passkeys"),
            oidcFactors: try count("oidc_factors"), keychainFactors: try count("keychain_factors"),
            prfKeys: try count("prf_keys"), icloudKeys: try count("icloud_keys"),
            turnkeyKeys: try count("turnkey_keys"), unindexedFactors: try count("unindexed_factors"),
            badSyncFactors: try count("bad_sync_factors"), firstBadSyncFactor: bad,
            malformedManifestHash: try row["malformed_manifest_hash"].decode(String?.self),
            blobSize: try row["blob_size"].decode(Int?.self))
    }

    private func summaries(tenant: String, after: String, limit: Int, _ connection: PostgresConnection)
        async throws -> [BackupSummary]
    {
        try await all(
            """
            SELECT \(unescaped: Self.summaryColumns) FROM backup_summary
            WHERE tenant = \(tenant) AND backup_id > \(after) ORDER BY backup_id LIMIT \(limit)
            """, connection, Self.summary)
    }

    public func backupSummaries(tenant: TenantName, after: String?, limit: Int) async throws(ConsoleError)
        -> [BackupSummary]
    {
        try await read("listing backup summaries") { connection in
            try await summaries(
                tenant: tenant.rawValue, after: after ?? "", limit: Self.clampBatch(limit), connection)
        }
    }

    /// One page of summaries and the page's drift, read in one snapshot: index rows of these
    /// backups their metadata does not imply (in key order), and implied keys the index does not
    /// map to them, with the backup it maps them to instead (in metadata order).
    public func backupHealth(tenant: TenantName, after: String?, limit: Int) async throws(ConsoleError)
        -> [BackupHealthRow]
    {
        let t = tenant.rawValue
        let from = after ?? ""
        return try await snapshot("checking backups") { connection in
            var rows = try await summaries(tenant: t, after: from, limit: Self.clampBatch(limit), connection)
                .map { BackupHealthRow(summary: $0) }
            guard let upTo = rows.last?.summary.backupId else { return [] }
            let slots = Dictionary(
                rows.enumerated().map { ($1.summary.backupId, $0) }, uniquingKeysWith: { first, _ in first })
            // Rows of backups outside the page (dangling ones) are not this page's concern.
            let unauthorized = try await connection.query(
                """
                SELECT fl.backup_id, fl.pk FROM factor_lookup fl
                WHERE fl.tenant = \(t) AND fl.backup_id > \(from) AND fl.backup_id <= \(upTo)
                    AND NOT EXISTS (SELECT 1 FROM backup_factors bf
                        WHERE bf.tenant = fl.tenant AND bf.backup_id = fl.backup_id AND bf.pk = fl.pk)
                ORDER BY fl.backup_id, fl.pk
                """, logger: database.logger)
            for try await (backupId, pk) in unauthorized.decode((String, String).self) {
                if let slot = slots[backupId] { rows[slot].unauthorizedKeys.append(pk) }
            }
            let unindexed = try await connection.query(
                """
                SELECT bf.backup_id, bf.pk, bf.copies, bf.position,
                    (SELECT o.backup_id FROM factor_lookup o WHERE o.tenant = bf.tenant AND o.pk = bf.pk)
                FROM backup_factors bf
                WHERE bf.tenant = \(t) AND bf.backup_id > \(from) AND bf.backup_id <= \(upTo)
                    AND NOT EXISTS (SELECT 1 FROM factor_lookup fl
                        WHERE fl.tenant = bf.tenant AND fl.pk = bf.pk AND fl.backup_id = bf.backup_id)
                ORDER BY bf.backup_id, bf.position
                """, logger: database.logger)
            for try await (backupId, pk, copies, _, owner) in unindexed.decode(
                (String, String, Int, Int, String?).self)
            {
                if let slot = slots[backupId] {
                    rows[slot].unindexedKeys.append(UnindexedKey(pk: pk, copies: copies, owner: owner))
                }
            }
            return rows
        }
    }
}
