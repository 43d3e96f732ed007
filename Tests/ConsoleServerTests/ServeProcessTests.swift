import AsyncHTTPClient
import BackupModel
import BackupctlTestSupport
import ConsoleClient
import ConsoleService
import Foundation
import Inspect
import Testing

/// `backupctl serve` as a process: the startup line, the loopback rule, SIGTERM, and the
/// console as a client that never opens a store file of its own.
@Suite(.serialized, .timeLimit(.minutes(10))) struct ServeProcessTests {
    /// A store made in-process (``StoreSetup``) in a fresh directory, and the environment for the binary.
    struct Workspace {
        let directory: URL
        let db: String
        let setup: StoreSetup
        let environment: [String: String]

        init() async throws {
            directory = FileManager.default.temporaryDirectory.appendingPathComponent("serve-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            db = directory.appendingPathComponent("console.db").path
            setup = try await StoreSetup(path: db)
            environment = [
                "PATH": "/usr/bin:/bin", "HOME": directory.path, "TERM": "dumb",
                "XDG_STATE_HOME": directory.appendingPathComponent("state").path,
                "XDG_DATA_HOME": directory.appendingPathComponent("data").path,
            ]
        }

        func cleanUp() { try? FileManager.default.removeItem(at: directory) }
    }

    /// Runs the binary to its end: (stdout, stderr, status).
    static func run(_ arguments: [String], environment: [String: String]) async throws -> (String, String, Int32) {
        let result = try await BackupctlBinary.run(arguments, environment: environment, seconds: 60)
        return (result.stdout, result.stderr, result.status)
    }

    @Test func printsItsListeningLineFirstAndExitsZeroOnSIGTERM() async throws {
        let workspace = try await Workspace()
        defer { workspace.cleanUp() }
        let server = try await ServerProcess.serve(db: workspace.db, environment: workspace.environment)
        defer { server.killNow() }
        let port = try #require(Int(server.url.split(separator: ":").last ?? ""))
        #expect(server.url == "http://127.0.0.1:\(port)" && port > 0)
        #expect(server.stdout == #"{"listening":"http://127.0.0.1:\#(port)"}"# + "\n")
        let health = try await HTTPClient.shared.execute(
            HTTPClientRequest(url: server.url + "/healthz"), timeout: .seconds(30))
        #expect(health.status.code == 200)
        #expect(await server.stop() == .exited(0))
        #expect(server.stdout.split(separator: "\n").count == 1, "\(server.stdout)")
    }

    /// A store a keyed server has signed: a server started without the key would be ready and
    /// refuse every audited request, so it refuses to start (exit 78), naming the flag.
    @Test func aSignedStoreNeedsTheKeyToBeServed() async throws {
        let workspace = try await Workspace()
        defer { workspace.cleanUp() }
        let key = workspace.directory.appendingPathComponent("audit.key").path
        let (_, keygenErr, keygen) = try await Self.run(
            ["audit", "keygen", "--out", key], environment: workspace.environment)
        #expect(keygen == 0, "\(keygenErr)")
        let signed = try await ServerProcess.serve(
            db: workspace.db, arguments: ["--audit-key", key], environment: workspace.environment)
        defer { signed.killNow() }
        #expect(await signed.stop() == .exited(0), "\(signed.stderr)")
        let (out, err, status) = try await Self.run(
            ["serve", "--listen", "127.0.0.1:0", "--db", workspace.db], environment: workspace.environment)
        #expect(status == 78 && out.isEmpty, "\(err)")
        #expect(err.contains("error[audit_signed_store]") && err.contains("--audit-key"), "\(err)")
    }

    /// A closed terminal or a `systemctl reload` sends SIGHUP: the server stops as on SIGTERM
    /// (drained, exit 0), not at once.
    @Test func sighupStopsItGracefully() async throws {
        let workspace = try await Workspace()
        defer { workspace.cleanUp() }
        let server = try await ServerProcess.serve(db: workspace.db, environment: workspace.environment)
        defer { server.killNow() }
        server.child.signal(SIGHUP)
        #expect(await server.child.wait(seconds: 60) == .exited(0), "\(server.stderr)")
    }

    @Test func refusesPlainHTTPOnANonLoopbackAddressWithoutTheFlag() async throws {
        let workspace = try await Workspace()
        defer { workspace.cleanUp() }
        let (out, err, status) = try await Self.run(
            ["serve", "--listen", "0.0.0.0:0", "--db", workspace.db], environment: workspace.environment)
        #expect(status == 64)
        #expect(out.isEmpty)
        #expect(err.contains("--insecure-plain-http"), "\(err)")
        // With the flag it serves: tested inside a network namespace of its own
        // (`TransportAttackTests.aTokenIsNeverSentInClearBeyondLoopback`), never on this host's
        // interfaces.
    }

    @Test func servesHTTPSAndTheConsoleTrustsTheCAFileItIsGiven() async throws {
        let workspace = try await Workspace()
        defer { workspace.cleanUp() }
        let pair = try await TLSTests.selfSigned(in: workspace.directory.appendingPathComponent("tls"))
        let server = try await ServerProcess.serve(
            db: workspace.db, arguments: ["--tls-cert", pair.cert, "--tls-key", pair.key],
            environment: workspace.environment)
        defer { server.killNow() }
        #expect(server.url.hasPrefix("https://127.0.0.1:"))
        var client = workspace.environment
        client["BACKUPCTL_SERVER"] = server.url
        client["BACKUPCTL_TOKEN"] = ServerFixture.text(workspace.setup.rootToken)
        let untrusted = try await Self.run(["whoami"], environment: client)
        #expect(untrusted.2 == 78)  // a configuration to fix, not a failure to retry
        #expect(untrusted.1.contains("tls_untrusted") && untrusted.1.contains("--ca-file"), "\(untrusted.1)")
        #expect(untrusted.1.split(separator: "\n").count == 1, "\(untrusted.1)")
        client["BACKUPCTL_CA_FILE"] = pair.cert
        let trusted = try await Self.run(["--format", "json", "whoami"], environment: client)
        #expect(trusted.2 == 0, "\(trusted.1)")
        #expect(trusted.0.contains(#""operator":"root""#))
        #expect(await server.stop() == .exited(0))
    }

    @Test func refusesToStartWithoutAStore() async throws {
        let workspace = try await Workspace()
        defer { workspace.cleanUp() }
        let missing = workspace.directory.appendingPathComponent("none.db").path
        let (out, err, status) = try await Self.run(
            ["serve", "--listen", "127.0.0.1:0", "--db", missing], environment: workspace.environment)
        #expect(status == 1)
        #expect(out.isEmpty)
        #expect(err.contains("no_store"), "\(err)")
        #expect(!FileManager.default.fileExists(atPath: missing))
    }

    @Test func theClientExitsSeventySevenWhenRefused() async throws {
        let workspace = try await Workspace()
        defer { workspace.cleanUp() }
        let server = try await ServerProcess.serve(db: workspace.db, environment: workspace.environment)
        defer { server.killNow() }
        var client = workspace.environment
        client["BACKUPCTL_SERVER"] = server.url
        let anonymous = try await Self.run(["--format", "json", "whoami"], environment: client)
        #expect(anonymous.2 == 77)
        #expect(anonymous.1.contains("missing_token"), "\(anonymous.1)")
        client["BACKUPCTL_TOKEN"] = ServerFixture.text(workspace.setup.bobToken)
        let elsewhere = try await Self.run(["--format", "json", "--tenant", "beta", "stats"], environment: client)
        #expect(elsewhere.2 == 77)
        #expect(elsewhere.1.contains("permission_denied"), "\(elsewhere.1)")
        client["BACKUPCTL_TOKEN"] = unknownToken()
        #expect(try await Self.run(["whoami"], environment: client).2 == 77)
        #expect(await server.stop() == .exited(0))
    }

    @Test func anUnreachableServerFailsAtOnceWithExitTwo() async throws {
        let workspace = try await Workspace()
        defer { workspace.cleanUp() }
        let server = try await ServerProcess.serve(db: workspace.db, environment: workspace.environment)
        defer { server.killNow() }
        #expect(await server.stop() == .exited(0))
        var client = workspace.environment
        client["BACKUPCTL_SERVER"] = server.url
        client["BACKUPCTL_TOKEN"] = ServerFixture.text(workspace.setup.rootToken)
        // Nothing listens there any more: refused, not retried until the call's deadline.
        let (_, err, status) = try await Self.run(["whoami"], environment: client)
        #expect(status == 2)
        #expect(err.contains("server_unavailable"), "\(err)")
    }

    @Test func theClientNeverOpensAStoreFile() async throws {
        let workspace = try await Workspace()
        defer { workspace.cleanUp() }
        let server = try await ServerProcess.serve(db: workspace.db, environment: workspace.environment)
        defer { server.killNow() }
        let nowhere = workspace.directory.appendingPathComponent("absent-\(UUID().uuidString)")
        var client = workspace.environment
        client["BACKUPCTL_SERVER"] = server.url
        client["BACKUPCTL_DB"] = nowhere.appendingPathComponent("console.db").path
        client["BACKUPCTL_TOKEN"] = ServerFixture.text(workspace.setup.rootToken)
        for command in ["whoami", "use sandbox", "stats", "backups list", "check"] {
            let result = try await Self.run(
                ["--format", "json", "--tenant", "sandbox", "-c", command], environment: client)
            #expect(result.2 == 0, "\(command): \(result.1)")
            #expect(!result.0.isEmpty, "\(command)")
        }
        #expect(!FileManager.default.fileExists(atPath: nowhere.path))
        #expect(await server.stop() == .exited(0))
    }

    @Test func sigtermWhileAStreamedCheckRunsDrainsItAndExitsZero() async throws {
        let workspace = try await Workspace()
        defer { workspace.cleanUp() }
        var admin = workspace.environment
        admin["BACKUPCTL_TOKEN"] = ServerFixture.text(workspace.setup.rootToken)
        let seeded = try await Self.run(
            ["--db", workspace.db, "--tenant", "sandbox", "seed", "--backups", "3000"], environment: admin)
        try #require(seeded.2 == 0, "\(seeded.1)")
        let server = try await ServerProcess.serve(db: workspace.db, environment: workspace.environment)
        defer { server.killNow() }
        let remote = try RemoteConsole(server: server.url, timeout: .seconds(60))
        let caller = Caller(token: workspace.setup.rootToken, tenant: "sandbox")
        let started = Flag()
        let job = Task {
            try await remote.perform(CheckOperation(backupId: nil, filter: FindingFilter(), limit: 100), as: caller) {
                _ in started.raise()
            }
        }
        #expect(await eventually { started.isRaised })
        server.child.signal(SIGTERM)
        // The stream ends with its result, or with the job's own `interrupted`: never cut short.
        do {
            let report = try await job.value
            #expect(report.tenant == "sandbox")
        } catch let error as ConsoleError {
            #expect(error.code == "interrupted", "\(error.code): \(error.message)")
        }
        #expect(await server.child.wait(seconds: 60) == .exited(0), "\(server.stderr)")
    }

    /// A served `cleanup run --execute` when the server is asked to stop: it starts no new
    /// deletion, its calls in flight finish, and it answers what it did within the drain
    /// instead of being cut off mid-call. The checkpoint: a first deletion is in the journal.
    @Test func aServedCleanupRunStopsWithTheServer() async throws {
        let workspace = try await Workspace()
        defer { workspace.cleanUp() }
        var admin = workspace.environment
        admin["BACKUPCTL_TOKEN"] = ServerFixture.text(workspace.setup.rootToken)
        let seeded = try await Self.run(
            ["--db", workspace.db, "--tenant", "sandbox", "seed", "--backups", "10", "--orphans", "200"],
            environment: admin)
        try #require(seeded.2 == 0, "\(seeded.1)")
        let server = try await ServerProcess.serve(db: workspace.db, environment: workspace.environment)
        defer { server.killNow() }
        var client = admin
        client["BACKUPCTL_SERVER"] = server.url
        let run = try BackupctlBinary.start(
            [
                "--format", "json", "--yes", "--tenant", "sandbox", "cleanup", "run", "--execute", "--grace", "0",
                "--max", "200",
            ],
            environment: client)
        defer { Task { await run.kill() } }
        // The checkpoint: the run's own progress line (stderr, not a terminal) says it has
        // deleted some; the 200 take 20 s at the tenant's 10 a second, so the stop comes long
        // before the last.
        #expect(await run.waitFor(seconds: 60) { $0.stderrText.contains(" deleted,") }, "\(run.stderr)")
        server.child.signal(SIGTERM)
        let answered = try await run.result(seconds: 60)
        #expect(await server.child.wait(seconds: 60) == .exited(0), "\(server.stderr)")
        // The run answered (an error saying how far it got, not a cut connection), and not 0:
        // it stopped early.
        #expect(answered.status == 2 && answered.stderr.contains("server_stopping"), "\(answered.stderr)")
        // What it did is journaled: some deleted, the rest pending, none half-sent.
        let status = try await Self.run(
            ["--db", workspace.db, "--format", "json", "--tenant", "sandbox", "cleanup", "status"], environment: admin)
        let counts = try JSONSerialization.jsonObject(with: Data(status.0.utf8)) as? [String: Any]
        let done = counts?["deleted"] as? Int ?? 0
        let pending = counts?["pending"] as? Int ?? 0
        #expect(done >= 1 && done < 200 && done + pending == 200, "\(status.0.prefix(300)) \(status.1)")
    }
}
