import BackupModel
import Foundation
import PostgresNIO
import PostgresStore

/// A PostgreSQL database of one test's own (`t_<random>`), on the private cluster `make test`
/// starts (scripts/pg-test-cluster.sh), whose URL it reads from `BACKUPCTL_TEST_POSTGRES` (and
/// the CA of its TLS certificate from `BACKUPCTL_TEST_POSTGRES_CA`).
///
/// Tests that need PostgreSQL carry `.enabled(if: PostgresTestDatabase.enabled, …)`: without the
/// variable they are skipped with a message saying how to run them, except under CI (`CI` set),
/// where ``make(_:)`` throws so that the test fails: CI must run them.
public struct PostgresTestDatabase: Sendable {
    /// The cluster's URL (`postgres://backupctl:…@127.0.0.1:PORT/postgres`), when set.
    public static let serverURL = ProcessInfo.processInfo.environment["BACKUPCTL_TEST_POSTGRES"]
    /// The PEM file of the CA that signed the cluster's certificate (for the name localhost only).
    public static let caFile = ProcessInfo.processInfo.environment["BACKUPCTL_TEST_POSTGRES_CA"]
    /// Whether PostgreSQL tests run: the cluster is there, or CI requires it.
    public static let enabled = serverURL != nil || ProcessInfo.processInfo.environment["CI"] != nil
    /// Why they were skipped.
    public static let skipped =
        "needs PostgreSQL: run `make test`, or scripts/pg-test-cluster.sh run -- swift test --skip-build"

    public enum Failure: Error, CustomStringConvertible {
        case noCluster

        public var description: String {
            "CI is set but BACKUPCTL_TEST_POSTGRES is not: run the tests through scripts/pg-test-cluster.sh"
        }
    }

    /// The database's name, `t_` and 16 hex digits.
    public let name: String
    /// Its URL on the cluster (with the cluster's generated password).
    public let url: String

    /// Creates a database (`CREATE DATABASE t_… options`, e.g. a locale), runs `body` with it and
    /// drops it, whether `body` threw or not.
    /// - Throws: ``Failure/noCluster`` when the variable is unset (reached only under CI).
    public static func make<T: Sendable>(
        options: String = "", _ body: (PostgresTestDatabase) async throws -> T
    ) async throws -> T {
        guard let serverURL else { throw Failure.noCluster }
        let name = "t_" + String(format: "%016llx", UInt64.random(in: .min ... .max))
        try await PostgresAdmin.execute("CREATE DATABASE \(name) \(options)", on: serverURL)
        let database = PostgresTestDatabase(name: name, url: try PostgresAdmin.url(serverURL, database: name))
        do {
            let result = try await body(database)
            try await PostgresAdmin.execute("DROP DATABASE \(name) WITH (FORCE)", on: serverURL)
            return result
        } catch {
            try? await PostgresAdmin.execute("DROP DATABASE \(name) WITH (FORCE)", on: serverURL)
            throw error
        }
    }

    /// The store configuration of this database; `query` is appended to its URL (`pool_size=2`).
    public func configuration(query: String? = nil) throws -> PostgresStoreConfiguration {
        try PostgresStoreConfiguration(url: query.map { "\(url)?\($0)" } ?? url, environment: [:])
    }
}
