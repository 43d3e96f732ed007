import Foundation
import PostgresStore

/// A PostgreSQL database of one suite's own on the private cluster of `make bench`
/// (`BACKUPCTL_TEST_POSTGRES`), made for the suite and dropped after it, its pool started.
enum BenchDatabase {
    static let missing: [String: BenchValue] = [
        "error": .text("needs PostgreSQL: make bench runs it beside a private cluster")
    ]

    /// Runs `body` with a fresh database (its URL and started pool), then drops it; without a
    /// cluster, returns ``missing``.
    static func with(
        _ body: (_ url: String, _ database: PostgresStoreDatabase) async throws -> [String: BenchValue]
    ) async throws -> [String: BenchValue] {
        guard let serverURL = ProcessInfo.processInfo.environment["BACKUPCTL_TEST_POSTGRES"] else { return missing }
        let name = "bench_" + String(format: "%016llx", UInt64.random(in: .min ... .max))
        try await PostgresAdmin.execute("CREATE DATABASE \(name)", on: serverURL)
        let url = try PostgresAdmin.url(serverURL, database: name)
        let database = PostgresStoreDatabase(configuration: try PostgresStoreConfiguration(url: url, environment: [:]))
        do {
            try await database.start()
            let figures = try await body(url, database)
            await database.shutdown()
            try await PostgresAdmin.execute("DROP DATABASE \(name) WITH (FORCE)", on: serverURL)
            return figures
        } catch {
            await database.shutdown()
            try? await PostgresAdmin.execute("DROP DATABASE \(name) WITH (FORCE)", on: serverURL)
            throw error
        }
    }
}
