import BackupModel
import ConsoleStore
import Foundation
import PostgresNIO

/// Backups, the FactorLookup index and sub-org references: the same answers as
/// ``SQLiteConsoleStore``, in the same order (text keys are `COLLATE "C"`).
extension PostgresConsoleStore {
    static let backupColumns = "backup_id, metadata, blob_size, blob_sha256, imported_at, updated_at"

    static func backupRecord(_ row: PostgresRandomAccessRow) throws -> BackupRecord {
        let id = try row["backup_id"].decode(String.self)
        let metadata: BackupMetadata
        do {
            metadata = try BackupMetadata.decode(Data(try row["metadata"].decode(String.self).utf8))
        } catch let error as ConsoleError {
            throw ConsoleError.internalError("Backup \(id) has unreadable metadata in the store: \(error.message)")
        }
        return BackupRecord(
            backupId: id, metadata: metadata, blobSize: try row["blob_size"].decode(Int?.self),
            blobSHA256: try row["blob_sha256"].decode(String?.self),
            importedAt: try row["imported_at"].decode(Int64.self), updatedAt: try row["updated_at"].decode(Int64.self))
    }

    /// A page size between 1 and 100,000, as SQLite's.
    static func clampBatch(_ size: Int) -> Int { min(max(size, 1), 100_000) }

    public func backup(tenant: TenantName, id: String) async throws(ConsoleError) -> BackupRecord? {
        try await read("reading backup \(id)") { connection in
            try await first(
                """
                SELECT \(unescaped: Self.backupColumns) FROM backups
                WHERE tenant = \(tenant.rawValue) AND backup_id = \(id)
                """, connection, Self.backupRecord)
        }
    }

    public func backupExists(tenant: TenantName, id: String) async throws(ConsoleError) -> Bool {
        try await read("checking backup \(id)") { connection in
            try await exists(
                "SELECT 1 FROM backups WHERE tenant = \(tenant.rawValue) AND backup_id = \(id)", connection)
        }
    }

    public func backupCount(tenant: TenantName) async throws(ConsoleError) -> Int {
        try await read("counting backups") { connection in
            try await first("SELECT count(*) FROM backups WHERE tenant = \(tenant.rawValue)", connection) {
                try $0[0].decode(Int.self)
            } ?? 0
        }
    }

    public func backupIds(tenant: TenantName, prefix: String, limit: Int) async throws(ConsoleError) -> [String] {
        try await read("listing backup ids") { connection in
            // Every id is ASCII, so "prefix" ≤ id < "prefix\u{7F}" is exactly the ids starting with it.
            try await all(
                """
                SELECT backup_id FROM backups
                WHERE tenant = \(tenant.rawValue) AND backup_id >= \(prefix) AND backup_id < \(prefix + "\u{7F}")
                ORDER BY backup_id LIMIT \(max(0, limit))
                """, connection
            ) { try $0[0].decode(String.self) }
        }
    }

    /// Every backup id of the tenant, in id order.
    public func backupIds(tenant: TenantName) async throws(ConsoleError) -> [String] {
        try await read("listing backup ids") { connection in
            try await all(
                "SELECT backup_id FROM backups WHERE tenant = \(tenant.rawValue) ORDER BY backup_id", connection
            ) { try $0[0].decode(String.self) }
        }
    }

    public func backups(tenant: TenantName, after: String?, limit: Int) async throws(ConsoleError) -> [BackupRecord] {
        try await read("listing backups") { connection in
            try await all(
                """
                SELECT \(unescaped: Self.backupColumns) FROM backups
                WHERE tenant = \(tenant.rawValue) AND backup_id > \(after ?? "") ORDER BY backup_id
                LIMIT \(Self.clampBatch(limit))
                """, connection, Self.backupRecord)
        }
    }

    public func sealedBlob(tenant: TenantName, backupId: String) async throws(ConsoleError) -> Data? {
        try await read("reading the sealed blob of \(backupId)") { connection in
            try await first(
                "SELECT bytes FROM sealed_blobs WHERE tenant = \(tenant.rawValue) AND backup_id = \(backupId)",
                connection
            ) { try $0[0].decode(Data.self) }
        }
    }

