import BackupModel
import BackupctlTestSupport
import ConsoleStore
import Foundation
import PostgresStore
import Testing

/// Two `backupctl serve` processes on one PostgreSQL database behave as one console: an
/// operator added on one signs in on the other, a revocation on one refuses the next call on
/// the other, a reset token completes once however the servers race for it, and the audit
/// chain both write stays one verifiable chain.
@Suite(
    .serialized, .enabled(if: PostgresTestDatabase.enabled, "\(PostgresTestDatabase.skipped)"), .timeLimit(.minutes(10))
)
struct MultiServerTests {
    static let backupId = "backup_account_030b2e4ce2de76318c0ef50964d225910b64019d8e43620d6d166b6bd100ad26e8"
    static var fixtures: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("runbooks/fixtures")
    }

    /// A directory of the test's own and the environment for the binary: the database URL in
    /// `BACKUPCTL_DB` (it carries the cluster's password, so never in an argument).
    struct Workspace {
        let directory: URL
        var environment: [String: String]

        init(database: PostgresTestDatabase) throws {
            directory = FileManager.default.temporaryDirectory.appendingPathComponent("multi-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            environment = [
                "PATH": "/usr/bin:/bin", "HOME": directory.path, "TERM": "dumb",
                "XDG_STATE_HOME": directory.appendingPathComponent("state").path,
                "XDG_DATA_HOME": directory.appendingPathComponent("data").path,
                "XDG_CONFIG_HOME": directory.appendingPathComponent("config").path,
                "BACKUPCTL_DB": database.url,
            ]
        }

        func path(_ name: String) -> String { directory.appendingPathComponent(name).path }

        /// The environment of a console that talks to `server` with `token`, and has no store.
        func client(_ server: ServerProcess, token: String) -> [String: String] {
            var environment = environment
            environment["BACKUPCTL_DB"] = path("client-has-no-store/console.db")
            environment["BACKUPCTL_SERVER"] = server.url
            environment["BACKUPCTL_TOKEN"] = token
            return environment
        }

        func cleanUp() { try? FileManager.default.removeItem(at: directory) }
    }

    typealias Run = ChildResult

    /// Runs the binary to its end (at most a minute).
    static func run(_ arguments: [String], _ environment: [String: String]) async throws -> Run {
        try await BackupctlBinary.run(arguments, environment: environment, seconds: 60)
    }

    /// Runs every command at once (each its own process) and returns their results in order.
    static func race(_ runs: [([String], [String: String])]) async throws -> [Run] {
        let processes = try runs.map { try BackupctlBinary.start($0.0, environment: $0.1) }
        var results: [Run] = []
        for process in processes { results.append(try await process.result(seconds: 60)) }
        return results
    }

    @Test func twoServersShareOperatorsRevocationsResetTokensAndOneAuditChain() async throws {
        try await PostgresTestDatabase.make { database in
            var workspace = try Workspace(database: database)
            defer { workspace.cleanUp() }
            // `init` and the import run in-process on the database, as an operator bootstrapping it would.
            let initialized = try await Self.run(
                ["--format", "json", "init", "--admin", "root"], workspace.environment)
            #expect(initialized.status == 0, "\(initialized.stderr)")
            let root = try #require(initialized.json?["token"] as? String)
            workspace.environment["BACKUPCTL_TOKEN"] = root
            let imported = try await Self.run(
                ["import", Self.fixtures.appendingPathComponent("export").path], workspace.environment)
            #expect(imported.status == 0, "\(imported.stderr)")

            var serverEnvironment = workspace.environment
            serverEnvironment["BACKUPCTL_TOKEN"] = nil
            let first = try await ServerProcess.serve(db: database.url, environment: serverEnvironment)
            defer { first.killNow() }
            let second = try await ServerProcess.serve(db: database.url, environment: serverEnvironment)
            defer { second.killNow() }

            // An operator added through the first server signs in on the second.
            let added = try await Self.run(
                ["--format", "json", "operator", "add", "alice", "--tenant", "sandbox", "--role", "support"],
                workspace.client(first, token: root))
            #expect(added.status == 0, "\(added.stderr)")
            let alice = try #require(added.json?["token"] as? String)
            let seen = try await Self.run(
                ["--format", "json", "show", Self.backupId], workspace.client(second, token: alice))
            #expect(seen.status == 0, "\(seen.stderr)")

            // Both servers issue nothing twice: one challenge, and two servers racing to complete it.
            let tokenFile = workspace.path("reset.token")
            let begun = try await Self.run(
                ["--format", "json", "reset", "begin", Self.backupId, "--token-out", tokenFile],
                workspace.client(first, token: alice))
            #expect(begun.status == 0, "\(begun.stderr)")
            let challenge = try #require(begun.json?["challenge"] as? String)
            let signed = try await Self.run(
                [
                    "--format", "json", "recovery", "sign", "--challenge", challenge, "--root-key-file",
                    Self.fixtures.appendingPathComponent("root-key.json").path,
                ], workspace.environment)
            let signature = try #require(signed.json?["signature"] as? String)
            let signatureFile = workspace.path("reset.signature")
            try Data((signature + "\n").utf8).write(to: URL(fileURLWithPath: signatureFile))
            let complete = [
                "--yes", "--format", "json", "reset", "complete", "--token-file", tokenFile, "--signature-file",
                signatureFile,
            ]
            let raced = try await Self.race(
                [first, second, first, second].map { (complete, workspace.client($0, token: alice)) })
            let winners = raced.filter { $0.status == 0 }
            #expect(winners.count == 1, "\(raced.map { "\($0.status) \($0.stderr)" })")
            #expect(winners.first?.json?["wiped"] as? Bool == true)
            for loser in raced where loser.status != 0 {
                #expect(loser.status == 1, "\(loser.stderr)")
            }

            // A revocation through the second server refuses alice's next call on the first.
            let revoked = try await Self.run(
                ["operator", "revoke", "alice", "--tenant", "sandbox"], workspace.client(second, token: root))
            #expect(revoked.status == 0, "\(revoked.stderr)")
            let refused = try await Self.run(
                ["--format", "json", "--tenant", "sandbox", "stats"], workspace.client(first, token: alice))
            #expect(refused.status == 77, "\(refused.stdout) \(refused.stderr)")

            // One chain: both servers appended to it, and it verifies.
            let verified = try await Self.run(
                ["--format", "json", "audit", "verify"], workspace.client(first, token: root))
            #expect(verified.status == 0, "\(verified.stderr)")
            #expect(verified.json?["ok"] as? Bool == true)
            let listed = try await Self.run(
                ["--format", "json", "audit", "list", "--limit", "500"], workspace.client(second, token: root))
            // One reset, and the losers' refusals beside it.
            #expect(listed.stdout.components(separatedBy: "\"reset.complete\"").count - 1 == 1, "\(listed.stdout)")
            #expect(listed.stdout.components(separatedBy: "\"reset.refused\"").count - 1 == 3)
            #expect(await first.stop() == .exited(0))
            #expect(await second.stop() == .exited(0))
            #expect(!FileManager.default.fileExists(atPath: workspace.path("client-has-no-store")))
        }
    }

    /// Waits (at most `seconds`) for a process to print that it stopped at a checkpoint, and
    /// returns the sub-org it stopped on.
    static func pausedSubOrg(_ process: ChildProcess, seconds: Double = 60) async -> String? {
        await process.waitForStdout(#""paused":"cleanup.journaled""#, seconds: seconds)
        for line in process.stdout.split(separator: "\n") where line.contains(#""paused""#) {
            let object = (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: String]
            return object?["subOrgId"]
        }
        return nil
    }

    /// The journaled bodies of `ids`, read from the database as the workers left them.
    static func journaledBodies(_ url: String, _ ids: [String]) async throws -> [String: String] {
        let database = PostgresStoreDatabase(configuration: try PostgresStoreConfiguration(url: url, environment: [:]))
        try await database.start()
        do {
            let store = try await PostgresConsoleStore.open(database)
            var bodies: [String: String] = [:]
            for id in ids {
                bodies[id] = try await store.cleanupItem(tenant: try TenantName("sandbox"), subOrgId: id)?.body
            }
            await database.shutdown()
            return bodies
        } catch {
            await database.shutdown()
            throw error
        }
    }

    /// Two servers and three workers on one database; a worker and a server (running a worker
    /// of its own) are killed with SIGKILL once each has journaled the body of an item and
    /// before sending it. The survivors take those items when the leases lapse and send the
    /// journaled bodies: every eligible sub-org is deleted exactly once, and the chain verifies.
    @Test func killedWorkersAndServersLoseTheirItemsToTheOthersAndEachSubOrgGoesOnce() async throws {
        try await PostgresTestDatabase.make { database in
            var workspace = try Workspace(database: database)
            defer { workspace.cleanUp() }
            let initialized = try await Self.run(
                ["--format", "json", "init", "--admin", "root"], workspace.environment)
            let root = try #require(initialized.json?["token"] as? String)
            workspace.environment["BACKUPCTL_TOKEN"] = root
            let seeded = try await Self.run(
                ["--format", "json", "seed", "--backups", "20", "--orphans", "30"], workspace.environment)
            #expect(seeded.status == 0, "\(seeded.stderr)")
            var serverEnvironment = workspace.environment
            serverEnvironment["BACKUPCTL_TOKEN"] = nil
            let api = try await ServerProcess.serve(db: database.url, environment: serverEnvironment)
            defer { api.killNow() }
            let client = workspace.client(api, token: root)
            let queued = try await Self.run(
                [
                    "--yes", "--format", "json", "cleanup", "run", "--execute", "--queue", "--grace", "0", "--max",
                    "1000",
                ], client)
            #expect(queued.status == 0, "\(queued.stderr)")
            let items = try #require(queued.json?["items"] as? [[String: Any]])
            let orphans = Set(items.compactMap { $0["subOrgId"] as? String })
            #expect(orphans.count == 30 && items.allSatisfy { $0["outcome"] as? String == "queued" })

            // A server with a worker, and a worker: each stops once it has journaled a body; SIGKILL.
            var pausing = serverEnvironment
            pausing["BACKUPCTL_PAUSE_AT"] = "cleanup.journaled"
            let doomedServer = try await ServerProcess.serve(
                db: database.url, arguments: ["--workers", "1", "--worker-lease-seconds", "2"], environment: pausing)
            defer { doomedServer.killNow() }
            let serverItem = try #require(await Self.pausedSubOrg(doomedServer.child), "\(doomedServer.stderr)")
            await doomedServer.child.kill()
            let doomedWorker = try BackupctlBinary.start(
                ["worker", "--workers", "1", "--lease-seconds", "2"], environment: pausing)
            defer { doomedWorker.killNow() }
            let workerItem = try #require(await Self.pausedSubOrg(doomedWorker), "\(doomedWorker.stderr)")
            await doomedWorker.kill()
            #expect(serverItem != workerItem && orphans.isSuperset(of: [serverItem, workerItem]))
            let journaled = try await Self.journaledBodies(database.url, [serverItem, workerItem])
            #expect(journaled.count == 2 && journaled.values.allSatisfy { $0.contains(#""organizationId""#) })

            // Two more workers finish everything, the killed ones' items once their leases lapse.
            let workers = try (0..<2).map { _ in
                try BackupctlBinary.start(
                    ["worker", "--workers", "2", "--lease-seconds", "2", "--idle-millis", "100"],
                    environment: serverEnvironment)
            }
            defer { for worker in workers { worker.killNow() } }
            var status: [String: Any]?
            for _ in 0..<600 {
                status = try await Self.run(["--format", "json", "cleanup", "status"], client).json
                if status?["pending"] as? Int == 0 { break }
                try await Task.sleep(for: .milliseconds(100))
            }
            #expect(status?["pending"] as? Int == 0, "\(status ?? [:])")
            #expect(status?["deleted"] as? Int == 30, "\(status ?? [:])")
            for worker in workers {
                #expect(await worker.stop(seconds: 30) == .exited(0), "\(worker.stderr)")
            }
            // The killed ones' items went with the bodies they had journaled.
            #expect(try await Self.journaledBodies(database.url, [serverItem, workerItem]) == journaled)
            let deletes = try await Self.run(
                ["--format", "json", "audit", "list", "--action", "cleanup.delete", "--limit", "1000"], client)
            let entries = deletes.json?["entries"] as? [[String: Any]] ?? []
            let targets = entries.compactMap { $0["target"] as? String }
            #expect(targets.count == 30 && Set(targets) == orphans, "\(deletes.stdout.prefix(400))")
            let scan = try await Self.run(["--format", "json", "cleanup", "scan", "--grace", "0"], client)
            #expect((scan.json?["orphans"] as? [Any])?.isEmpty == true, "\(scan.stdout.prefix(400))")
            let verified = try await Self.run(["--format", "json", "audit", "verify"], client)
            #expect(verified.json?["ok"] as? Bool == true, "\(verified.stdout) \(verified.stderr)")
            #expect(await api.stop() == .exited(0))
        }
    }

    /// A database that stops answering (every byte held, connections open): with
    /// `query_timeout=2` in the URL, a served lookup fails with `store_timeout` (exit 2) instead
    /// of waiting for good, and once the database answers again so does the server, with its
    /// chain intact.
    @Test func aDatabaseThatStopsAnsweringFailsTheRequestsBehindItAfterItsQueryTimeout() async throws {
        try await PostgresTestDatabase.make { database in
            let workspace = try Workspace(database: database)
            defer { workspace.cleanUp() }
            let (proxy, server, client) = try await Self.serveThroughProxy(workspace, queryTimeout: 2)
            defer {
                server.killNow()
                proxy.stop()
            }
            let lookup = [
                "--tenant", "sandbox", "lookup", "account", "backup_account_02" + String(repeating: "ab", count: 32),
            ]
            // The first lookup opens the hot connection lookups keep (no such backup: exit 1).
            let before = try await Self.run(lookup, client)
            #expect(before.stderr.contains("not_found"), "\(before.stderr)")
            proxy.freeze()
            let stalled = try await Self.run(lookup, client)
            #expect(stalled.status == 2 && stalled.stderr.contains("error[store_timeout]"), "\(stalled.stderr)")
            #expect(stalled.stderr.contains("query_timeout"), "\(stalled.stderr)")
            proxy.thaw()
            let after = try await Self.run(lookup, client)
            #expect(after.stderr.contains("not_found"), "\(after.stderr) \(server.stderr)")
            let verified = try await Self.run(["--format", "json", "audit", "verify"], client)
            #expect(verified.json?["ok"] as? Bool == true, "\(verified.stdout) \(verified.stderr)")
        }
    }

    /// A database that stops answering (every byte held, connections open) while a request
    /// waits on it, with `query_timeout=0` (no statement deadline): SIGTERM drains for
    /// `--drain-seconds`, then `BACKUPCTL_STOP_GRACE_SECONDS` more, and the server ends with
    /// `stop_timeout` and 143 instead of waiting for good.
    @Test func aServerWhoseDatabaseStopsAnsweringStillStopsAfterItsDrainAndGrace() async throws {
        try await PostgresTestDatabase.make { database in
            let workspace = try Workspace(database: database)
            defer { workspace.cleanUp() }
            // No query_timeout: the held statements wait for good, and only the stop ends them.
            let (proxy, server, client) = try await Self.serveThroughProxy(
                workspace, queryTimeout: 0, arguments: ["--drain-seconds", "1"],
                environment: ["BACKUPCTL_STOP_GRACE_SECONDS": "2"])
            defer {
                server.killNow()
                proxy.stop()
            }
            let answered = try await Self.run(["whoami"], client)
            #expect(answered.status == 0, "\(answered.stderr)")
            // A lookup first: it opens the hot connection lookups keep.
            let account = "backup_account_02" + String(repeating: "ab", count: 32)
            _ = try await Self.run(["--tenant", "sandbox", "lookup", "account", account], client)
            // Two pooled sessions beside it, so that the readiness read and the lookup's read of
            // the access version each find one open: a read left waiting for a new connection
            // would be cancelled by the stop (exit 0), not hold it (bounded: 30 bursts).
            for _ in 0..<30 where proxy.sessions < 3 {
                try await withThrowingTaskGroup { group in
                    for _ in 0..<6 { group.addTask { _ = try await Self.run(["whoami"], client) } }
                    try await group.waitForAll()
                }
            }
            #expect(proxy.sessions >= 3, "\(server.stderr)")
            proxy.freeze()
            let waiting = try BackupctlBinary.start(
                ["--tenant", "sandbox", "lookup", "account", account], environment: client)
            defer { Task { await waiting.kill() } }
            // The checkpoint: the lookup's statement and the readiness read are both held on
            // their sessions (bounded: a minute).
            for _ in 0..<600 where proxy.statementsHeld < 2 { try await Task.sleep(for: .milliseconds(100)) }
            #expect(proxy.statementsHeld >= 2, "\(server.stderr)")
            server.child.signal(SIGTERM)
            let ended = await server.child.wait(seconds: 60)
            #expect(ended == .exited(143), "\(server.stderr) lookup: \(waiting.stderr)")
            #expect(server.stderr.contains("error[stop_timeout]"), "\(server.stderr)")
        }
    }
}

