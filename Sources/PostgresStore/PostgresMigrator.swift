import BackupModel
import Logging
import PostgresNIO

/// One schema change: its statements run in one transaction, once per database.
public struct PostgresMigration: Sendable {
    public let version: Int
    public let name: String
    let statements: [String]

    init(version: Int, name: String, statements: [String]) {
        self.version = version
        self.name = name
        self.statements = statements
    }
}

/// Applies ``PostgresSchema/migrations`` that a database lacks, recording each in
/// `schema_migrations (version, name, applied_at)`.
///
/// Each migration runs in its own transaction, which first takes a transaction-level advisory
/// lock and re-reads `schema_migrations`: servers starting together queue on the lock, and the
/// later ones find the work done. A database whose schema is newer than this binary is refused.
public enum PostgresMigrator {
    /// `pg_advisory_xact_lock` key of migrations ("bkupctlm" in ASCII); other locks use other keys.
    static let lockKey: Int64 = 0x626B_7570_6374_6C6D

    /// The migrations this binary knows, oldest first.
    public static var migrations: [PostgresMigration] { PostgresSchema.migrations }

    /// Brings `database` up to date.
    /// - Returns: the versions this call applied (empty when another process or an earlier run had).
    /// - Throws: ``ConsoleError`` `database_unavailable`, `internal_error` when a migration fails
    ///   (it is rolled back) or the database knows versions this binary does not.
    @discardableResult
    public static func migrate(_ database: PostgresStoreDatabase) async throws(ConsoleError) -> [Int] {
        try await migrate(database, migrations: migrations)
    }

    /// ``migrate(_:)`` with another list (tests give one that fails).
    static func migrate(
        _ database: PostgresStoreDatabase, migrations: [PostgresMigration]
    ) async throws(ConsoleError) -> [Int] {
        try await database.withTransaction("creating the schema_migrations table") { connection in
            try await lock(connection, database.logger)
            try await connection.query(
                """
                CREATE TABLE IF NOT EXISTS schema_migrations (
                    version INTEGER PRIMARY KEY CHECK (version > 0),
                    name TEXT NOT NULL,
                    applied_at TIMESTAMPTZ NOT NULL DEFAULT now()
                )
                """, logger: database.logger)
        }
        let known = Set(migrations.map(\.version))
        let before = try await applied(database)
        if let newer = before.keys.filter({ !known.contains($0) }).max() {
            throw .internalError(
                "The PostgreSQL database \(database.configuration.redacted) has schema version \(newer), newer than "
                    + "this backupctl knows (\(known.max() ?? 0)); use a newer backupctl.")
        }
        var done: [Int] = []
        for migration in migrations where before[migration.version] == nil {
            let ran = try await database.withTransaction("applying migration \(migration.version)-\(migration.name)") {
                connection in
                try await lock(connection, database.logger)
                let rows = try await connection.query(
                    "SELECT 1 FROM schema_migrations WHERE version = \(migration.version)", logger: database.logger)
                for try await _ in rows { return false }
                for sql in migration.statements {
                    try await connection.query(PostgresQuery(unsafeSQL: sql), logger: database.logger)
                }
                try await connection.query(
                    "INSERT INTO schema_migrations (version, name) VALUES (\(migration.version), \(migration.name))",
                    logger: database.logger)
                return true
            }
            if ran {
                done.append(migration.version)
                database.logger.info(
                    "applied migration", metadata: ["version": "\(migration.version)", "name": "\(migration.name)"])
            }
        }
        return done
    }

    /// The recorded migrations, version to name.
    public static func applied(_ database: PostgresStoreDatabase) async throws(ConsoleError) -> [Int: String] {
        try await database.withConnection("reading schema_migrations") { connection in
            var result: [Int: String] = [:]
            let rows = try await connection.query(
                "SELECT version, name FROM schema_migrations", logger: database.logger)
            for try await (version, name) in rows.decode((Int, String).self) { result[version] = name }
            return result
        }
    }

    private static func lock(_ connection: PostgresConnection, _ logger: Logger) async throws {
        try await connection.query("SELECT pg_advisory_xact_lock(\(lockKey))", logger: logger)
    }
}
