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

    @Test func failedSignInsAreLimitedPerAddressAndAuditedWithoutTheToken() async throws {
        try await ServerFixture.with { fixture in
            // Ten distinct wrong tokens: each is refused as unknown, and audited.
            let presented = (0..<10).map { unknownToken(Character(String(UnicodeScalar(UInt8(65 + $0))))) }
            for token in presented {
                #expect(try await fixture.request(.POST, "/v1/ops/whoami", bearer: token).status == 401)
            }
            // Limited now: even the admin's good token is not looked at from this address.
            let root = ServerFixture.text(fixture.rootToken)
            for _ in 0..<3 {
                let limited = try await fixture.request(.POST, "/v1/ops/whoami", bearer: root)
                #expect(limited.status == 429)
                #expect(ServerFixture.errorCode(limited.body) == "rate_limited")
            }
            do {
                _ = try await fixture.remote().perform(
                    WhoamiOperation(), as: Caller(token: fixture.rootToken, tenant: nil))
                Issue.record("a limited address got through")
            } catch let error as ConsoleError {
                #expect(error.kind == .permissionDenied && error.code == "rate_limited")
            }
            let failed = try await fixture.audit().filter { $0.action == "auth.failed" }
            #expect(failed.filter { $0.details["code"] == "invalid_token" }.count == 10)
            // Four refusals while limited, one entry.
            #expect(failed.filter { $0.details["code"] == "rate_limited" }.count == 1)
            #expect(failed.allSatisfy { $0.details["address"] == "127.0.0.1" && $0.target == "127.0.0.1" })
            // A minute later the address has its ten tries back.
            fixture.time.advance(byMillis: 60_000)
            #expect(try await fixture.request(.POST, "/v1/ops/whoami", bearer: root).status == 200)
            for token in presented {
                #expect(try await fixture.request(.POST, "/v1/ops/whoami", bearer: token).status == 401)
            }
            #expect(try await fixture.request(.POST, "/v1/ops/whoami", bearer: root).status == 429)
            let everything = try await fixture.audit().map { "\($0.operatorName) \($0.target ?? "") \($0.details)" }
                .joined()
            for token in presented + [root] { #expect(!everything.contains(token)) }
            #expect(!everything.contains("bctl_"))
        }
    }
}
