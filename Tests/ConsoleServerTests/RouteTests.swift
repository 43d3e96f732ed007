import BackupModel
import BackupctlTestSupport
import ConsoleClient
import ConsoleService
import Foundation
import Inspect
import Testing

/// The routes besides authentication: unknown operations, health, metrics, the OpenAPI
/// document, and a streamed job through RemoteConsole.
@Suite struct RouteTests {
    @Test func unknownOperationIs404() async throws {
        try await ServerFixture.with { fixture in
            let raw = try await fixture.request(
                .POST, "/v1/ops/no.such.op", bearer: ServerFixture.text(fixture.rootToken))
            #expect(raw.status == 404)
            #expect(ServerFixture.errorCode(raw.body) == "unknown_operation")
            let route = try await fixture.request(.GET, "/v2/nothing")
            #expect(route.status == 404)
            #expect(ServerFixture.errorCode(route.body) == "not_found")
            let method = try await fixture.request(.GET, "/v1/ops/whoami")
            #expect(method.status == 405)
        }
    }

    @Test func undecodableBodyIsAUsageError() async throws {
        try await ServerFixture.with { fixture in
            let raw = try await fixture.request(
                .POST, "/v1/ops/show", bearer: ServerFixture.text(fixture.rootToken), body: #"{"backupId": 7}"#)
            #expect(raw.status == 400)
            #expect(ServerFixture.errorCode(raw.body) == "invalid_request")
        }
    }

    @Test func healthReadinessAndOpenAPI() async throws {
        try await ServerFixture.with { fixture in
            #expect(try await fixture.request(.GET, "/healthz").status == 200)
            #expect(try await fixture.request(.GET, "/readyz").status == 200)
            let openapi = try await fixture.request(.GET, "/openapi.json")
            #expect(openapi.status == 200)
            let document = try JSONSerialization.jsonObject(with: Data(openapi.body.utf8)) as? [String: Any]
            let paths = document?["paths"] as? [String: Any]
            #expect(paths?["/v1/ops/whoami"] != nil)
        }
    }

    @Test func metricsCountRequestsFailuresAndAuditAppends() async throws {
        try await ServerFixture.with { fixture in
            let root = ServerFixture.text(fixture.rootToken)
            let entriesBefore = try await fixture.audit().count
            #expect(try await fixture.request(.POST, "/v1/ops/whoami", bearer: root).status == 200)
            #expect(try await fixture.request(.POST, "/v1/ops/whoami", bearer: unknownToken()).status == 401)
            #expect(try await fixture.request(.POST, "/v1/ops/stats", bearer: root, tenant: "sandbox").status == 200)
            let metrics = try await fixture.request(.GET, "/metrics")
            #expect(metrics.status == 200)
            let text = metrics.body
            #expect(text.contains(#"backupctl_requests_total{op="whoami",status="200"} 1"#), "\(text)")
            #expect(text.contains(#"backupctl_requests_total{op="whoami",status="401"} 1"#))
            #expect(text.contains(#"backupctl_request_duration_seconds_count{op="stats",status="200"} 1"#))
            #expect(text.contains(#"backupctl_auth_failures_total{reason="invalid_token"} 1"#))
            // Exactly the entries appended since the server started (the failed sign-in among them),
            // once the background check (every 0.5 s; a scrape never waits for the store) saw them.
            let entriesNow = try await fixture.audit().count
            #expect(entriesNow > entriesBefore)
            func appended() async throws -> Int? {
                let text = try await fixture.request(.GET, "/metrics").body
                let line = text.split(separator: "\n").first { $0.hasPrefix("backupctl_audit_appends_total ") }
                return line.flatMap { Int($0.split(separator: " ").last ?? "") }
            }
            let counted = await eventually(seconds: 10) { (try? await appended()) == entriesNow - entriesBefore }
            let last = try await appended()
            #expect(counted, "\(String(describing: last)) of \(entriesNow - entriesBefore)")
            // The store's WAL file as the scrape found it: nothing is written while nobody asks.
            let walLine = try await fixture.request(.GET, "/metrics").body.split(separator: "\n")
                .first { $0.hasPrefix("backupctl_sqlite_wal_bytes ") }
            let wal = try FileManager.default.attributesOfItem(atPath: fixture.path + "-wal")[.size] as? Int
            #expect(
                walLine.flatMap { Double($0.split(separator: " ").last ?? "") }.map(Int.init) == wal,
                "\(String(describing: walLine))")
            #expect((wal ?? 0) > 0)
        }
    }

    @Test func theCleanupGaugesFollowTheStreamedProgressOfTheCleanupRun() async throws {
        let operations = ConsoleOperations.byName.merging([CleanupRunProbe.name: CleanupRunProbe.self]) { $1 }
        try await ServerFixture.with(operations: operations) { fixture in
            let seen = Flag()
            _ = try await fixture.remote().perform(
                CleanupRunProbe(), as: Caller(token: fixture.rootToken, tenant: "sandbox")
            ) { event in if event.done == 5 { seen.raise() } }
            #expect(seen.isRaised)
            let text = try await fixture.request(.GET, "/metrics").body
            #expect(text.contains("backupctl_cleanup_progress_done 5"), "\(text)")
            #expect(text.contains("backupctl_cleanup_progress_total 7"))
            #expect(text.contains(#"backupctl_requests_total{op="cleanup.run",status="200"} 1"#))
        }
    }

    @Test func aStreamedJobRoundTripsThroughRemoteConsole() async throws {
        try await ServerFixture.with { fixture in
            let remote = try fixture.remote()
            let caller = Caller(token: fixture.rootToken, tenant: "sandbox")
            let report = try await remote.perform(
                CheckOperation(backupId: nil, filter: FindingFilter(), limit: 100), as: caller)
            let local = try await LocalConsole(storePath: fixture.path).perform(
                CheckOperation(backupId: nil, filter: FindingFilter(), limit: 100), as: caller)
            #expect(report == local)
            // A streamed error comes back as the same error.
            do {
                _ = try await remote.perform(
                    CheckOperation(backupId: nil, filter: FindingFilter(), limit: 0), as: caller)
                Issue.record("limit 0 was accepted")
            } catch let error as ConsoleError {
                #expect(error.code == "invalid_limit")
            }
        }
    }
}