    // MARK: FactorLookup

    /// The lookup statement, `$1` the tenant and `$2` the key (the bench sends the same SQL
    /// through `psql`).
    public static let lookupSQL = "SELECT backup_id FROM factor_lookup WHERE tenant = $1 AND pk = $2"

    /// ``lookupSQL`` as a statement prepared once on the hot-path connection: the hot path of a
    /// support session, one round trip without a parse.
    public struct LookupStatement: TenantKeyStatement {
        public static let name = "backupctl_lookup"
        public static let sql = PostgresConsoleStore.lookupSQL
        public typealias Row = String
        public var tenant: String
        public var pk: String

        public init(tenant: String, pk: String) {
            self.tenant = tenant
            self.pk = pk
        }

        public func decodeRow(_ row: PostgresRow) throws -> String { try row.decode(String.self) }
    }

    public func lookup(tenant: TenantName, pk: String) async throws(ConsoleError) -> LookupRow? {
        let backupId = try await prepared("looking up a factor", LookupStatement(tenant: tenant.rawValue, pk: pk))
        return backupId.map { LookupRow(pk: pk, backupId: $0) }
    }

    /// What the index answers for a key, checked in the same statement against the keys its
    /// backup's metadata implies; the backup's existence is probed only when the metadata does
    /// not imply the key (a `backup_factors` row exists only beside its backup).
    struct ResolveStatement: TenantKeyStatement {
        static let name = "backupctl_resolve_lookup"
        static let sql = """
            SELECT fl.backup_id, bf.factor_id,
                CASE WHEN bf.factor_id IS NOT NULL THEN TRUE ELSE EXISTS (
                    SELECT 1 FROM backup_summary s WHERE s.tenant = fl.tenant AND s.backup_id = fl.backup_id)
                END
            FROM factor_lookup fl
            LEFT JOIN backup_factors bf ON bf.tenant = fl.tenant AND bf.backup_id = fl.backup_id AND bf.pk = fl.pk
            WHERE fl.tenant = $1 AND fl.pk = $2
            """
        typealias Row = LookupResolution
        var tenant: String
        var pk: String

        func decodeRow(_ row: PostgresRow) throws -> LookupResolution {
            let (backupId, factorId, exists) = try row.decode((String, String?, Bool).self)
            return LookupResolution(backupId: backupId, backupExists: exists, factorId: factorId)
        }
    }

    public func resolveLookup(tenant: TenantName, pk: String) async throws(ConsoleError) -> LookupResolution? {
        try await prepared("looking up a factor", ResolveStatement(tenant: tenant.rawValue, pk: pk))
    }

    /// The first row of a prepared statement, if any, on the database's hot-path connection
    /// (``PostgresStoreDatabase/withHotConnection(_:_:)``): no pool lease per lookup.
    func prepared<Statement: PostgresPreparedStatement>(_ what: @autoclosure () -> String, _ statement: Statement)
        async throws(ConsoleError) -> Statement.Row? where Statement.Row: Sendable
    {
        try await database.withHotConnection(what()) { connection in
            for try await row in try await connection.execute(statement, logger: database.logger) {
                return row
            }
            return nil
        }
    }

    public func lookupRows(tenant: TenantName, backupId: String) async throws(ConsoleError) -> [LookupRow] {
        try await read("reading the lookup rows of \(backupId)") { connection in
            try await all(
                """
                SELECT pk FROM factor_lookup WHERE tenant = \(tenant.rawValue) AND backup_id = \(backupId)
                ORDER BY pk
                """, connection
            ) { LookupRow(pk: try $0[0].decode(String.self), backupId: backupId) }
        }
    }

    public func lookupRows(tenant: TenantName, after: String?, limit: Int) async throws(ConsoleError) -> [LookupRow] {
        try await read("listing the factor index") { connection in
            try await all(
                """
                SELECT pk, backup_id FROM factor_lookup WHERE tenant = \(tenant.rawValue) AND pk > \(after ?? "")
                ORDER BY pk LIMIT \(Self.clampBatch(limit))
                """, connection
            ) { LookupRow(pk: try $0[0].decode(String.self), backupId: try $0[1].decode(String.self)) }
        }
    }

