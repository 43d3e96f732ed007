import BackupModel
import Foundation
import Testing

@testable import ConsoleStore

/// The access version moves with every change to tenants, operators and grants (the triggers of
/// `v7-access-version`), and with nothing else: sessions cached against it are exact.
@Suite struct AccessVersionTests {
    @Test func changesToAccessMoveItAndOtherWritesDoNot() throws {
        try withStore { store, _ in
            var seen = try store.accessVersion()
            func moved() throws -> Bool {
                let now = try store.accessVersion()
                defer { seen = now }
                return now > seen
            }
            let bob = try OperatorName("bob")
            try store.addOperator(
                OperatorRecord(name: bob, canCreateTenants: false, createdAt: 1),
                tokenHash: String(repeating: "a", count: 64),
                audit: draft("operator.add", tenant: alpha, target: "bob"))
            #expect(try moved())
            try store.grant(
                GrantRecord(operatorName: bob, tenant: alpha, role: .viewer), audit: draft("operator.grant"))
            #expect(try moved())
            _ = try store.appendAudit(draft("backup.show", tenant: alpha, target: "x"))
            #expect(try !moved())
            #expect(try store.revoke(operator: bob, tenant: alpha, audit: draft("operator.revoke")))
            #expect(try moved())
            try store.createTenant(
                TenantRecord(name: try TenantName("gamma"), isSandbox: true, createdAt: 2),
                audit: draft("tenant.create"))
            #expect(try moved())
        }
    }
}
