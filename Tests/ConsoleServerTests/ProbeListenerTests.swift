import AsyncHTTPClient
import BackupctlTestSupport
import Foundation
import NIOCore
import NIOHTTP1
import Testing

/// `serve --probe-listen`: `/healthz`, `/readyz` and `/metrics` on a listener of their own, and a
/// readiness that reports what a load balancer must know — here, a signer that cannot sign.
@Suite(.serialized, .timeLimit(.minutes(10))) struct ProbeListenerTests {
    static func get(_ url: String, method: HTTPMethod = .GET) async throws -> (
        status: Int, body: String, headers: HTTPHeaders
    ) {
        var request = HTTPClientRequest(url: url)
        request.method = method
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(30))
        var buffer = try await response.body.collect(upTo: 1 << 20)
        return (Int(response.status.code), buffer.readString(length: buffer.readableBytes) ?? "", response.headers)
    }

    @Test func probesHaveTheirOwnListenerAndReadinessReportsASignerThatCannotSign() async throws {
        let workspace = try await ServeProcessTests.Workspace()
        defer { workspace.cleanUp() }
        let keys = workspace.directory.appendingPathComponent("keys")
        try FileManager.default.createDirectory(at: keys, withIntermediateDirectories: true)
        let key = keys.appendingPathComponent("audit.key").path
        let (_, keygenErr, keygen) = try await ServeProcessTests.run(
            ["audit", "keygen", "--out", key], environment: workspace.environment)
        #expect(keygen == 0, "\(keygenErr)")
        let server = try await ServerProcess.serve(
            db: workspace.db,
            // One priority for all (`--work-nice 0`): the server competes with the test run's
            // other work on equal terms (the priorities have their own test).
            arguments: [
                "--probe-listen", "127.0.0.1:0", "--work-nice", "0", "--audit-key", key, "--checkpoint-entries", "1",
            ],
            environment: workspace.environment)
        defer { server.killNow() }
        let probes = try #require(server.probesURL, "\(server.stdout)")
        #expect(probes != server.url && probes.hasPrefix("http://127.0.0.1:"))

        let health = try await Self.get(probes + "/healthz")
        #expect(health.status == 200 && health.body == #"{"status":"ok"}"#)
        let ready = try await Self.get(probes + "/readyz")
        #expect(ready.status == 200 && ready.body == #"{"status":"ready"}"#)
        let metrics = try await Self.get(probes + "/metrics")
        #expect(metrics.status == 200 && metrics.body.contains("backupctl_requests_total"), "\(metrics.body)")
        // Nothing else: no operations, no document, no writes.
        #expect(try await Self.get(probes + "/openapi.json").status == 404)
        #expect(try await Self.get(probes + "/v1/ops/whoami", method: .POST).status == 404)
        #expect(try await Self.get(probes + "/healthz", method: .POST).status == 405)
        #expect(try await Self.get(server.url + "/readyz").status == 200)

        // The signer loses its high-water mark's directory: the next checkpoint cannot be
        // anchored. The server says so in its log and stops reporting ready, on both listeners.
        try FileManager.default.removeItem(at: keys)
        let token = ServerFixture.text(workspace.setup.rootToken)
        var environment = workspace.environment
        environment["BACKUPCTL_TOKEN"] = token
        let (_, statsErr, stats) = try await ServeProcessTests.run(
            ["--server", server.url, "--tenant", "sandbox", "stats"], environment: environment)
        #expect(stats == 0, "\(statsErr)")
        let unready = await eventually(seconds: 30) { (try? await Self.get(probes + "/readyz").status) == 503 }
        #expect(unready, "\(server.stderr)")
        let refused = try await Self.get(server.url + "/readyz")
        #expect(refused.status == 503 && refused.body.contains("audit_signing_failed"), "\(refused.body)")
        // Anyone may ask: the answer names no path of the server's disk, and says when to ask again.
        #expect(!refused.body.contains(keys.path) && !refused.body.contains("hwm"), "\(refused.body)")
        #expect(refused.headers["Retry-After"].first == "1")
        // The log line follows the state a probe reads: waited for, not raced.
        #expect(await server.waitForStderr("not ready"), "\(server.stderr)")
        #expect(try await Self.get(probes + "/healthz").status == 200)
    }

    #if os(Linux)
        /// `--work-nice`: every thread of the server but the probe listener's runs that many nice
        /// levels below it (10 by default with --probe-listen), threads started later included.
        /// What it buys, a probe's p99 under load, is a bench figure (`throughput`); here, the
        /// priorities themselves, read from /proc.
        @Test func theRequestWorkRunsBelowTheProbeListener() async throws {
            let workspace = try await ServeProcessTests.Workspace()
            defer { workspace.cleanUp() }
            for (extra, drop) in [([String](), Int32(10)), (["--work-nice", "3"], 3), (["--work-nice", "0"], 0)] {
                let server = try await ServerProcess.serve(
                    db: workspace.db, arguments: ["--probe-listen", "127.0.0.1:0"] + extra,
                    environment: workspace.environment)
                defer { server.killNow() }
                // A request makes the store's and the request's threads, which the server lowers
                // on its next round.
                let probes = try #require(server.probesURL, "\(server.stdout)")
                #expect(try await Self.get(server.url + "/readyz").status == 200)
                var seen: [(name: String, nice: Int32)] = []
                let settled = await eventually(seconds: 30) {
                    seen = Self.threads(of: server.child.pid)
                    guard let probe = seen.first(where: { $0.name == "probes" }) else { return false }
                    let others = seen.filter { $0.name != "probes" }
                    return drop == 0
                        ? others.allSatisfy { $0.nice <= probe.nice }
                        : others.allSatisfy { $0.nice == min(19, probe.nice + drop) }
                }
                #expect(settled, "--work-nice \(drop): \(seen)")
                #expect(seen.filter { $0.name == "probes" }.count == 1, "\(seen)")
                #expect(try await Self.get(probes + "/healthz").status == 200)
                if drop == 10 { #expect(await server.waitForStderr("request work runs at nice"), "\(server.stderr)") }
                #expect(await server.stop() == .exited(0), "\(server.stderr)")
            }
            // Without a probe listener there is nothing to keep ahead of the work.
            let (out, err, status) = try await ServeProcessTests.run(
                ["serve", "--listen", "127.0.0.1:0", "--work-nice", "5", "--db", workspace.db],
                environment: workspace.environment)
            #expect(status == 64 && out.isEmpty && err.contains("--work-nice goes with --probe-listen"), "\(err)")
            let (_, tooFar, tooFarStatus) = try await ServeProcessTests.run(
                ["serve", "--listen", "127.0.0.1:0", "--probe-listen", "127.0.0.1:0", "--work-nice", "20"],
                environment: workspace.environment)
            #expect(tooFarStatus == 64 && tooFar.contains("--work-nice must be 0…19"), "\(tooFar)")
        }

        /// Each thread of process `pid`: its name and nice value (/proc/PID/task/TID/stat, field 19).
        static func threads(of pid: pid_t) -> [(name: String, nice: Int32)] {
            let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
            return tasks.compactMap { id in
                guard let stat = try? String(contentsOfFile: "/proc/\(pid)/task/\(id)/stat", encoding: .utf8),
                    let open = stat.firstIndex(of: "("), let close = stat.lastIndex(of: ")")
                else { return nil }
                // Fields after the name: state is field 3, nice field 19.
                let fields = stat[stat.index(after: close)...].split(separator: " ")
                guard fields.count > 16, let nice = Int32(fields[16]) else { return nil }
                return (String(stat[stat.index(after: open)..<close]), nice)
            }
        }
    #endif

    @Test func aProbeListenerOnTheAPIsAddressIsRefused() async throws {
        let workspace = try await ServeProcessTests.Workspace()
        defer { workspace.cleanUp() }
        let (out, err, status) = try await ServeProcessTests.run(
            ["serve", "--listen", "127.0.0.1:18999", "--probe-listen", "127.0.0.1:18999", "--db", workspace.db],
            environment: workspace.environment)
        #expect(status == 64 && out.isEmpty, "\(err)")
        #expect(err.contains("--probe-listen must differ from --listen"), "\(err)")
    }

    /// The probe listener stops with the server's own group: before, it ran a group of its own
    /// that took SIGTERM too and sometimes ended first, and the stop failed with exit 1 ("a
    /// service has finished unexpectedly"), about one stop in six. Ten stops, every one 0.
    @Test func everyStopWithAProbeListenerExitsZero() async throws {
        let workspace = try await ServeProcessTests.Workspace()
        defer { workspace.cleanUp() }
        for _ in 0..<10 {
            let server = try await ServerProcess.serve(
                db: workspace.db, arguments: ["--probe-listen", "127.0.0.1:0", "--work-nice", "0"],
                environment: workspace.environment)
            defer { server.killNow() }
            #expect(await server.stop() == .exited(0), "\(server.stderr)")
        }
    }
}
