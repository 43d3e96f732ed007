import BackupModel
import Foundation
import PostgresNIO

/// Statements outside any store: making and dropping databases (tests, benchmarks, set-up).
public enum PostgresAdmin {
    /// `serverURL` naming database `database` instead (its query parameters dropped).
    /// - Throws: `usage` when `serverURL` is not a URL.
    public static func url(_ serverURL: String, database: String) throws(ConsoleError) -> String {
        guard var parts = URLComponents(string: serverURL) else {
            throw ConsoleError.usage("The PostgreSQL URL cannot name another database.")
        }
        parts.path = "/" + database
        parts.query = nil
        guard let url = parts.string else {
            throw ConsoleError.usage("The PostgreSQL URL cannot name another database.")
        }
        return url
    }

    /// Runs one statement outside a transaction (`CREATE DATABASE`, `DROP DATABASE`) on a
    /// connection of its own to `serverURL`. The statement is trusted text: never a value.
    public static func execute(_ sql: String, on serverURL: String) async throws(ConsoleError) {
        let database = PostgresStoreDatabase(
            configuration: try PostgresStoreConfiguration(url: serverURL, environment: [:]))
        try await database.start()
        do {
            try await database.withConnection("running \(sql.prefix(40))") { connection in
                _ = try await connection.query(PostgresQuery(unsafeSQL: sql), logger: database.logger)
            }
        } catch {
            await database.shutdown()
            throw error
        }
        await database.shutdown()
    }
}
