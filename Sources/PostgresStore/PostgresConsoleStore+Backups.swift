import BackupModel
import ConsoleStore
import Foundation
import PostgresNIO

/// Where PostgreSQL overrides the shared rules for backups: lookups as statements prepared once
/// on the hot-path connection, and batch writes through `COPY`.
extension PostgresConsoleStore {
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

    /// ``ResolveStatement`` for many keys in one statement (one state of the store, one round
    /// trip), each row naming its key.
    struct ResolveManyStatement: PostgresPreparedStatement {
        static let name = "backupctl_resolve_lookups"
        static let sql = """
            SELECT fl.pk, fl.backup_id, bf.factor_id,
                CASE WHEN bf.factor_id IS NOT NULL THEN TRUE ELSE EXISTS (
                    SELECT 1 FROM backup_summary s WHERE s.tenant = fl.tenant AND s.backup_id = fl.backup_id)
                END
            FROM factor_lookup fl
            LEFT JOIN backup_factors bf ON bf.tenant = fl.tenant AND bf.backup_id = fl.backup_id AND bf.pk = fl.pk
            WHERE fl.tenant = $1 AND fl.pk = ANY($2)
            """
        typealias Row = (String, LookupResolution)
        var tenant: String
        var pks: [String]

        func makeBindings() throws -> PostgresBindings {
            var bindings = PostgresBindings(capacity: 2)
            bindings.append(tenant)
            bindings.append(pks)
            return bindings
        }

        func decodeRow(_ row: PostgresRow) throws -> (String, LookupResolution) {
            let (pk, backupId, factorId, exists) = try row.decode((String, String, String?, Bool).self)
            return (pk, LookupResolution(backupId: backupId, backupExists: exists, factorId: factorId))
        }
    }

    public func resolveLookups(tenant: TenantName, pks: [String]) async throws(ConsoleError)
        -> [String: LookupResolution]
    {
        guard !pks.isEmpty else { return [:] }
        let statement = ResolveManyStatement(tenant: tenant.rawValue, pks: Array(Set(pks)))
        return try await database.withHotConnection("looking up factors") { connection in
            var found: [String: LookupResolution] = [:]
            for try await (pk, resolution) in try await connection.execute(statement, logger: database.logger) {
                found[pk] = resolution
            }
            return found
        }
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
        try await driver.transaction(what) { session in
            try await PostgresBackupCopy.write(prepared, on: session.connection, logger: database.logger)
            _ = try await appendChained(audit, session)
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