    // MARK: Writes

    public func writeBackup(tenant: TenantName, _ write: BackupWrite, audit: AuditDraft) async throws(ConsoleError) {
        try await copy(tenant: tenant, [write], audit: audit, what: "writing backup \(write.record.backupId)")
    }

    /// Writes the batch with `COPY` (``PostgresBackupCopy``) and its audit entry in one transaction.
    public func writeBackups(tenant: TenantName, _ writes: [BackupWrite], audit: AuditDraft) async throws(ConsoleError)
    {
        try await copy(tenant: tenant, writes, audit: audit, what: "writing \(writes.count) backups")
    }

    private func copy(tenant: TenantName, _ writes: [BackupWrite], audit: AuditDraft, what: String)
        async throws(ConsoleError)
    {
        let prepared = try PostgresBackupCopy.prepare(tenant: tenant, writes)
        // An unknown tenant fails on the foreign keys, with SQLite's `not_found`.
        try await write(what) { connection in
            try await PostgresBackupCopy.write(prepared, on: connection, logger: database.logger)
            _ = try await insertAudit(audit, connection)
        }
    }

    @discardableResult
    public func writeLookupRows(tenant: TenantName, _ rows: [LookupRow], audit: AuditDraft) async throws(ConsoleError)
        -> Int
    {
        for row in rows { try BackupWrite.checkKey(row.pk) }
        return try await write("writing \(rows.count) factor index rows") { connection in
            var changed = 0
            for row in rows {
                let upserted = try await exists(
                    """
                    INSERT INTO factor_lookup (tenant, pk, backup_id)
                    VALUES (\(tenant.rawValue), \(row.pk), \(row.backupId))
                    ON CONFLICT (tenant, pk) DO UPDATE SET backup_id = excluded.backup_id
                    WHERE factor_lookup.backup_id <> excluded.backup_id
                    RETURNING pk
                    """, connection)
                if upserted { changed += 1 }
            }
            _ = try await insertAudit(audit, connection)
            return changed
        }
    }

    // MARK: Sub-org references

    public func subOrgReference(tenant: TenantName, subOrgId: String) async throws(ConsoleError) -> String? {
        try await read("reading the references of sub-org \(subOrgId)") { connection in
            try await first(
                """
                SELECT backup_id FROM suborg_refs WHERE tenant = \(tenant.rawValue) AND suborg_id = \(subOrgId)
                ORDER BY backup_id LIMIT 1
                """, connection
            ) { try $0[0].decode(String.self) }
        }
    }

    public func referencedSubOrgs(tenant: TenantName, after: String?, limit: Int) async throws(ConsoleError)
        -> [String]
    {
        try await read("listing referenced sub-orgs") { connection in
            try await all(
                """
                SELECT DISTINCT suborg_id FROM suborg_refs WHERE tenant = \(tenant.rawValue)
                    AND suborg_id > \(after ?? "")
                ORDER BY suborg_id LIMIT \(Self.clampBatch(limit))
                """, connection
            ) { try $0[0].decode(String.self) }
        }
    }

    /// Which of `ids` some backup of the tenant references: one indexed statement.
    public func referencedSubOrgs(tenant: TenantName, among ids: [String]) async throws(ConsoleError) -> Set<String> {
        guard !ids.isEmpty else { return [] }
        return try await read("checking which sub-orgs are referenced") { connection in
            Set(
                try await all(
                    """
                    SELECT DISTINCT suborg_id FROM suborg_refs
                    WHERE tenant = \(tenant.rawValue) AND suborg_id = ANY(\(ids))
                    """, connection
                ) { try $0[0].decode(String.self) })
        }
    }
}

/// A prepared statement of one tenant and one key (`$1`, `$2`).
public protocol TenantKeyStatement: PostgresPreparedStatement {
    var tenant: String { get }
    var pk: String { get }
}

extension TenantKeyStatement {
    public func makeBindings() throws -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 2)
        bindings.append(tenant)
        bindings.append(pk)
        return bindings
    }
}
