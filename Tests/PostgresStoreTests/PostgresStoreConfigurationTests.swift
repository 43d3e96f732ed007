import BackupModel
import Foundation
import NIOSSL
import Testing

@testable import PostgresStore

/// Database URLs: what parses into which settings, what is refused with a one-line `usage` error,
/// and that the password never shows in an error, a description or a dump. No server needed.
@Suite struct PostgresStoreConfigurationTests {
    struct Good: Sendable, CustomStringConvertible {
        let url: String
        let host: String
        let port: Int
        let user: String
        let database: String
        let sslMode: PostgresStoreConfiguration.SSLMode
        var poolSize = 10
        var applicationName = "backupctl"
        var queryTimeoutSeconds = 30
        var description: String { url }
    }

    static let good: [Good] = [
        Good(
            url: "postgres://app:s3cret@127.0.0.1:5433/console", host: "127.0.0.1", port: 5433, user: "app",
            database: "console", sslMode: .disable),
        Good(
            url: "postgresql://app@localhost/console?pool_size=4&application_name=worker-1", host: "localhost",
            port: 5432, user: "app", database: "console", sslMode: .disable, poolSize: 4,
            applicationName: "worker-1"),
        Good(
            url: "postgres://app:s3cret@[::1]:6000/console", host: "::1", port: 6000, user: "app",
            database: "console", sslMode: .disable),
        Good(
            url: "postgres://app:s3cret@db.example.com/console?sslmode=require", host: "db.example.com",
            port: 5432, user: "app", database: "console", sslMode: .require),
        Good(
            url: "postgres://app:s3cret@10.0.0.5:5432/console?sslmode=verify-full&sslrootcert=/etc/ca.pem",
            host: "10.0.0.5", port: 5432, user: "app", database: "console", sslMode: .verifyFull),
        Good(
            url: "postgres://app%40corp:s3%2Fcret@127.0.0.2/my%20db", host: "127.0.0.2", port: 5432,
            user: "app@corp", database: "my db", sslMode: .disable),
        Good(
            url: "postgres://app@127.0.0.1", host: "127.0.0.1", port: 5432, user: "app", database: "app",
            sslMode: .disable),
        Good(
            url: "postgres://app@127.0.0.1/console?query_timeout=5", host: "127.0.0.1", port: 5432, user: "app",
            database: "console", sslMode: .disable, queryTimeoutSeconds: 5),
        Good(
            url: "postgres://app@127.0.0.1/console?query_timeout=0", host: "127.0.0.1", port: 5432, user: "app",
            database: "console", sslMode: .disable, queryTimeoutSeconds: 0),
    ]

    @Test(arguments: good) func parses(_ good: Good) throws {
        let config = try PostgresStoreConfiguration(url: good.url, environment: [:])
        #expect(config.host == good.host)
        #expect(config.port == good.port)
        #expect(config.username == good.user)
        #expect(config.database == good.database)
        #expect(config.sslMode == good.sslMode)
        #expect(config.poolSize == good.poolSize)
        #expect(config.applicationName == good.applicationName)
        #expect(config.queryTimeoutSeconds == good.queryTimeoutSeconds)
        let client = config.clientConfiguration
        #expect(client.host == good.host && client.port == good.port && client.database == good.database)
        #expect(client.options.maximumConnections == good.poolSize)
    }

    /// Each holds the password `s3cret`, which no error may repeat.
    static let bad: [(url: String, reason: String)] = [
        ("postgres://app:s3cret@db.example.com/console", "not on this machine"),
        ("postgres://app:s3cret@db.example.com/console?sslmode=disable", "not on this machine"),
        ("mysql://app:s3cret@127.0.0.1/console", "not a postgres:// URL"),
        ("postgres://app:s3/cret@127.0.0.1/console", "not a postgres:// URL"),
        ("postgres://app:s3c?ret@127.0.0.1/console", "not a postgres:// URL"),
        ("postgres://app:s3cret@127.0.0.1:0/console", "port"),
        ("postgres://app:s3cret@127.0.0.1:70000/console", "port"),
        ("postgres://:s3cret@127.0.0.1/console", "no user"),
        ("postgres://app:s3cret@/console", "no host"),
        ("postgres://app:s3cret@h1,h2/console?sslmode=require", "several hosts"),
        ("postgres://app:s3cret@127.0.0.1/con/sole", "not one database name"),
        ("postgres://app:s3cret@127.0.0.1/console?sslmode=prefer", "sslmode=prefer"),
        ("postgres://app:s3cret@127.0.0.1/console?sslrootcert=/ca.pem", "without sslmode=verify-full"),
        ("postgres://app:s3cret@127.0.0.1/console?pool_size=0", "pool_size"),
        ("postgres://app:s3cret@127.0.0.1/console?pool_size=many", "pool_size"),
        ("postgres://app:s3cret@127.0.0.1/console?query_timeout=-1", "query_timeout"),
        ("postgres://app:s3cret@127.0.0.1/console?query_timeout=86401", "query_timeout"),
        ("postgres://app:s3cret@127.0.0.1/console?query_timeout=2.5", "query_timeout"),
        ("postgres://app:s3cret@127.0.0.1/console?sslmode=disable&sslmode=require", "twice"),
        ("postgres://app:s3cret@127.0.0.1/console?colour=blue", "unknown parameter colour"),
        ("postgres://app@127.0.0.1/console?password=s3cret", "password parameter"),
        ("postgres://app@127.0.0.1/console?password=s3cret@x", "password parameter"),
        ("postgres://app:s3cret@127.0.0.1/console?application_name=%0A", "percent-encoded control character"),
        ("postgres://ap%1Bp:s3cret@127.0.0.1/console", "percent-encoded control character"),
        ("postgres://app:s3cret@127.0.0.1/con%0Asole", "percent-encoded control character"),
        ("postgres://app:s3cret@127.0.0.1/console?application_name=%C3%A9", "application_name"),
        ("postgres://app:s3cret@127.0.0.1/console\n", "control character"),
    ]

