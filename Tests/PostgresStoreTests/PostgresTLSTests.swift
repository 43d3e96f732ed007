import BackupModel
import BackupctlTestSupport
import Foundation
import Testing

@testable import PostgresStore

/// TLS to the database, against the test cluster's certificate (a CA of its own, for `localhost`
/// only): `require` encrypts without verifying, `verify-full` verifies the chain and the host name.
@Suite(.enabled(if: PostgresTestDatabase.enabled, Comment(rawValue: PostgresTestDatabase.skipped)))
struct PostgresTLSTests {
    static let encrypted = "SELECT ssl::TEXT FROM pg_stat_ssl WHERE pid = pg_backend_pid()"

    @Test func disableConnectsInTheClearAndRequireEncrypts() async throws {
        try await PostgresTestDatabase.make { testDatabase in
            try await withDatabase(testDatabase, query: "sslmode=disable") { database in
                let ssl = try await rows(database, Self.encrypted, as: String.self)
                #expect(ssl == ["false"])
            }
            try await withDatabase(testDatabase, query: "sslmode=require") { database in
                let ssl = try await rows(database, Self.encrypted, as: String.self)
                #expect(ssl == ["true"])
            }
        }
    }

    @Test func verifyFullAcceptsTheCertificateOfTheGivenCAForItsHostName() async throws {
        let ca = try #require(PostgresTestDatabase.caFile, "BACKUPCTL_TEST_POSTGRES_CA is unset")
        try await PostgresTestDatabase.make { testDatabase in
            let url = try Self.url(testDatabase, host: "localhost", query: "sslmode=verify-full&sslrootcert=\(ca)")
            let database = PostgresStoreDatabase(
                configuration: try PostgresStoreConfiguration(url: url, environment: [:]))
            try await database.start()
            let ssl = try await rows(database, Self.encrypted, as: String.self)
            await database.shutdown()
            #expect(ssl == ["true"])
        }
    }

    @Test func verifyFullRefusesAnUnknownCAAndAnotherHostName() async throws {
        let ca = try #require(PostgresTestDatabase.caFile, "BACKUPCTL_TEST_POSTGRES_CA is unset")
        try await PostgresTestDatabase.make { testDatabase in
            let password = try #require(URLComponents(string: testDatabase.url)?.password)
            for (url, why) in [
                (try Self.url(testDatabase, host: "localhost", query: "sslmode=verify-full"), "trusted root"),
                (
                    try Self.url(testDatabase, host: "127.0.0.1", query: "sslmode=verify-full&sslrootcert=\(ca)"),
                    "does not name this host"
                ),
            ] {
                let database = PostgresStoreDatabase(
                    configuration: try PostgresStoreConfiguration(url: url, environment: [:]))
                let error = try await #require(throws: ConsoleError.self) { try await database.start() }
                #expect(error.code == "tls_untrusted" && error.message.contains("TLS failed: "), "\(error)")
                #expect(error.message.contains(why), "\(error)")
                #expect(!error.message.contains(password))
                await database.shutdown()
            }
        }
    }

    /// The test database's URL with another host and these query parameters.
    private static func url(_ testDatabase: PostgresTestDatabase, host: String, query: String) throws -> String {
        var parts = try #require(URLComponents(string: testDatabase.url))
        parts.host = host
        return try #require(parts.string) + "?" + query
    }
}
