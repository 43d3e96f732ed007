import BackupCrypto
import BackupModel
import ConsoleStore
import Foundation
import PostgresNIO

/// The console's persistent state in PostgreSQL, for several servers sharing one database: the
/// shared rules (``SQLRuleStore``) over ``PostgresDriver``, so the operations, errors and audit
/// chain are the SQLite store's.
///
/// Every mutation appends its chained audit entry in the same transaction as the change. The
/// chain stays one gap-free sequence across processes because every append first takes a
/// transaction-level advisory lock (``auditLockKey``, the dialect's chain lock) and only then
/// reads the head. Overridden here, as PostgreSQL's own way: prepared lookups on a hot
/// connection, batch writes through `COPY`, claims with `SKIP LOCKED`, and the health page.
public final class PostgresConsoleStore: SQLRuleStore {
    /// `pg_advisory_xact_lock` key of the audit chain ("bkupctla" in ASCII).
    static let auditLockKey: Int64 = 0x626B_7570_6374_6C61

    public let database: PostgresStoreDatabase
    public let driver: PostgresDriver
    public let clock: @Sendable () -> Int64
    public let checkpoints: StoreCheckpoints
    public let auditGroup = AuditGroupCommit()

    init(database: PostgresStoreDatabase, clock: @escaping @Sendable () -> Int64, checkpoints: StoreCheckpoints) {
        self.database = database
        self.driver = PostgresDriver(database: database)
        self.clock = clock
        self.checkpoints = checkpoints
    }

    /// Migrates `database` (``PostgresMigrator``) and returns the store on it.
    /// - Parameter clock: unix milliseconds, injected so tests control audit times.
    /// - Parameter checkpoints: named points inside its transactions (crash tests).
    /// - Throws: ``ConsoleError`` as ``PostgresMigrator/migrate(_:)`` does.
    public static func open(
        _ database: PostgresStoreDatabase,
        clock: @escaping @Sendable () -> Int64 = { Int64((Date().timeIntervalSince1970 * 1000).rounded()) },
        checkpoints: StoreCheckpoints = .none
    ) async throws(ConsoleError) -> PostgresConsoleStore {
        try await PostgresMigrator.migrate(database)
        return PostgresConsoleStore(database: database, clock: clock, checkpoints: checkpoints)
    }
}
