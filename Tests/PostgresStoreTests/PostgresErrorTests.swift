import BackupModel
import BackupctlTestSupport
import Foundation
import Logging
import PostgresNIO
import Synchronization
import Testing

@testable import PostgresStore

/// What PostgreSQL refuses becomes the ConsoleError the SQLite store would give, and a server that
/// cannot be reached is `database_unavailable` naming host:port; no message holds the password.
@Suite(.enabled(if: PostgresTestDatabase.enabled, Comment(rawValue: PostgresTestDatabase.skipped)))
struct PostgresErrorTests {
    @Test func constraintViolationsMapAsInTheSQLiteStore() async throws {
        try await PostgresTestDatabase.make { testDatabase in
            try await withDatabase(testDatabase) { database in
                try await PostgresMigrator.migrate(database)
                try await execute(database, PostgresMigratorTests.insertTenant("alpha"))
                let duplicate = try await #require(throws: ConsoleError.self) {
                    try await execute(database, PostgresMigratorTests.insertTenant("alpha"))
                }
                #expect(duplicate.kind == .conflict && duplicate.code == "conflict")
                let dangling = try await #require(throws: ConsoleError.self) {
                    try await execute(database, "INSERT INTO grants (operator, tenant, role) VALUES ('x', 'alpha', 1)")
                }
                #expect(dangling.kind == .notFound)
                let badRole = try await #require(throws: ConsoleError.self) {
                    try await execute(database, PostgresMigratorTests.insertOperator("bob"))
                    try await execute(
                        database, "INSERT INTO grants (operator, tenant, role) VALUES ('bob', 'alpha', 9)")
                }
                #expect(badRole.code == "constraint_failed")
                let badJSON = try await #require(throws: ConsoleError.self) {
                    try await execute(
                        database,
                        "INSERT INTO tenants (name, is_sandbox, policy, created_at) VALUES ('b', TRUE, '{', 1)")
                }
                #expect(badJSON.code == "constraint_failed")
                try await execute(database, "UPDATE operators SET token_hash = 'same' WHERE name = 'bob'")
                let sameToken = try await #require(throws: ConsoleError.self) {
                    try await execute(
                        database,
                        "INSERT INTO operators (name, token_hash, can_create_tenants, created_at) VALUES ('c', 'same', FALSE, 1)"
                    )
                }
                #expect(sameToken.kind == .conflict)
                let password = try #require(URLComponents(string: testDatabase.url)?.password)
                for error in [duplicate, dangling, badRole, badJSON, sameToken] {
                    #expect(!error.message.contains(password))
                }
            }
        }
    }

    @Test func aWrongPasswordIsRefusedWithoutEchoingIt() async throws {
        try await PostgresTestDatabase.make { testDatabase in
            var parts = try #require(URLComponents(string: testDatabase.url))
            parts.password = "not-the-password"
            let database = PostgresStoreDatabase(
                configuration: try PostgresStoreConfiguration(url: try #require(parts.string), environment: [:]))
            let error = try await #require(throws: ConsoleError.self) { try await database.start() }
            #expect(error.code == "database_auth_failed" && error.kind == .remote)
            #expect(!error.message.contains("not-the-password"))
            await database.shutdown()
        }
    }

    @Test func aDatabaseThatDoesNotExistIsAConfigurationMistake() async throws {
        try await PostgresTestDatabase.make { testDatabase in
            var parts = try #require(URLComponents(string: testDatabase.url))
            parts.path = "/\(testDatabase.name)_missing"
            let database = PostgresStoreDatabase(
                configuration: try PostgresStoreConfiguration(url: try #require(parts.string), environment: [:]))
            let error = try await #require(throws: ConsoleError.self) { try await database.start() }
            #expect(
                error.kind == .configuration && error.code == "database_not_found"
                    && error.message.contains("does not exist"))
        }
    }

    @Test func theDatabaseRunsQueriesUntilItIsShutDownAndShutsDownTwice() async throws {
        try await PostgresTestDatabase.make { testDatabase in
            let database = PostgresStoreDatabase(configuration: try testDatabase.configuration(query: "pool_size=1"))
            try await database.start()
            try await database.start()
            #expect(try await rows(database, "SELECT 41 + 1", as: Int.self) == [42])
            await database.shutdown()
            await database.shutdown()
            let closed = try await #require(throws: ConsoleError.self) {
                try await rows(database, "SELECT 1", as: Int.self)
            }
            #expect(closed.code == "internal_error")
        }
    }
}

/// A server that is not there: no cluster needed.
@Suite struct PostgresUnreachableTests {
    @Test func aClosedPortIsUnavailableNamingHostAndPort() async throws {
        let port = try await closedPort()
        let database = PostgresStoreDatabase(
            configuration: try PostgresStoreConfiguration(
                url: "postgres://backupctl:s3cret@127.0.0.1:\(port)/postgres", environment: [:]))
        let error = try await #require(throws: ConsoleError.self) { try await database.start() }
        #expect(error.kind == .remote && error.code == "database_unavailable")
        #expect(error.message == "Cannot reach PostgreSQL at 127.0.0.1:\(port): connection refused.")
        await database.shutdown()
    }

    /// A loopback port that was free a moment ago: bound, read and closed.
    private func closedPort() async throws -> Int {
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .bind(host: "127.0.0.1", port: 0).get()
        let port = try #require(channel.localAddress?.port)
        try await channel.close()
        return port
    }
}

/// The pool's own warnings reach the operator's terminal: a command that leases a connection
/// right after ``PostgresStoreDatabase/start()`` must not find the pool not yet running (it
/// warned in about one command of two).
@Suite(.enabled(if: PostgresTestDatabase.enabled, Comment(rawValue: PostgresTestDatabase.skipped)))
struct PostgresStartTests {
    final class Lines: Sendable {
        let all = Mutex<[String]>([])
    }

    /// Keeps every message logged at warning or above.
    struct Capture: LogHandler {
        let lines: Lines
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .warning

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(event: LogEvent) {
            lines.all.withLock { $0.append("\(event.level) \(event.message)") }
        }
    }

    @Test func aQueryRightAfterStartFindsThePoolRunning() async throws {
        try await PostgresTestDatabase.make { testDatabase in
            let lines = Lines()
            let logger = Logger(label: "test") { _ in Capture(lines: lines) }
            // Each start races its first lease (a loaded run lost it once in 12): enough starts
            // that an unordered one shows.
            for _ in 0..<40 {
                let database = PostgresStoreDatabase(
                    configuration: try testDatabase.configuration(query: "pool_size=2"), logger: logger)
                try await database.start()
                try await execute(database, "SELECT 1")
                await database.shutdown()
            }
            let logged = lines.all.withLock { $0 }
            #expect(logged.isEmpty, "\(logged)")
        }
    }
}
