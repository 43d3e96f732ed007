import BackupModel
import BackupctlTestSupport
import PostgresNIO
import Testing

@testable import PostgresStore

/// Migrations on a real PostgreSQL database of each test's own: applied once, in order, each in
/// its own transaction, by one of several processes starting at once.
@Suite(.enabled(if: PostgresTestDatabase.enabled, Comment(rawValue: PostgresTestDatabase.skipped)))
struct PostgresMigratorTests {
    static let tables: Set<String> = [
        "access_version", "audit", "audit_checkpoints", "backup_factors", "backup_summary", "backups",
        "cleanup_items", "cleanup_leases", "cleanup_stamped", "factor_lookup", "grants", "operators",
        "cleanup_rate", "reset_challenges", "sandbox_suborgs", "sandbox_used_tokens", "schema_migrations",
        "sealed_blobs", "snapshots", "suborg_refs", "tenants",
    ]

    @Test func anEmptyDatabaseGetsEverySchemaVersionOnceAndASecondRunDoesNothing() async throws {
        try await PostgresTestDatabase.make { testDatabase in
            try await withDatabase(testDatabase) { database in
                let all = PostgresMigrator.migrations.map(\.version)
                // Versions count up from 1 with no gap.
                #expect(all == Array(1...all.count) && all.count >= 5)
                #expect(try await PostgresMigrator.migrate(database) == all)
                #expect(try await tableNames(database) == Self.tables)
                #expect(try await PostgresMigrator.migrate(database) == [])
                let applied = try await PostgresMigrator.applied(database)
                #expect(
                    applied
                        == Dictionary(uniqueKeysWithValues: PostgresMigrator.migrations.map { ($0.version, $0.name) }))
                #expect(applied[1] == "schema" && applied[5] == "reset-send-claims")
            }
        }
    }

    @Test func twoServersMigratingAtOnceApplyEachVersionOnce() async throws {
        try await PostgresTestDatabase.make { testDatabase in
            try await withDatabase(testDatabase) { first in
                try await withDatabase(testDatabase) { second in
                    async let byFirst = PostgresMigrator.migrate(first)
                    async let bySecond = PostgresMigrator.migrate(second)
                    let (a, b) = try await (byFirst, bySecond)
                    let versions = PostgresMigrator.migrations.map(\.version)
                    #expect((a + b).sorted() == versions)
                    let counts = try await rows(
                        first, "SELECT version, count(*)::BIGINT FROM schema_migrations GROUP BY version",
                        as: (Int, Int).self)
                    #expect(counts.allSatisfy { $0.1 == 1 })
                    #expect(counts.map(\.0).sorted() == versions)
                }
            }
        }
    }

    @Test func aFailingMigrationLeavesNothingBehindAndIsNotRecorded() async throws {
        try await PostgresTestDatabase.make { testDatabase in
            try await withDatabase(testDatabase) { database in
                let broken = PostgresMigration(
                    version: 1, name: "broken",
                    statements: ["CREATE TABLE half_done (id INTEGER)", "CREATE TABLE half_done (id INTEGER)"])
                let error = try await #require(throws: ConsoleError.self) {
                    try await PostgresMigrator.migrate(database, migrations: [broken])
                }
                #expect(error.code == "internal_error" && error.message.contains("applying migration 1-broken"))
                #expect(try await PostgresMigrator.applied(database).isEmpty)
                #expect(try await !tableNames(database).contains("half_done"))
            }
        }
    }

    @Test func aDatabaseWithANewerSchemaIsRefused() async throws {
        try await PostgresTestDatabase.make { testDatabase in
            try await withDatabase(testDatabase) { database in
                try await PostgresMigrator.migrate(database)
                try await execute(database, "INSERT INTO schema_migrations (version, name) VALUES (99, 'future')")
                let error = try await #require(throws: ConsoleError.self) {
                    try await PostgresMigrator.migrate(database)
                }
                #expect(error.message.contains("schema version 99") && !error.message.contains(testDatabase.url))
            }
        }
    }

    /// SQLite's v7 as PL/pgSQL triggers: every row change to tenants, operators or grants moves
    /// the version; writes elsewhere, and updates that change no row, do not.
    @Test func theAccessVersionMovesWithTenantsOperatorsAndGrantsOnly() async throws {
        try await PostgresTestDatabase.make { testDatabase in
            try await withDatabase(testDatabase) { database in
                try await PostgresMigrator.migrate(database)
                var seen = try await accessVersion(database)
                #expect(seen == 0)
                func moves(_ sql: String) async throws -> Bool {
                    try await execute(database, sql)
                    let now = try await accessVersion(database)
                    defer { seen = now }
                    return now > seen
                }
                #expect(try await moves(Self.insertTenant("alpha")))
                #expect(try await moves(Self.insertOperator("bob")))
                #expect(try await moves("INSERT INTO grants (operator, tenant, role) VALUES ('bob', 'alpha', 1)"))
                #expect(try await moves("UPDATE grants SET role = 3 WHERE operator = 'bob'"))
                #expect(try await moves("UPDATE operators SET token_hash = 'rotated' WHERE name = 'bob'"))
                #expect(try await moves("UPDATE tenants SET backup_service_url = 'http://x' WHERE name = 'alpha'"))
                #expect(try await !moves("UPDATE operators SET token_hash = 'x' WHERE name = 'nobody'"))
                #expect(
                    try await !moves(
                        """
                        INSERT INTO backups (tenant, backup_id, metadata, manifest_hash, imported_at, updated_at)
                        VALUES ('alpha', 'b1', '{}', 'h', 1, 1)
                        """))
                #expect(
                    try await !moves(
                        """
                        INSERT INTO cleanup_items (tenant, suborg_id, reason, first_seen_at, state, updated_at)
                        VALUES ('alpha', 's1', 'orphan', 1, 'pending', 1)
                        """))
                #expect(
                    try await !moves(
                        """
                        INSERT INTO audit (seq, at, operator, tenant, action, details, prev_hash, hash)
                        VALUES (1, 1, 'bob', 'alpha', 'backup.show', '{}', repeat('0', 64), repeat('1', 64))
                        """))
                #expect(try await moves("DELETE FROM grants WHERE operator = 'bob'"))
                #expect(try await moves("DELETE FROM tenants WHERE name = 'alpha'"))
            }
        }
    }

    /// Keys sort bytewise as in SQLite ("B" before "a") even in a database whose locale sorts "a" first.
    @Test func keysSortBytewiseWhateverTheDatabaseLocale() async throws {
        let icu = "TEMPLATE template0 LOCALE_PROVIDER icu ICU_LOCALE 'en-US'"
        try await PostgresTestDatabase.make(options: icu) { testDatabase in
            try await withDatabase(testDatabase) { database in
                try await PostgresMigrator.migrate(database)
                try await execute(database, Self.insertTenant("a"))
                try await execute(database, Self.insertTenant("B"))
                let byLocale = try await rows(
                    database, "SELECT x FROM (VALUES ('a'), ('B')) v(x) ORDER BY x", as: String.self)
                #expect(byLocale == ["a", "B"])
                #expect(
                    try await rows(database, "SELECT name FROM tenants ORDER BY name", as: String.self) == ["B", "a"])
            }
        }
    }

    @Test func cleanupClaimsAreWholeOrAbsent() async throws {
        try await PostgresTestDatabase.make { testDatabase in
            try await withDatabase(testDatabase) { database in
                try await PostgresMigrator.migrate(database)
                try await execute(database, Self.insertTenant("alpha"))
                let item = """
                    INSERT INTO cleanup_items (tenant, suborg_id, reason, first_seen_at, state, updated_at, claimed_by)
                    VALUES ('alpha', 's1', 'orphan', 1, 'pending', 1, 'worker-1')
                    """
                let error = try await #require(throws: ConsoleError.self) { try await execute(database, item) }
                #expect(error.code == "constraint_failed")
                try await execute(
                    database,
                    """
                    INSERT INTO cleanup_items (tenant, suborg_id, reason, first_seen_at, state, updated_at,
                        claimed_by, lease_expires_at)
                    VALUES ('alpha', 's1', 'orphan', 1, 'pending', 1, 'worker-1', 30000)
                    """)
                let claimed = try await rows(
                    database,
                    """
                    SELECT suborg_id, claimed_by FROM cleanup_items WHERE tenant = 'alpha' AND state = 'pending'
                    ORDER BY suborg_id FOR UPDATE SKIP LOCKED
                    """, as: (String, String).self)
                #expect(claimed.map(\.1) == ["worker-1"])
            }
        }
    }

    static func insertTenant(_ name: String) -> String {
        "INSERT INTO tenants (name, is_sandbox, policy, created_at) VALUES ('\(name)', TRUE, '{}', 1)"
    }

    static func insertOperator(_ name: String) -> String {
        "INSERT INTO operators (name, token_hash, can_create_tenants, created_at) VALUES ('\(name)', '\(name)-h', FALSE, 1)"
    }

    private func accessVersion(_ database: PostgresStoreDatabase) async throws -> Int {
        try await rows(database, "SELECT version FROM access_version WHERE id = 1", as: Int.self).first ?? -1
    }

    private func tableNames(_ database: PostgresStoreDatabase) async throws -> Set<String> {
        Set(
            try await rows(
                database, "SELECT table_name::TEXT FROM information_schema.tables WHERE table_schema = 'public'",
                as: String.self))
    }
}

