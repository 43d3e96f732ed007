import Access
import BackupCrypto
import BackupModel
import BackupctlTestSupport
import ConsoleStore
import Foundation
import GRDB
import Testing

/// The audit log records what happened: refusals as failures with their code, no entry for a
/// change that did not happen, and a tenant admin's `audit verify` that shows only its tenant.
@Suite struct AuditTruthTests {
    func entries(_ fixture: TempStore) async throws -> [AuditEntry] {
        try await fixture.store.auditEntries(tenant: nil, afterSeq: 0, limit: 10_000)
    }

    @Test(arguments: TestBackend.available) func revokingAMissingGrantFailsWithoutAnEntry(backend: TestBackend)
        async throws
    {
        let fixture = try await TempStore(backend)
        let (_, root) = try await fixture.bootstrap()
        let access = fixture.access(seed: 11)
        _ = try await access.addOperator(try OperatorName("bob"), role: .viewer, session: root)
        try await access.revoke(try OperatorName("bob"), session: root)
        let before = try await entries(fixture)
        #expect(before.last?.action == "operator.revoke")
        let error = await #expect(throws: ConsoleError.self) {
            try await access.revoke(try OperatorName("bob"), session: root)
        }
        #expect(error?.code == "not_found")
        let ghost = await #expect(throws: ConsoleError.self) {
            try await access.revoke(try OperatorName("ghost"), session: root)
        }
        #expect(ghost?.code == "not_found")
        await #expect(try entries(fixture) == before)
    }

    @Test(arguments: TestBackend.available) func deniedCommandsAreAuditedAsFailuresWithTheirCode(backend: TestBackend)
        async throws
    {
        let fixture = try await TempStore(backend)
        let (rootOp, root) = try await fixture.bootstrap()
        let access = fixture.access(seed: 11)
        let token = try await access.addOperator(try OperatorName("vera"), role: .viewer, session: root)
        let vera = try await access.authenticate(token: token)
        let session = try await access.session(operator: vera, tenant: root.tenantName)
        let before = try await entries(fixture).count

        let denied = await #expect(throws: ConsoleError.self) {
            try await AuditLog(store: fixture.store).verify(session: session)
        }
        #expect(denied?.code == "permission_denied")
        let entry = try await #require(try entries(fixture).last)
        #expect(entry.action == "access.denied")
        #expect(entry.operatorName == "vera" && entry.tenant == "sandbox")
        #expect(entry.details["code"] == "permission_denied")
        #expect(entry.details["command"] == "audit verify")
        #expect(entry.details["outcome"] == "failure")

        // A tenant without a grant, and tenant creation without the right, are refusals too.
        try await access.createTenant(
            TenantRecord(name: try TenantName("other"), isSandbox: true, createdAt: 1), by: rootOp)
        await #expect(throws: ConsoleError.self) {
            try await access.session(operator: vera, tenant: try TenantName("other"))
        }
        await #expect(throws: ConsoleError.self) {
            try await access.createTenant(
                TenantRecord(name: try TenantName("mine"), isSandbox: true, createdAt: 1), by: vera)
        }
        let after = try await entries(fixture)
        let denials = after.filter { $0.action == "access.denied" }
        #expect(denials.count == 3)
        #expect(denials.map(\.tenant) == ["sandbox", "other", nil])
        #expect(denials.allSatisfy { $0.details["code"] == "permission_denied" })
        // Nothing but the denials and the tenant creation was written.
        #expect(
            Set(after.dropFirst(before).map(\.action)) == ["access.denied", "tenant.create", "operator.grant"])
        #expect(try await fixture.store.tenant(try TenantName("mine")) == nil)
        await #expect(try AuditLog.verify(store: fixture.store).ok)
    }

    @Test(arguments: TestBackend.available) func aTenantAdminVerifiesOnlyItsTenant(backend: TestBackend) async throws {
        let fixture = try await TempStore(backend)
        let (rootOp, root) = try await fixture.bootstrap()
        let access = fixture.access(seed: 11)
        try await access.createTenant(
            TenantRecord(name: try TenantName("acme"), isSandbox: true, createdAt: 1), by: rootOp)
        let acmeRoot = try await access.session(operator: rootOp, tenant: try TenantName("acme"))
        let token = try await access.addOperator(try OperatorName("ada"), role: .admin, session: acmeRoot)
        let ada = try await access.authenticate(token: token)
        let adaSession = try await access.session(operator: ada, tenant: try TenantName("acme"))
        for i in 0..<5 { try await fixture.store.appendAudit(root.audit("note", target: "\(i)")) }

        let log = AuditLog(store: fixture.store)
        let all = try await log.verify(session: root)
        let scoped = try await log.verify(session: adaSession)
        let everything = try await entries(fixture)
        let acme = everything.filter { $0.tenant == "acme" }
        #expect(all.ok && all.scope == "all" && all.entries == everything.count)
        #expect(all.headHash == everything.last?.hash)
        #expect(scoped.ok && scoped.scope == "acme" && scoped.entries == acme.count)
        #expect(scoped.headHash == acme.last?.hash)
        #expect(scoped.entries < all.entries && scoped.headHash != all.headHash)

        // A break in another tenant's entry: not ok, but not located for the tenant admin.
        let victim = try #require(everything.first { $0.tenant == "sandbox" && $0.action == "note" })
        try await tamper(fixture, seq: victim.seq)
        let brokenScoped = try await log.verify(session: adaSession)
        #expect(!brokenScoped.ok && brokenScoped.firstBadSeq == nil && brokenScoped.scope == "acme")
        let brokenAll = try await log.verify(session: root)
        #expect(!brokenAll.ok && brokenAll.firstBadSeq == victim.seq)
    }

    /// Rewrites one entry's target behind the store's back, as an attacker with the file would.
    func tamper(_ fixture: TempStore, seq: Int64) async throws {
        _ = try await storeSQL(fixture.store, "UPDATE audit SET target = 'forged' WHERE seq = \(seq)")
    }
}
