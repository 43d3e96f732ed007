import BackupModel
import BackupctlTestSupport
import Foundation
import Testing

@testable import ConsoleStore

/// `audit list --operator --action --since` in SQL, and backup id prefixes.
@Suite struct AuditQueryTests {
    @Test func filtersByOperatorActionFamilyTimeAndSequence() async throws {
        try await withStore { store, _ in
            let drafts: [(String, String)] = [
                ("ann", "reset.begin"), ("bob", "reset.complete"), ("ann", "backup.show"), ("ann", "resetx"),
                ("bob", "reset.begin"),
            ]
            for (op, action) in drafts {
                try await store.appendAudit(AuditDraft(operatorName: op, tenant: alpha.rawValue, action: action))
            }
            try await store.appendAudit(AuditDraft(operatorName: "ann", tenant: beta.rawValue, action: "reset.begin"))
            func actions(_ query: AuditQuery, limit: Int = 100) async throws -> [String] {
                try await store.auditEntries(query, limit: limit).map { "\($0.operatorName):\($0.action)" }
            }
            await #expect(
                try actions(AuditQuery(tenant: alpha, action: "reset.")) == [
                    "ann:reset.begin", "bob:reset.complete", "bob:reset.begin",
                ])
            await #expect(
                try actions(AuditQuery(tenant: alpha, action: "reset.*"))
                    == actions(AuditQuery(tenant: alpha, action: "reset.")))
            await #expect(
                try actions(AuditQuery(tenant: alpha, operatorName: "ann", action: "reset.begin")) == [
                    "ann:reset.begin"
                ])
            await #expect(
                try actions(AuditQuery(tenant: alpha, operatorName: "ann"), limit: 2) == [
                    "ann:backup.show", "ann:resetx",
                ])
            await #expect(try actions(AuditQuery(tenant: alpha, sinceMillis: testClockMillis + 1)).isEmpty)
            await #expect(try actions(AuditQuery(tenant: alpha, sinceMillis: testClockMillis)).count == 5)
            let all = try await store.auditEntries(AuditQuery(tenant: alpha), limit: 100)
            let tail = try await store.auditEntries(AuditQuery(tenant: alpha, afterSeq: all[3].seq), limit: 100)
            #expect(tail.map(\.seq) == all.dropFirst(4).map(\.seq))
        }
    }

    @Test func backupIdsByPrefixAreARangeOfOneTenant() async throws {
        try await withStore { store, _ in
            let sandbox = try #require(try await store.tenant(beta))
            _ = try await SandboxSeeder(store: store) { 1_780_000_000 }.run(
                tenant: sandbox, backups: 200, orphans: 0, seed: 11, operatorName: "tester")
            var ids: [String] = []
            try await store.forEachBackup(tenant: beta, batchSize: 500) { ids += $0.map(\.backupId) }
            for prefix in ["backup_account_02", "backup_account_03a", String(ids[17].prefix(19)), ids[42]] {
                let expected = ids.filter { $0.hasPrefix(prefix) }.sorted()
                #expect(try await store.backupIds(tenant: beta, prefix: prefix, limit: 1000) == expected)
                #expect(try await store.backupIds(tenant: beta, prefix: prefix, limit: 2) == Array(expected.prefix(2)))
            }
            #expect(try await store.backupIds(tenant: alpha, prefix: "backup_account_", limit: 10).isEmpty)
            #expect(try await store.backupIds(tenant: beta, prefix: "backup_account_04", limit: 10).isEmpty)
        }
    }
}