/// Runs `body` with a started database on `testDatabase` (pool of 2, then `query`'s parameters)
/// and shuts it down after.
func withDatabase<T: Sendable>(
    _ testDatabase: PostgresTestDatabase, query: String? = nil, _ body: (PostgresStoreDatabase) async throws -> T
) async throws -> T {
    let parameters = ["pool_size=2"] + (query.map { [$0] } ?? [])
    let database = PostgresStoreDatabase(
        configuration: try testDatabase.configuration(query: parameters.joined(separator: "&")))
    try await database.start()
    do {
        let result = try await body(database)
        await database.shutdown()
        return result
    } catch {
        await database.shutdown()
        throw error
    }
}

/// Runs one statement in its own transaction.
func execute(_ database: PostgresStoreDatabase, _ sql: String) async throws(ConsoleError) {
    try await database.withTransaction("running a test statement") { connection in
        _ = try await connection.query(PostgresQuery(unsafeSQL: sql), logger: database.logger)
    }
}

/// The rows of one query, decoded as `type`.
func rows<Row: PostgresDecodable & Sendable>(
    _ database: PostgresStoreDatabase, _ sql: String, as type: Row.Type
) async throws -> [Row] {
    try await database.withConnection("running a test query") { connection in
        var result: [Row] = []
        for try await row in try await connection.query(PostgresQuery(unsafeSQL: sql), logger: database.logger)
            .decode(Row.self)
        {
            result.append(row)
        }
        return result
    }
}

/// The rows of a two-column query.
func rows<A: PostgresDecodable & Sendable, B: PostgresDecodable & Sendable>(
    _ database: PostgresStoreDatabase, _ sql: String, as type: (A, B).Type
) async throws -> [(A, B)] {
    try await database.withConnection("running a test query") { connection in
        var result: [(A, B)] = []
        for try await row in try await connection.query(PostgresQuery(unsafeSQL: sql), logger: database.logger)
            .decode((A, B).self)
        {
            result.append(row)
        }
        return result
    }
}
