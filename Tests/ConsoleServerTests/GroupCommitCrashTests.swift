import Access
import BackupModel
import BackupctlTestSupport
import ConsoleService
import Foundation
import SQLiteStore
import Testing

/// Group commit under a crash: `serve` killed (`_exit(137)`) inside its fortieth group
/// transaction — entries written, not committed — while waves of 16 concurrent audited reads
/// arrive, each wave after the last one's answers. Every read the server answered has its entry
/// in the store, the reads of the crashed group were not answered, and the chain verifies.
@Suite(.serialized, .timeLimit(.minutes(10))) struct GroupCommitCrashTests {
    @Test func noAnsweredReadIsMissingItsEntryAfterACrashInsideAGroupCommit() async throws {
        let workspace = try await ServeProcessTests.Workspace()
        defer { workspace.cleanUp() }
        var environment = workspace.environment
        environment["BACKUPCTL_CRASH_AT"] = "audit-group:40"
        let server = try await ServerProcess.serve(db: workspace.db, environment: environment)
        defer { server.killNow() }
        let token = ServerFixture.text(workspace.setup.rootToken)
        let port = try #require(Int(server.url.split(separator: ":").last ?? ""))

        var answered: [String] = []
        var unanswered = 0
        // Waves of 16 concurrent `stats` (audited as backup.stats, each naming its request id):
        // a wave commits in 1 to 16 groups, so the first wave is answered whole and the
        // fortieth group comes by the fortieth wave.
        wave: for wave in 0..<60 {
            let outcomes = await withTaskGroup(of: (String, Bool).self) { group in
                for n in 0..<16 {
                    let id = "crash-\(wave)-\(n)"
                    group.addTask {
                        // A raw connection each: a dead server is a reset at once, where a
                        // pooled client would keep reconnecting until its deadline.
                        guard let connection = try? RawConnection(port: port) else { return (id, false) }
                        defer { connection.close() }
                        connection.send(
                            "POST /v1/ops/stats HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer \(token)\r\n"
                                + "Backupctl-Tenant: sandbox\r\nX-Request-Id: \(id)\r\n"
                                + "Content-Type: application/json\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}")
                        let answer = await connection.answer(within: 30_000)
                        return (id, answer?.status == 200)
                    }
                }
                var outcomes: [(String, Bool)] = []
                for await outcome in group { outcomes.append(outcome) }
                return outcomes
            }
            answered += outcomes.filter(\.1).map(\.0)
            unanswered += outcomes.filter { !$0.1 }.count
            if !server.isRunning || unanswered > 0 { break wave }
        }
        #expect(await server.stop() == .exited(137), "\(server.stderr)")
        #expect(unanswered > 0)
        #expect(answered.count >= 16)

        let store = try SQLiteConsoleStore(path: workspace.db)
        let entries = try await store.auditEntries(tenant: nil, afterSeq: 0, limit: 10_000)
        let audited = Set(entries.filter { $0.action == "backup.stats" }.compactMap { $0.details["requestId"] })
        let missing = answered.filter { !audited.contains($0) }
        #expect(missing.isEmpty, "answered without an entry: \(missing)")
        let verification = try await AuditLog.verify(store: store)
        #expect(verification.ok)
    }
}
