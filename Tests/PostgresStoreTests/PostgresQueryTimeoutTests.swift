import BackupModel
import BackupctlTestSupport
import ConsoleStore
import Foundation
import PostgresNIO
import Synchronization
import Testing

@testable import PostgresStore

/// `query_timeout`: a statement of the store rules that gets no answer, and a lease the pool
/// cannot give, end in `store_timeout` instead of waiting for good; the store works on after.
@Suite(
    .enabled(if: PostgresTestDatabase.enabled, Comment(rawValue: PostgresTestDatabase.skipped)),
    .timeLimit(.minutes(3)))
struct PostgresQueryTimeoutTests {
    @Test func aStatementWithoutAnAnswerIsCutAndItsConnectionClosed() async throws {
        try await PostgresTestDatabase.make { testDatabase in
            try await withDatabase(testDatabase, query: "query_timeout=1") { database in
                let driver = PostgresDriver(database: database)
                let error = try await #require(throws: ConsoleError.self) {
                    try await driver.read("sleeping") { session in
                        try await session.query("SELECT pg_sleep(30)")
                    }
                }
                #expect(error.code == "store_timeout" && error.kind == .remote, "\(error.message)")
                #expect(error.message.contains("within 1 s while sleeping"), "\(error.message)")
                #expect(error.message.contains("query_timeout"), "\(error.message)")
                let rows = try await driver.read("reading again") { session in try await session.query("SELECT 1") }
                #expect(rows.count == 1)
                // A transaction cut the same way is rolled back: nothing of it stays.
                _ = try? await driver.transaction("writing slowly") { session in
                    try await session.execute("CREATE TABLE cut (x int)")
                    try await session.execute("SELECT pg_sleep(30)")
                }
                let tables = try await driver.read("listing") { session in
                    try await session.query("SELECT 1 FROM pg_tables WHERE tablename = 'cut'")
                }
                #expect(tables.isEmpty)
            }
        }
    }

    @Test func aLeaseThatDoesNotComeIsGivenUp() async throws {
        try await PostgresTestDatabase.make { testDatabase in
            let database = PostgresStoreDatabase(
                configuration: try testDatabase.configuration(query: "pool_size=1&query_timeout=1"))
            try await database.start()
            do {
                try await Self.leaseWaitEnds(database)
            } catch {
                await database.shutdown()
                throw error
            }
            await database.shutdown()
        }
    }

    private static func leaseWaitEnds(_ database: PostgresStoreDatabase) async throws {
        // The pool's only connection, held by a statement outside the store rules (unbounded).
        let holding = Mutex<PostgresConnection?>(nil)
        let holder = Task {
            try? await database.withConnection("holding") { connection in
                holding.withLock { $0 = connection }
                _ = try await connection.query("SELECT pg_sleep(600)", logger: database.logger)
            }
        }
        // The checkpoint: the holder has the connection (bounded: a minute).
        for _ in 0..<600 where holding.withLock({ $0 == nil }) { try await Task.sleep(for: .milliseconds(100)) }
        let held = try #require(holding.withLock { $0 })
        let driver = PostgresDriver(database: database)
        let error = try await #require(throws: ConsoleError.self) {
            try await driver.read("waiting for a connection") { session in try await session.query("SELECT 1") }
        }
        #expect(error.code == "store_timeout", "\(error.message)")
        #expect(error.message.contains("No connection") && error.message.contains("within 1 s"), "\(error.message)")
        try? await held.close()
        await holder.value
        let rows = try await driver.read("reading again") { session in try await session.query("SELECT 1") }
        #expect(rows.count == 1)
    }
}
