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
        _ body: (any FullConsoleStore) async throws -> T
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
                let database = PostgresStoreDatabase(
                    configuration: try testDatabase.configuration(query: "pool_size=4"))
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

extension TestBackend {
    /// Opens a new, migrated store of this backend for a fixture that outlives one closure; the
    /// store goes (its file, or its database) when the returned value does.
    public func open(clock: @escaping @Sendable () -> Int64, checkpoints: StoreCheckpoints = .none) async throws
        -> OpenedStore
    {
        switch self {
        case .sqlite: return try Self.openSQLite(clock: clock, checkpoints: checkpoints)
        case .postgres:
            guard let server = PostgresTestDatabase.serverURL else { throw PostgresTestDatabase.Failure.noCluster }
            let name = "t_" + String(format: "%016llx", UInt64.random(in: .min ... .max))
            try await PostgresAdmin.execute("CREATE DATABASE \(name)", on: server)
            let url = try PostgresAdmin.url(server, database: name)
            let database = PostgresStoreDatabase(
                configuration: try PostgresStoreConfiguration(url: url + "?pool_size=2", environment: [:]))
            let drop: @Sendable () async -> Void = {
                await database.shutdown()
                try? await PostgresAdmin.execute("DROP DATABASE IF EXISTS \(name) WITH (FORCE)", on: server)
            }
            do {
                try await database.start()
                let store = try await PostgresConsoleStore.open(database, clock: clock, checkpoints: checkpoints)
                return OpenedStore(store: store, location: url, close: drop)
            } catch {
                await drop()
                throw error
            }
        }
    }
}

extension TestBackend {
    /// A new SQLite store in a temporary directory of its own, removed with the returned value.
    public static func openSQLite(clock: @escaping @Sendable () -> Int64, checkpoints: StoreCheckpoints = .none)
        throws -> OpenedStore
    {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("store-\(UUID().uuidString)")
        let path = directory.appendingPathComponent("console.db").path
        let store = try SQLiteConsoleStore(path: path, clock: clock, checkpoints: checkpoints)
        return OpenedStore(store: store, location: path) { try? FileManager.default.removeItem(at: directory) }
    }
}

/// A store a fixture holds (``TestBackend/open(clock:checkpoints:)``): removed, or its database
/// dropped, when the last reference goes.
public final class OpenedStore: Sendable {
    public let store: any FullConsoleStore
    /// The SQLite file's path, or the database's URL.
    public let location: String
    private let close: @Sendable () async -> Void

    init(store: any FullConsoleStore, location: String, close: @escaping @Sendable () async -> Void) {
        self.store = store
        self.location = location
        self.close = close
    }

    deinit {
        let close = self.close
        Task { await close() }
    }
}
