import BackupctlTestSupport
import Foundation
import GRDB
import Testing

/// `backupctl worker` on a store whose audit a server signs: its deletions are audited, so it
/// refuses to start without the key, and with `BACKUPCTL_AUDIT_KEY` it signs what it wrote.
@Suite(.serialized, .timeLimit(.minutes(10))) struct WorkerAuditTests {
    func count(_ cli: CLI, _ sql: String) throws -> Int {
        try DatabaseQueue(path: cli.dbPath).read { db in try Int.fetchOne(db, sql: sql) ?? -1 }
    }

    @Test func aWorkerOnASignedStoreRefusesWithoutTheKeyAndSignsWithIt() async throws {
        var cli = CLI()
        defer { cli.cleanUp() }
        _ = try await cli.bootstrap()
        let key = cli.directory.appendingPathComponent("audit.key").path
        let keygen = try await cli.run(["--format", "json", "audit", "keygen", "--out", key])
        let publicKey = cli.directory.appendingPathComponent("audit.pub").path
        try Data(((CLI.json(keygen.stdout)?["publicKey"] as? String ?? "") + "\n").utf8).write(
            to: URL(fileURLWithPath: publicKey))
        #expect(try await cli.run(["seed", "--backups", "3", "--orphans", "4", "--seed", "9"]).status == 0)

        // A signing server queues the orphans for workers, and signs everything when it stops.
        var serverEnvironment = cli.environment
        serverEnvironment["BACKUPCTL_TOKEN"] = nil
        let server = try await ServerProcess.serve(
            db: cli.dbPath, arguments: ["--audit-key", key], environment: serverEnvironment)
        defer { server.killNow() }
        let queued = try await cli.run(
            ["--yes", "--format", "json", "cleanup", "run", "--execute", "--queue", "--grace", "0"],
            extraEnvironment: ["BACKUPCTL_SERVER": server.url])
        #expect(queued.status == 0, "\(queued.stderr)")
        #expect(await server.stop() == .exited(0))
        let pending = "SELECT count(*) FROM cleanup_items WHERE queued_by IS NOT NULL AND state = 'pending'"
        #expect(try count(cli, pending) == 4)
        let entries = try count(cli, "SELECT count(*) FROM audit")
        #expect(try count(cli, "SELECT max(seq) FROM audit_checkpoints") == entries)

        // Without the key: refused before it takes anything, and nothing is written.
        let refused = try await BackupctlBinary.run(["worker", "--workers", "1"], environment: cli.environment)
        #expect(refused.status == 1 && refused.stderr.contains("audit_signed_store"), "\(refused.stderr)")
        #expect(refused.stderr.contains("BACKUPCTL_AUDIT_KEY") && refused.stdout.isEmpty)
        #expect(try count(cli, pending) == 4 && (try count(cli, "SELECT count(*) FROM audit")) == entries)

        // With it: the worker deletes the four, and its entries are signed by the time it stops.
        let worker = try BackupctlBinary.start(
            ["worker", "--workers", "1", "--idle-millis", "50"],
            environment: cli.environment.merging(["BACKUPCTL_AUDIT_KEY": key]) { $1 })
        defer { worker.killNow() }
        #expect(await worker.waitForStdout(#"{"workers":1}"#), "\(worker.stderr)")
        for _ in 0..<600 where try count(cli, pending) > 0 { try await Task.sleep(for: .milliseconds(50)) }
        #expect(try count(cli, pending) == 0)
        #expect(await worker.stop() == .exited(0), "\(worker.stderr)")
        #expect(try count(cli, "SELECT count(*) FROM audit WHERE action = 'cleanup.delete'") == 4)
        let verified = try await cli.run([
            "--format", "json", "audit", "verify", "--public-key", publicKey, "--max-unsigned", "0",
        ])
        #expect(verified.status == 0, "\(verified.stdout) \(verified.stderr)")
        let report = try #require(CLI.json(verified.stdout))
        #expect(report["uncoveredEntries"] as? Int == 0 && report["entries"] as? Int ?? 0 > entries)
    }
}
