import Access
import BackupCrypto
import BackupModel
import BackupctlTestSupport
import ConsoleStore
import Foundation
import Testing

/// Token rotation, operator removal and tenant deletion: who may, and what is left afterwards.
@Suite struct LifecycleTests {
    @Test(arguments: TestBackend.available) func rotationKillsTheOldTokenAtOnce(backend: TestBackend) async throws {
        let t = try await TempStore(backend)
        let (_, root) = try await t.bootstrap()
        let access = t.access(seed: 11)
        let bob = try OperatorName("bob")
        let old = try await access.addOperator(bob, role: .viewer, session: root)
        let new = try await access.rotateToken(bob, session: root)
        #expect(OperatorToken.hash(new) != OperatorToken.hash(old))
        let denied = await #expect(throws: ConsoleError.self) { try await access.authenticate(token: old) }
        #expect(denied?.code == "invalid_token")
        let bobRecord = try await access.authenticate(token: new)
        #expect(bobRecord.name == bob)
        // bob rotates his own token as a viewer; he may not rotate root's.
        let bobSession = try await access.session(operator: bobRecord, tenant: root.tenantName)
        _ = try await access.rotateToken(bob, session: bobSession)
        let refused = await #expect(throws: ConsoleError.self) {
            try await access.rotateToken(root.operatorName, session: bobSession)
        }
        #expect(refused?.kind == .permissionDenied)
        let actions = try await t.store.auditEntries(tenant: root.tenantName, afterSeq: 0, limit: 100).map(\.action)
        #expect(actions.filter { $0 == "operator.token_rotate" }.count == 2)
    }

    @Test(arguments: TestBackend.available) func anAdminOfOneTenantCannotRotateOrRemoveAnOperatorOfAnother(
        backend: TestBackend
    ) async throws {
        let t = try await TempStore(backend)
        let (rootOp, root) = try await t.bootstrap()
        let access = t.access(seed: 12)
        try await access.createTenant(
            TenantRecord(name: try TenantName("prod"), isSandbox: true, createdAt: 1), by: rootOp)
        let prod = try await access.session(operator: rootOp, tenant: try TenantName("prod"))
        // ann is admin of sandbox only; carl has roles in sandbox and prod.
        let ann = try OperatorName("ann")
        let carl = try OperatorName("carl")
        let annToken = try await access.addOperator(ann, role: .admin, session: root)
        _ = try await access.addOperator(carl, role: .viewer, session: root)
        try await access.grant(carl, role: .support, session: prod)
        let annSession = try await access.session(
            operator: try await access.authenticate(token: annToken), tenant: root.tenantName)
        for attempt in [
            { _ = try await access.rotateToken(carl, session: annSession) },
            { try await access.removeOperator(carl, session: annSession) },
        ] as [() async throws -> Void] {
            let error = await #expect(throws: ConsoleError.self) { try await attempt() }
            // Refused without naming a tenant ann does not hold, and audited as a refusal.
            #expect(error?.kind == .permissionDenied && error?.message.contains("1 tenant(s)") == true)
            #expect(error?.message.contains("prod") == false)
            let last = try await t.store.latestAuditEntries(tenant: root.tenantName, limit: 1).first
            #expect(
                last?.action == "access.denied" && last?.operatorName == "ann" && last?.details["operator"] == "carl")
        }
        // root is admin of both: carl goes, with his grants everywhere.
        try await access.removeOperator(carl, session: root)
        #expect(try await t.store.operatorRecord(named: carl) == nil)
        #expect(try await t.store.grants(tenant: try TenantName("prod")).allSatisfy { $0.operatorName != carl })
        let again = await #expect(throws: ConsoleError.self) { try await access.removeOperator(carl, session: root) }
        #expect(again?.kind == .notFound)
        let selfRemoval = await #expect(throws: ConsoleError.self) {
            try await access.removeOperator(rootOp.name, session: root)
        }
        #expect(selfRemoval?.code == "cannot_remove_self")
    }

    @Test(arguments: TestBackend.available) func deletingATenantLeavesOthersAndTheAuditChainIntact(backend: TestBackend)
        async throws
    {
        let t = try await TempStore(backend)
        let (rootOp, root) = try await t.bootstrap()
        let access = t.access(seed: 13)
        let scratch = try TenantName("scratch")
        try await access.createTenant(TenantRecord(name: scratch, isSandbox: true, createdAt: 1), by: rootOp)
        let session = try await access.session(operator: rootOp, tenant: scratch)
        _ = try await SandboxSeeder(store: t.store) { 1_780_000_000 }.run(
            tenant: session.tenant, backups: 7, orphans: 2, seed: 3, operatorName: "root")
        _ = try await SandboxSeeder(store: t.store) { 1_780_000_000 }.run(
            tenant: root.tenant, backups: 4, orphans: 0, seed: 4, operatorName: "root")
        let viewer = try OperatorName("vic")
        let vicToken = try await access.addOperator(viewer, role: .viewer, session: session)
        let vicSession = try await access.session(
            operator: try await access.authenticate(token: vicToken), tenant: scratch)
        let denied = await #expect(throws: ConsoleError.self) { try await access.deleteTenant(session: vicSession) }
        #expect(denied?.kind == .permissionDenied)

        #expect(try await access.deleteTenant(session: session) == 7)
        #expect(try await t.store.tenant(scratch) == nil)
        #expect(try await t.store.backupCount(tenant: scratch) == 0)
        #expect(try await t.store.grants(tenant: scratch).isEmpty)
        var sandboxSubOrgs = 0
        try await t.store.forEachSandboxSubOrg(tenant: scratch, batchSize: 100) { sandboxSubOrgs += $0.count }
        #expect(sandboxSubOrgs == 0)
        #expect(try await t.store.backupCount(tenant: root.tenantName) == 4)
        await #expect(try AuditLog.verify(store: t.store).ok)
        let last = try await t.store.auditEntries(tenant: scratch, afterSeq: 0, limit: 1000).last
        #expect(last?.action == "tenant.delete" && last?.details["backups"] == "7")
    }
}
