import BackupModel
import ConsoleStore
import Foundation
import GRDB

/// Reads over the derived index that override the shared rules for speed: the lookup that
/// refuses unauthorized factors, and the tenant-wide health scan (two merged range scans on raw
/// bytes), neither decoding metadata JSON.
extension SQLiteConsoleStore {
    static let summaryColumns = """
        backup_id, main_factors, sync_factors, passkeys, oidc_factors, keychain_factors, prf_keys, icloud_keys, \
        turnkey_keys, unindexed_factors, bad_sync_factors, bad_sync_factor_id, bad_sync_problem, \
        malformed_manifest_hash, blob_size
        """

    /// Where each ``summaryColumns`` column is in a statement's rows, found by name once per
    /// statement: the tenant-wide scan reads every summary, so rows are not searched by name.
    struct SummaryColumns {
        let backupId, mainFactors, syncFactors, passkeys, oidcFactors, keychainFactors, prfKeys: Int
        let icloudKeys, turnkeyKeys, unindexedFactors, badSyncFactors, badSyncFactorId, badSyncProblem: Int
        let malformedManifestHash, blobSize: Int

        init(_ statement: Statement) throws {
            let names = statement.columnNames
            func index(_ name: String) throws -> Int {
                guard let index = names.firstIndex(of: name) else {
                    throw ConsoleError.internalError("The backup summary query lacks the column \(name).")
                }
                return index
            }
            backupId = try index("backup_id")
            mainFactors = try index("main_factors")
            syncFactors = try index("sync_factors")
            passkeys = try index("passkeys")
            oidcFactors = try index("oidc_factors")
            keychainFactors = try index("keychain_factors")
            prfKeys = try index("prf_keys")
            icloudKeys = try index("icloud_keys")
            turnkeyKeys = try index("turnkey_keys")
            unindexedFactors = try index("unindexed_factors")
            badSyncFactors = try index("bad_sync_factors")
            badSyncFactorId = try index("bad_sync_factor_id")
            badSyncProblem = try index("bad_sync_problem")
            malformedManifestHash = try index("malformed_manifest_hash")
            blobSize = try index("blob_size")
        }
    }

    static func summary(_ row: Row, _ c: SummaryColumns) -> BackupSummary {
        let badId: String? = row[c.badSyncFactorId]
        let badCode: String? = row[c.badSyncProblem]
        var bad: BackupSummary.BadSyncFactor?
        if let badId, let badCode, let problem = SyncFactorProblem(code: badCode) {
            bad = BackupSummary.BadSyncFactor(factorId: badId, problem: problem)
        }
        return BackupSummary(
            backupId: row[c.backupId], mainFactors: row[c.mainFactors], syncFactors: row[c.syncFactors],
            passkeys: row[c.passkeys], oidcFactors: row[c.oidcFactors], keychainFactors: row[c.keychainFactors],
            prfKeys: row[c.prfKeys], icloudKeys: row[c.icloudKeys], turnkeyKeys: row[c.turnkeyKeys],
            unindexedFactors: row[c.unindexedFactors], badSyncFactors: row[c.badSyncFactors], firstBadSyncFactor: bad,
            malformedManifestHash: row[c.malformedManifestHash], blobSize: row[c.blobSize])
    }

    /// The statement of ``resolveLookup(tenant:pk:)``: the index row, the factor of the
    /// backup's metadata implying the key, and (only when none does) whether the backup exists
    /// — a `backup_factors` row exists only beside its backup (foreign key). `?1` the tenant,
    /// `?2` the key (the inspect bench runs the same text through the C API).
    public static let resolveSQL = """
        SELECT fl.backup_id, bf.factor_id,
            CASE WHEN bf.factor_id IS NOT NULL THEN 1 ELSE EXISTS (
                SELECT 1 FROM backup_summary s WHERE s.tenant = fl.tenant AND s.backup_id = fl.backup_id)
            END
        FROM factor_lookup fl
        LEFT JOIN backup_factors bf
            ON bf.tenant = fl.tenant AND bf.backup_id = fl.backup_id AND bf.pk = fl.pk
        WHERE fl.tenant = ? AND fl.pk = ?
        """

    public func resolveLookup(tenant: TenantName, pk: String) async throws(ConsoleError) -> LookupResolution? {
        try await readOne("looking up a factor") { db in
            // The backup's existence is probed only when the metadata does not imply the key:
            // a backup_factors row exists only beside its backup (foreign key).
            let cursor = try RawCursor(db, sql: Self.resolveSQL, texts: [tenant.rawValue, pk])
            defer { cursor.finish() }
            guard try cursor.step() else { return nil }
            return LookupResolution(
                backupId: cursor.string(0), backupExists: cursor.int(2) != 0, factorId: cursor.optionalString(1))
        }
    }

