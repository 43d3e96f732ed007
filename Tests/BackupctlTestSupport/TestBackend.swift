import BackupModel
import ConsoleStore
import Foundation
import PostgresStore
import SQLiteStore

/// The backends a store-level or service-level suite runs on: the same test, the same
/// expectations, once per backend (`@Test(arguments: TestBackend.available)`).
///
/// PostgreSQL is there when the test cluster is (`scripts/pg-test-cluster.sh run -- swift test …`)
/// and always under CI, where a missing cluster fails the test (``PostgresTestDatabase``).
public enum TestBackend: String, Sendable, CaseIterable, CustomStringConvertible {
    case sqlite
    case postgres

    /// SQLite always; PostgreSQL with the test cluster, or under CI.
    public static let available: [TestBackend] = PostgresTestDatabase.enabled ? [.sqlite, .postgres] : [.sqlite]

    public var description: String { rawValue }

    /// Runs `body` with a new, migrated store of this backend (a file in a temporary directory, or
    /// a database of its own), removed afterwards.
    /// - Parameter clock: unix milliseconds of audit entries.
    public func withStore<T: Sendable>(
        clock: @escaping @Sendable () -> Int64 = { 1_780_000_000_000 }, checkpoints: StoreCheckpoints = .none,
        _ body: (any CleanupQueueStore) async throws -> T
    ) async throws -> T {
        switch self {
        case .sqlite:
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("store-\(UUID().uuidString)")
            defer { try? FileManager.default.removeItem(at: directory) }
            let store = try SQLiteConsoleStore(
                path: directory.appendingPathComponent("console.db").path, clock: clock, checkpoints: checkpoints)
            return try await body(store)
        case .postgres:
            return try await PostgresTestDatabase.make { testDatabase in
                let database = PostgresStoreDatabase(configuration: try testDatabase.configuration(query: "pool_size=4"))
                try await database.start()
                do {
                    let store = try await PostgresConsoleStore.open(database, clock: clock, checkpoints: checkpoints)
                    let result = try await body(store)
                    await database.shutdown()
                    return result
                } catch {
                    await database.shutdown()
                    throw error
                }
            }
        }
    }
}

/// Runs `statement` in a transaction of `store`'s own driver and returns its rows: a test's
/// direct look at (or change to) the tables, the same SQL on every backend.
public func storeSQL(_ store: any ConsoleStore, _ statement: SQLStatement) async throws -> [SQLRow] {
    guard let ruled = store as? any SQLRuleStore else {
        throw ConsoleError.internalError("The store under test does not run the shared rules.")
    }
    return try await run(statement, on: ruled)
}

private func run<Store: SQLRuleStore>(_ statement: SQLStatement, on store: Store) async throws -> [SQLRow] {
    try await store.driver.transaction("running a test's statement") { session in try await session.query(statement) }
}
