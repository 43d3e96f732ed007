import Access
import BackupModel
import ConsoleClient
import ConsoleService
import Foundation
import Testing

/// Who may call the server: tokens checked on every request, tenants enforced, failures
/// limited per address and audited without the token.
@Suite struct AuthenticationTests {
    @Test func noTokenIs401() async throws {
        try await ServerFixture.with { fixture in
            let raw = try await fixture.request(.POST, "/v1/ops/whoami")
            #expect(raw.status == 401)
            #expect(ServerFixture.errorCode(raw.body) == "missing_token")
            do {
                _ = try await fixture.remote().perform(WhoamiOperation(), as: Caller(token: nil, tenant: nil))
                Issue.record("answered without a token")
            } catch let error as ConsoleError {
                #expect(error.kind == .permissionDenied && error.code == "missing_token")
            }
        }
    }

    @Test func unknownOrMalformedTokenIs401() async throws {
        try await ServerFixture.with { fixture in
            let unknown = try await fixture.request(.POST, "/v1/ops/whoami", bearer: unknownToken())
            #expect(unknown.status == 401)
            #expect(ServerFixture.errorCode(unknown.body) == "invalid_token")
            let malformed = try await fixture.request(.POST, "/v1/ops/whoami", bearer: "not-a-token")
            #expect(malformed.status == 401)
            let known = try await fixture.request(
                .POST, "/v1/ops/whoami", bearer: ServerFixture.text(fixture.rootToken))
            #expect(known.status == 200, "\(known.body)")
        }
    }

    @Test func removedTokenIsRefusedOnTheVeryNextCall() async throws {
        try await ServerFixture.with { fixture in
            let remote = try fixture.remote()
            let bob = Caller(token: fixture.bobToken, tenant: "sandbox")
            #expect(try await remote.perform(WhoamiOperation(), as: bob).operator == "bob")
            #expect(try await remote.perform(StatsOperation(), as: bob).tenant == "sandbox")
            try await fixture.access.removeOperator(try OperatorName("bob"), session: try fixture.rootSession())
            await #expect(throws: ConsoleError.self) { _ = try await remote.perform(StatsOperation(), as: bob) }
            let raw = try await fixture.request(
                .POST, "/v1/ops/stats", bearer: ServerFixture.text(fixture.bobToken), tenant: "sandbox")
            #expect(raw.status == 401)
            #expect(ServerFixture.errorCode(raw.body) == "invalid_token")
        }
    }

