import BackupCrypto
import BackupModel
import ConsoleStore
import Foundation
import PostgresNIO

/// The console's persistent state in PostgreSQL: the same operations, errors and audit chain as
/// ``SQLiteConsoleStore``, for several servers sharing one database.
///
/// Every mutation appends its chained audit entry in the same transaction as the change. The
/// chain stays one gap-free sequence across processes because every append first takes a
/// transaction-level advisory lock (``auditLockKey``) and only then reads the head: writers of
/// the audit queue on it, and each reads the head its predecessor committed.
public final class PostgresConsoleStore: Sendable {
    /// `pg_advisory_xact_lock` key of the audit chain ("bkupctla" in ASCII).
    static let auditLockKey: Int64 = 0x626B_7570_6374_6C61

    public let database: PostgresStoreDatabase
    /// Unix milliseconds of audit entries, injected so tests control audit times.
    let clock: @Sendable () -> Int64

    init(database: PostgresStoreDatabase, clock: @escaping @Sendable () -> Int64) {
        self.database = database
        self.clock = clock
    }

    /// Migrates `database` (``PostgresMigrator``) and returns the store on it.
    /// - Parameter clock: unix milliseconds, injected so tests control audit times.
    /// - Throws: ``ConsoleError`` as ``PostgresMigrator/migrate(_:)`` does.
    public static func open(
        _ database: PostgresStoreDatabase,
        clock: @escaping @Sendable () -> Int64 = { Int64((Date().timeIntervalSince1970 * 1000).rounded()) }
    ) async throws(ConsoleError) -> PostgresConsoleStore {
        try await PostgresMigrator.migrate(database)
        return PostgresConsoleStore(database: database, clock: clock)
    }

    // MARK: Transactions and rows

    /// Runs `body` in one transaction (committed when it returns, rolled back when it throws).
    func write<T: Sendable>(
        _ what: @autoclosure () -> String, _ body: (PostgresConnection) async throws -> T
    ) async throws(ConsoleError) -> T {
        try await database.withTransaction(what(), body)
    }

    /// Runs `body` in one read-only repeatable-read transaction: every statement sees the same
    /// snapshot, as a SQLite read transaction does.
    func snapshot<T: Sendable>(
        _ what: @autoclosure () -> String, _ body: (PostgresConnection) async throws -> T
    ) async throws(ConsoleError) -> T {
        try await database.withTransaction(what()) { connection in
            try await connection.query(
                "SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY", logger: database.logger)
            return try await body(connection)
        }
    }

    /// Runs `body` on a leased connection outside a transaction (each statement sees committed data).
    func read<T: Sendable>(
        _ what: @autoclosure () -> String, _ body: (PostgresConnection) async throws -> T
    ) async throws(ConsoleError) -> T {
        try await database.withConnection(what(), body)
    }

    /// The rows of `query`, each made into a `T` by `transform`.
    func all<T>(
        _ query: PostgresQuery, _ connection: PostgresConnection, _ transform: (PostgresRandomAccessRow) throws -> T
    ) async throws -> [T] {
        var result: [T] = []
        for try await row in try await connection.query(query, logger: database.logger) {
            result.append(try transform(row.makeRandomAccess()))
        }
        return result
    }

    /// The first row of `query`, if any, made into a `T` by `transform`.
    func first<T>(
        _ query: PostgresQuery, _ connection: PostgresConnection, _ transform: (PostgresRandomAccessRow) throws -> T
    ) async throws -> T? {
        for try await row in try await connection.query(query, logger: database.logger) {
            return try transform(row.makeRandomAccess())
        }
        return nil
    }

    /// Whether `query` returns a row (`… RETURNING` of a change: whether it changed one).
    func exists(_ query: PostgresQuery, _ connection: PostgresConnection) async throws -> Bool {
        try await first(query, connection) { _ in true } ?? false
    }

    /// Runs `query` and drops its rows.
    func execute(_ query: PostgresQuery, _ connection: PostgresConnection) async throws {
        try await connection.query(query, logger: database.logger)
    }
}
