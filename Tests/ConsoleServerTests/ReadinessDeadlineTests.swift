import BackupctlTestSupport
import ConsoleService
import Foundation
import Logging
import Testing

@testable import ConsoleServer

/// `/readyz` when the store stops answering: a check waits at most its deadline and reports
/// `store_timeout` (503) while the database is silent, starts no second query meanwhile, and
/// reports the database's own failure once the stuck query returns.
@Suite(.timeLimit(.minutes(2))) struct ReadinessDeadlineTests {
    @Test func aDatabaseThatStopsAnsweringIsNotReadyWithinTheDeadline() async throws {
        // A PostgreSQL endpoint that accepts connections and never says a word.
        let silent = try StallingServer(head: "")
        let console = LocalConsole(
            storePath: "postgres://backupctl@127.0.0.1:\(silent.port)/backupctl?sslmode=disable")
        var logger = Logger(label: "test.readiness")
        logger.logLevel = .critical
        let readiness = Readiness(console: console, metrics: ServerMetrics(), logger: logger)
        await readiness.check(deadline: .milliseconds(200))
        #expect(readiness.response.status.code == 503 && readiness.response.headers[.retryAfter] == "1")
        #expect(readiness.failureCode == "store_timeout")
        // The first query still waits: the next check starts none and is not ready either.
        await readiness.check(deadline: .milliseconds(200))
        #expect(readiness.failureCode == "store_timeout")
        silent.stop()
        // Bounded: with the endpoint gone the stuck query fails, and a check reports why.
        for _ in 0..<300 {
            await readiness.check(deadline: .seconds(1))
            if readiness.failureCode != "store_timeout" { break }
            try await Task.sleep(for: .milliseconds(50))
        }
        #expect(readiness.failureCode == "database_unavailable")
        #expect(readiness.response.status.code == 503)
    }
}