    @Test func rotatedTokenIsRefusedOnTheVeryNextCallAndTheNewOneWorks() async throws {
        try await ServerFixture.with { fixture in
            let remote = try fixture.remote()
            #expect(
                try await remote.perform(WhoamiOperation(), as: Caller(token: fixture.bobToken, tenant: nil)).operator
                    == "bob")
            let fresh = try await fixture.access.rotateToken(
                try OperatorName("bob"), session: try fixture.rootSession())
            let old = try await fixture.request(.POST, "/v1/ops/whoami", bearer: ServerFixture.text(fixture.bobToken))
            #expect(old.status == 401)
            #expect(
                try await remote.perform(WhoamiOperation(), as: Caller(token: fresh, tenant: nil)).operator == "bob")
        }
    }

    @Test func revokedGrantIsRefusedOnTheVeryNextCall() async throws {
        try await ServerFixture.with { fixture in
            let bob = ServerFixture.text(fixture.bobToken)
            #expect(try await fixture.request(.POST, "/v1/ops/stats", bearer: bob, tenant: "sandbox").status == 200)
            try await fixture.access.revoke(try OperatorName("bob"), session: try fixture.rootSession())
            #expect(try await fixture.request(.POST, "/v1/ops/stats", bearer: bob, tenant: "sandbox").status == 403)
        }
    }

    @Test func anotherTenantIs403() async throws {
        try await ServerFixture.with { fixture in
            let raw = try await fixture.request(
                .POST, "/v1/ops/stats", bearer: ServerFixture.text(fixture.bobToken), tenant: "beta")
            #expect(raw.status == 403)
            #expect(ServerFixture.errorCode(raw.body) == "permission_denied")
            do {
                _ = try await fixture.remote().perform(
                    StatsOperation(), as: Caller(token: fixture.bobToken, tenant: "beta"))
                Issue.record("bob read tenant beta")
            } catch let error as ConsoleError {
                #expect(error.kind == .permissionDenied && error.code == "permission_denied")
            }
            // The admin of both sees beta.
            let root = try await fixture.request(
                .POST, "/v1/ops/stats", bearer: ServerFixture.text(fixture.rootToken), tenant: "beta")
            #expect(root.status == 200, "\(root.body)")
        }
    }

    @Test func failedSignInsAreLimitedPerCredentialAndAddressButNeverAValidToken() async throws {
        try await ServerFixture.with { fixture in
            let root = ServerFixture.text(fixture.rootToken)
            // One stale token (a cron job's): five tries, then 429 with Retry-After for that token.
            let stale = unknownToken("S")
            for _ in 0..<5 {
                #expect(try await fixture.request(.POST, "/v1/ops/whoami", bearer: stale).status == 401)
            }
            for _ in 0..<3 {
                let limited = try await fixture.requestWithHeaders(.POST, "/v1/ops/whoami", bearer: stale)
                #expect(limited.status == 429)
                #expect(ServerFixture.errorCode(limited.body) == "rate_limited")
                #expect(Int(limited.headers["Retry-After"] ?? "") ?? 0 >= 1, "\(limited.headers)")
            }
            // The operator at the same address is not locked out by it.
            #expect(try await fixture.request(.POST, "/v1/ops/whoami", bearer: root).status == 200)
            // Distinct unknown tokens count against the address: 25 more reach its 30.
            let presented = (0..<25).map { unknownToken(Character(String(UnicodeScalar(UInt8(97 + $0))))) }
            for token in presented {
                #expect(try await fixture.request(.POST, "/v1/ops/whoami", bearer: token).status == 401)
            }
            #expect(try await fixture.request(.POST, "/v1/ops/whoami", bearer: unknownToken("z")).status == 429)
            // No token at all is not a guess: 401 at once, limited address or not, never counted.
            #expect(try await fixture.request(.POST, "/v1/ops/whoami").status == 401)
            // Still never a valid token.
            for _ in 0..<3 {
                #expect(try await fixture.request(.POST, "/v1/ops/whoami", bearer: root).status == 200)
                #expect(
                    try await fixture.remote().perform(
                        WhoamiOperation(), as: Caller(token: fixture.rootToken, tenant: nil)
                    ).operator == "root")
            }
            do {
                _ = try await fixture.remote().perform(WhoamiOperation(), as: Caller(token: nil, tenant: nil))
                Issue.record("a request without a token got through")
            } catch let error as ConsoleError {
                #expect(error.kind == .permissionDenied && error.code == "missing_token")
            }
            let failed = try await fixture.audit().filter { $0.action == "auth.failed" }
            #expect(failed.filter { $0.details["code"] == "invalid_token" }.count == 30)
            // One entry per limited key and window, however many refusals.
            #expect(failed.filter { $0.details["code"] == "rate_limited" }.count == 2)
            #expect(failed.allSatisfy { $0.details["address"] == "127.0.0.1" && $0.target == "127.0.0.1" })
            // A minute later the address and the stale token have their tries back.
            fixture.time.advance(byMillis: 60_000)
            #expect(try await fixture.request(.POST, "/v1/ops/whoami", bearer: stale).status == 401)
            let everything = try await fixture.audit().map { "\($0.operatorName) \($0.target ?? "") \($0.details)" }
                .joined()
            for token in presented + [root, stale] { #expect(!everything.contains(token)) }
            #expect(!everything.contains("bctl_"))
        }
    }

    @Test func anOperatorsRefusalsAreLimitedSoTheAuditCannotBeFlooded() async throws {
        try await ServerFixture.with { fixture in
            let bob = ServerFixture.text(fixture.bobToken)
            // Bob may not read beta: each try is an audited refusal, up to 30 a minute.
            for _ in 0..<30 {
                #expect(try await fixture.request(.POST, "/v1/ops/stats", bearer: bob, tenant: "beta").status == 403)
            }
            for _ in 0..<20 {
                let limited = try await fixture.requestWithHeaders(.POST, "/v1/ops/stats", bearer: bob, tenant: "beta")
                #expect(limited.status == 429)
                #expect(limited.headers["Retry-After"] != nil)
            }
            // Root is not affected.
            let root = ServerFixture.text(fixture.rootToken)
            #expect(try await fixture.request(.POST, "/v1/ops/stats", bearer: root, tenant: "beta").status == 200)
            let audit = try await fixture.audit()
            let denied = audit.filter { $0.action == "access.denied" && $0.operatorName == "bob" }
            #expect(denied.count == 30)
            // Each names what bob tried (a SIEM tells a read from an attempt to take a role).
            #expect(
                denied.allSatisfy { $0.details["command"] == "stats" },
                "\(denied.first.map { $0.details } ?? [:])")
            #expect(audit.filter { $0.action == "rate.limited" && $0.operatorName == "bob" }.count == 1)
            // Counted as a limited operator, not as failed sign-ins (a brute-force alert stays quiet).
            let metrics = try await fixture.request(.GET, "/metrics").body
            #expect(
                metrics.contains(#"backupctl_operator_rate_limited_total{scope="operator_denials"} 20"#), "\(metrics)")
            #expect(metrics.contains(#"backupctl_auth_failures_total{reason="rate_limited"} 0"#), "\(metrics)")
            // Two seconds later bob earned one refusal back (30 a minute).
            fixture.time.advance(byMillis: 2_000)
            #expect(try await fixture.request(.POST, "/v1/ops/stats", bearer: bob, tenant: "sandbox").status == 200)
        }
    }
}