    @Test(arguments: zip(bad.map(\.url), bad.map(\.reason))) func refuses(_ url: String, _ reason: String) throws {
        let error = try #require(throws: ConsoleError.self) {
            try PostgresStoreConfiguration(url: url, environment: [:])
        }
        #expect(error.kind == .configuration && error.code == "invalid_url")
        #expect(error.message.contains(reason), "\(error.message)")
        #expect(!error.message.contains("s3cret") && !error.message.contains("s3/cret"))
        #expect(!error.message.contains("\n"))
    }

    @Test func aURLLongerThanFourKilobytesIsRefused() throws {
        let url = "postgres://app:s3cret@127.0.0.1/" + String(repeating: "x", count: 5000)
        let error = try #require(throws: ConsoleError.self) {
            try PostgresStoreConfiguration(url: url, environment: [:])
        }
        #expect(error.kind == .configuration && error.message == "The database URL is longer than 4096 bytes.")
    }

    @Test func theDescriptionDumpAndRefusalsNeverHoldThePassword() throws {
        let config = try PostgresStoreConfiguration(
            url: "postgres://app:s3cret@db.example.com:6543/console?sslmode=require", environment: [:])
        #expect(config.redacted == "postgres://app:***@db.example.com:6543/console?sslmode=require")
        #expect("\(config)" == config.redacted)
        var dumped = ""
        dump(config, to: &dumped)
        #expect(!dumped.contains("s3cret") && dumped.contains("db.example.com"))
        #expect(!String(reflecting: config).contains("s3cret"))
        #expect(config.clientConfiguration.password == "s3cret")
        #expect(config.endpoint == "db.example.com:6543")
    }

    @Test func thePasswordComesFromTheURLThenPGPASSWORDThenAPassfile() throws {
        let fromURL = try PostgresStoreConfiguration(
            url: "postgres://app:inurl@127.0.0.1/console", environment: ["PGPASSWORD": "fromenv"])
        #expect(fromURL.clientConfiguration.password == "inurl")
        let fromEnvironment = try PostgresStoreConfiguration(
            url: "postgres://app@127.0.0.1/console", environment: ["PGPASSWORD": "fromenv"])
        #expect(fromEnvironment.clientConfiguration.password == "fromenv")
        let none = try PostgresStoreConfiguration(url: "postgres://app@127.0.0.1/console", environment: [:])
        #expect(none.clientConfiguration.password == nil)
        #expect(!none.redacted.contains("***"))
    }

    @Test func aPassfileMatchesHostPortDatabaseAndUserWithWildcardsAndEscapes() throws {
        try withPassfile(
            """
            # comment
            127.0.0.1:5432:other:app:wrong
            127.0.0.1:*:console:app:pa\\:ss\\\\word
            *:*:*:*:fallback
            """, mode: 0o600
        ) { path in
            let url = "postgres://app@127.0.0.1/console?passfile=\(path)"
            #expect(
                try PostgresStoreConfiguration(url: url, environment: [:]).clientConfiguration.password
                    == #"pa:ss\word"#)
            let other = try PostgresStoreConfiguration(
                url: "postgres://bob@localhost:7000/db", environment: ["PGPASSFILE": path])
            #expect(other.clientConfiguration.password == "fallback")
        }
    }

    @Test func aPassfileReadableByOthersIsRefusedWithoutItsContent() throws {
        try withPassfile("*:*:*:*:s3cret", mode: 0o644) { path in
            let error = try #require(throws: ConsoleError.self) {
                try PostgresStoreConfiguration(
                    url: "postgres://app@127.0.0.1/console", environment: ["PGPASSFILE": path])
            }
            #expect(
                error.code == "insecure_config" && error.message.contains("chmod 600")
                    && !error.message.contains("s3cret"))
        }
    }

    @Test func requireEncryptsWithoutVerifyingAndVerifyFullChecksChainAndHost() throws {
        let require = try PostgresStoreConfiguration(
            url: "postgres://app@db.example.com/console?sslmode=require", environment: [:])
        #expect(require.tlsConfiguration.certificateVerification == .none)
        let full = try PostgresStoreConfiguration(
            url: "postgres://app@db.example.com/console?sslmode=verify-full&sslrootcert=/etc/ca.pem", environment: [:])
        #expect(full.tlsConfiguration.certificateVerification == .fullVerification)
        #expect(full.tlsConfiguration.trustRoots == .file("/etc/ca.pem"))
        let unreadable = try #require(throws: ConsoleError.self) { try full.connectionConfiguration() }
        #expect(
            unreadable.code == "invalid_ca_file"
                && unreadable.message.contains("postgres://app@db.example.com:5432/console"))
    }

    private func withPassfile(_ text: String, mode: Int, _ body: (String) throws -> Void) throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("pgpass-\(UUID().uuidString)").path
        try text.write(toFile: path, atomically: false, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: path) }
        try FileManager.default.setAttributes([.posixPermissions: mode], ofItemAtPath: path)
        try body(path)
    }
}
