import BackupModel
import Foundation
import GRDB

/// Reads over the derived index: lookups that refuse unauthorized factors and the tenant-wide
/// health scan, neither decoding metadata JSON.
extension SQLiteConsoleStore {
    static let summaryColumns = """
        backup_id, main_factors, sync_factors, passkeys, oidc_factors, keychain_factors, prf_keys, icloud_keys, \
        turnkey_keys, unindexed_factors, bad_sync_factors, bad_sync_factor_id, bad_sync_problem, \
        malformed_manifest_hash, blob_size
        """

    static func summary(_ row: Row) -> BackupSummary {
        let badId: String? = row[11]
        let badCode: String? = row[12]
        var bad: BackupSummary.BadSyncFactor?
        if let badId, let badCode, let problem = SyncFactorProblem(code: badCode) {
            bad = BackupSummary.BadSyncFactor(factorId: badId, problem: problem)
        }
        return BackupSummary(
            backupId: row[0], mainFactors: row[1], syncFactors: row[2], passkeys: row[3], oidcFactors: row[4],
            keychainFactors: row[5], prfKeys: row[6], icloudKeys: row[7], turnkeyKeys: row[8], unindexedFactors: row[9],
            badSyncFactors: row[10], firstBadSyncFactor: bad, malformedManifestHash: row[13], blobSize: row[14])
    }

    public func resolveLookup(tenant: TenantName, pk: String) throws(ConsoleError) -> LookupResolution? {
        try readOne("looking up a factor") { db in
            // The backup's existence is probed only when the metadata does not imply the key:
            // a backup_factors row exists only beside its backup (foreign key).
            let statement = try db.cachedStatement(
                sql: """
                    SELECT fl.backup_id, bf.factor_id,
                        CASE WHEN bf.factor_id IS NOT NULL THEN 1 ELSE EXISTS (
                            SELECT 1 FROM backup_summary s WHERE s.tenant = fl.tenant AND s.backup_id = fl.backup_id)
                        END
                    FROM factor_lookup fl
                    LEFT JOIN backup_factors bf
                        ON bf.tenant = fl.tenant AND bf.backup_id = fl.backup_id AND bf.pk = fl.pk
                    WHERE fl.tenant = ? AND fl.pk = ?
                    """)
            // Two text arguments for two placeholders: GRDB's argument validation is redundant here.
            statement.setUncheckedArguments([tenant.rawValue, pk])
            return try Row.fetchOne(statement).map {
                LookupResolution(backupId: $0[0], backupExists: $0[2], factorId: $0[1])
            }
        }
    }

    public func forEachBackupSummary(
        tenant: TenantName, batchSize: Int, _ body: ([BackupSummary]) throws(ConsoleError) -> Void
    ) throws(ConsoleError) {
        try paginate(after: "") { (last: String) throws(ConsoleError) -> ([BackupSummary], String?) in
            let page = try read("listing backup summaries") { db in
                try Self.summaries(db, tenant: tenant.rawValue, after: last, limit: Self.clampBatch(batchSize))
            }
            if !page.isEmpty { try body(page) }
            return (page, page.last?.backupId)
        }
    }

    public func forEachBackupHealth(
        tenant: TenantName, batchSize: Int, _ body: ([BackupHealthRow]) throws(ConsoleError) -> Void
    ) throws(ConsoleError) {
        try paginate(after: "") { (last: String) throws(ConsoleError) -> ([BackupHealthRow], String?) in
            let page = try read("checking backups") { db in
                try Self.healthPage(db, tenant: tenant.rawValue, after: last, limit: Self.clampBatch(batchSize))
            }
            if !page.isEmpty { try body(page) }
            return (page, page.last?.summary.backupId)
        }
    }

    static func summaries(_ db: Database, tenant: String, after: String, limit: Int) throws -> [BackupSummary] {
        var out: [BackupSummary] = []
        out.reserveCapacity(limit)
        let cursor = try Row.fetchCursor(
            db.cachedStatement(
                sql: """
                    SELECT \(summaryColumns) FROM backup_summary
                    WHERE tenant = ? AND backup_id > ? ORDER BY backup_id LIMIT ?
                    """),
            arguments: [tenant, after, limit])
        while let row = try cursor.next() { out.append(summary(row)) }
        return out
    }

    /// One page of summaries, and the page's drift computed set-wise: index rows of these
    /// backups their metadata does not imply, and implied keys the index does not map to them
    /// (with the backup it maps them to instead). Both probes walk the backups in key order,
    /// so they stay in cache; only drifted keys cost a probe by key.
    static func healthPage(_ db: Database, tenant t: String, after: String, limit: Int) throws -> [BackupHealthRow] {
        var rows = try summaries(db, tenant: t, after: after, limit: limit).map { BackupHealthRow(summary: $0) }
        guard let upTo = rows.last?.summary.backupId else { return [] }
        var positions: [String: Int]?
        /// The page slot of a backup; rows of backups outside the page (dangling) are ignored.
        func slot(_ id: String) -> Int? {
            if positions == nil {
                positions = Dictionary(
                    rows.enumerated().map { ($1.summary.backupId, $0) }, uniquingKeysWith: { first, _ in first })
            }
            return positions?[id]
        }
        let unauthorized = try Row.fetchCursor(
            db.cachedStatement(
                sql: """
                    SELECT fl.backup_id, fl.pk FROM factor_lookup fl INDEXED BY factor_lookup_by_backup
                    WHERE fl.tenant = ?1 AND fl.backup_id > ?2 AND fl.backup_id <= ?3
                        AND NOT EXISTS (SELECT 1 FROM backup_factors bf
                            WHERE bf.tenant = fl.tenant AND bf.backup_id = fl.backup_id AND bf.pk = fl.pk)
                    ORDER BY fl.backup_id, fl.pk
                    """),
            arguments: [t, after, upTo])
        while let row = try unauthorized.next() {
            if let i = slot(row[0]) { rows[i].unauthorizedKeys.append(row[1]) }
        }
        let unindexed = try Row.fetchCursor(
            db.cachedStatement(
                sql: """
                    SELECT bf.backup_id, bf.pk, bf.copies,
                        (SELECT o.backup_id FROM factor_lookup o WHERE o.tenant = bf.tenant AND o.pk = bf.pk)
                    FROM backup_factors bf
                    WHERE bf.tenant = ?1 AND bf.backup_id > ?2 AND bf.backup_id <= ?3
                        AND NOT EXISTS (SELECT 1 FROM factor_lookup fl INDEXED BY factor_lookup_by_backup
                            WHERE fl.tenant = bf.tenant AND fl.backup_id = bf.backup_id AND fl.pk = bf.pk)
                    ORDER BY bf.backup_id, bf.position
                    """),
            arguments: [t, after, upTo])
        while let row = try unindexed.next() {
            guard let i = slot(row[0]) else { continue }
            rows[i].unindexedKeys.append(UnindexedKey(pk: row[1], copies: row[2], owner: row[3]))
        }
        return rows
    }
}