    /// One read transaction on one connection for every key, the statement of
    /// ``resolveLookup(tenant:pk:)`` run once per key: not one transaction, connection lease
    /// and page-cache check per key.
    public func resolveLookups(tenant: TenantName, pks: [String]) async throws(ConsoleError)
        -> [String: LookupResolution]
    {
        guard !pks.isEmpty else { return [:] }
        return try await readOne("looking up factors") { db in
            var found: [String: LookupResolution] = [:]
            // One state of the store for every key; nothing is written, so the transaction
            // ends with a commit, or a rollback on an error.
            try db.inTransaction(.deferred) {
                for pk in pks where found[pk] == nil {
                    let cursor = try RawCursor(db, sql: Self.resolveSQL, texts: [tenant.rawValue, pk])
                    defer { cursor.finish() }
                    guard try cursor.step() else { continue }
                    found[pk] = LookupResolution(
                        backupId: cursor.string(0), backupExists: cursor.int(2) != 0,
                        factorId: cursor.optionalString(1))
                }
                return .commit
            }
            return found
        }
    }

    public func backupHealth(tenant: TenantName, after: String?, limit: Int) async throws(ConsoleError)
        -> [BackupHealthRow]
    {
        try await readSnapshot("checking backups") { db in
            try Self.healthPage(db, tenant: tenant.rawValue, after: after ?? "", limit: Self.clampBatch(limit))
        }
    }

    static func summaries(_ db: Database, tenant: String, after: String, limit: Int) throws -> [BackupSummary] {
        var out: [BackupSummary] = []
        out.reserveCapacity(limit)
        let statement = try db.cachedStatement(
            sql: """
                SELECT \(summaryColumns) FROM backup_summary
                WHERE tenant = ? AND backup_id > ? ORDER BY backup_id LIMIT ?
                """)
        let columns = try SummaryColumns(statement)
        let cursor = try Row.fetchCursor(statement, arguments: [tenant, after, limit])
        while let row = try cursor.next() { out.append(summary(row, columns)) }
        return out
    }

    /// One page of summaries and the page's drift: index rows of these backups their metadata
    /// does not imply, and implied keys the index does not map to them (with the backup it maps
    /// them to instead).
    ///
    /// Both sides come sorted by (backup, key) from their primary orders — the index's
    /// `factor_lookup_by_backup` and `backup_factors`' key — and are merged here on the raw
    /// bytes of the current rows: two sequential range scans instead of an index probe per
    /// key, which was most of a tenant-wide check. Strings are made only for drifted keys,
    /// and only a key the index does not map to this backup costs a probe by key (its owner).
    static func healthPage(_ db: Database, tenant t: String, after: String, limit: Int) throws -> [BackupHealthRow] {
        var rows = try summaries(db, tenant: t, after: after, limit: limit).map { BackupHealthRow(summary: $0) }
        guard let upTo = rows.last?.summary.backupId else { return [] }
        let positions = Dictionary(
            rows.enumerated().map { ($1.summary.backupId, $0) }, uniquingKeysWith: { first, _ in first })
        let indexed = try RawCursor(
            db,
            sql: """
                SELECT backup_id, pk FROM factor_lookup INDEXED BY factor_lookup_by_backup
                WHERE tenant = ?1 AND backup_id > ?2 AND backup_id <= ?3 ORDER BY backup_id, pk
                """, arguments: [t, after, upTo])
        defer { indexed.finish() }
        let implied = try RawCursor(
            db,
            sql: """
                SELECT backup_id, pk, copies, position FROM backup_factors
                WHERE tenant = ?1 AND backup_id > ?2 AND backup_id <= ?3 ORDER BY backup_id, pk
                """, arguments: [t, after, upTo])
        defer { implied.finish() }
        var unindexed: [(slot: Int, position: Int64, key: UnindexedKey)] = []
        let owner = try db.cachedStatement(sql: "SELECT backup_id FROM factor_lookup WHERE tenant = ? AND pk = ?")
        var haveIndexed = try indexed.step()
        var haveImplied = try implied.step()
        while haveIndexed || haveImplied {
            let order: Int32
            if !haveIndexed {
                order = 1
            } else if !haveImplied {
                order = -1
            } else {
                let byBackup = RawCursor.compare(indexed.text(0), implied.text(0))
                order = byBackup != 0 ? byBackup : RawCursor.compare(indexed.text(1), implied.text(1))
            }
            if order < 0 {
                // An index row the metadata does not imply; rows of backups outside the page
                // (dangling ones) are not this page's concern.
                if let slot = positions[indexed.string(0)] { rows[slot].unauthorizedKeys.append(indexed.string(1)) }
                haveIndexed = try indexed.step()
            } else if order > 0 {
                if let slot = positions[implied.string(0)] {
                    let pk = implied.string(1)
                    let other = try String.fetchOne(owner, arguments: [t, pk])
                    unindexed.append(
                        (slot, implied.int(3), UnindexedKey(pk: pk, copies: Int(implied.int(2)), owner: other)))
                }
                haveImplied = try implied.step()
            } else {
                haveIndexed = try indexed.step()
                haveImplied = try implied.step()
            }
        }
        // Unindexed keys are reported in metadata order.
        for entry in unindexed.sorted(by: { ($0.slot, $0.position) < ($1.slot, $1.position) }) {
            rows[entry.slot].unindexedKeys.append(entry.key)
        }
        return rows
    }
}
