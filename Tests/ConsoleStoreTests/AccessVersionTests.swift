import BackupModel
import Foundation
import Testing

@testable import ConsoleStore

/// The access version moves with every change to tenants, operators and grants (the triggers of
/// `v7-access-version`), and with nothing else: sessions cached against it are exact.
@Suite struct AccessVersionTests {
    @Test func changesToAccessMoveItAndOtherWritesDoNot() async throws {
        try await withStore { store, _ in
            var seen = try await store.accessVersion()
            func moved() async throws -> Bool {
                let now = try await store.accessVersion()
                defer { seen = now }
                return now > seen
            }
            let bob = try OperatorName("bob")
            try await store.addOperator(
                OperatorRecord(name: bob, canCreateTenants: false, createdAt: 1),
                tokenHash: String(repeating: "a", count: 64),
                audit: draft("operator.add", tenant: alpha, target: "bob"))
            await #expect(try moved())
            try await store.grant(
                GrantRecord(operatorName: bob, tenant: alpha, role: .viewer), audit: draft("operator.grant"))
            await #expect(try moved())
            _ = try await store.appendAudit(draft("backup.show", tenant: alpha, target: "x"))
            await #expect(try !moved())
            #expect(try await store.revoke(operator: bob, tenant: alpha, audit: draft("operator.revoke")))
            await #expect(try moved())
            try await store.createTenant(
                TenantRecord(name: try TenantName("gamma"), isSandbox: true, createdAt: 2),
                audit: draft("tenant.create"))
            await #expect(try moved())
        }
    }
}