extension MultiServerTests {
    /// `init` of an admin on the workspace's database, then `serve` on it through a
    /// ``FreezingProxy`` with `query_timeout` set in its URL; the admin's client environment.
    static func serveThroughProxy(
        _ workspace: Workspace, queryTimeout: Int, arguments: [String] = [], environment: [String: String] = [:]
    ) async throws -> (FreezingProxy, ServerProcess, [String: String]) {
        let initialized = try await run(["--format", "json", "init", "--admin", "root"], workspace.environment)
        #expect(initialized.status == 0, "\(initialized.stderr)")
        let root = try #require(initialized.json?["token"] as? String)
        var direct = try #require(URLComponents(string: workspace.environment["BACKUPCTL_DB"] ?? ""))
        let proxy = try FreezingProxy(target: try #require(direct.port))
        direct.port = proxy.port
        direct.queryItems = (direct.queryItems ?? []) + [URLQueryItem(name: "query_timeout", value: "\(queryTimeout)")]
        do {
            let server = try await ServerProcess.serve(
                db: try #require(direct.string), arguments: arguments,
                environment: workspace.environment.merging(environment) { $1 })
            return (proxy, server, workspace.client(server, token: root))
        } catch {
            proxy.stop()
            throw error
        }
    }
}

extension ChildResult {
    /// stdout as one JSON object.
    var json: [String: Any]? { (try? JSONSerialization.jsonObject(with: Data(stdout.utf8))) as? [String: Any] }
}
