import BackupModel
import Foundation
import Testing

@testable import ConsoleStore

/// `audit list --operator --action --since` in SQL, and backup id prefixes.
@Suite struct AuditQueryTests {
    @Test func filtersByOperatorActionFamilyTimeAndSequence() throws {
        try withStore { store, _ in
            let drafts: [(String, String)] = [
                ("ann", "reset.begin"), ("bob", "reset.complete"), ("ann", "backup.show"), ("ann", "resetx"),
                ("bob", "reset.begin"),
            ]
            for (op, action) in drafts {
                try store.appendAudit(AuditDraft(operatorName: op, tenant: alpha.rawValue, action: action))
            }
            try store.appendAudit(AuditDraft(operatorName: "ann", tenant: beta.rawValue, action: "reset.begin"))
            func actions(_ query: AuditQuery, limit: Int = 100) throws -> [String] {
                try store.auditEntries(query, limit: limit).map { "\($0.operatorName):\($0.action)" }
            }
            #expect(
                try actions(AuditQuery(tenant: alpha, action: "reset.")) == [
                    "ann:reset.begin", "bob:reset.complete", "bob:reset.begin",
                ])
            #expect(
                try actions(AuditQuery(tenant: alpha, action: "reset.*"))
                    == actions(AuditQuery(tenant: alpha, action: "reset.")))
            #expect(
                try actions(AuditQuery(tenant: alpha, operatorName: "ann", action: "reset.begin")) == [
                    "ann:reset.begin"
                ])
            #expect(
                try actions(AuditQuery(tenant: alpha, operatorName: "ann"), limit: 2) == [
                    "ann:backup.show", "ann:resetx",
                ])
            #expect(try actions(AuditQuery(tenant: alpha, sinceMillis: testClockMillis + 1)).isEmpty)
            #expect(try actions(AuditQuery(tenant: alpha, sinceMillis: testClockMillis)).count == 5)
            let all = try store.auditEntries(AuditQuery(tenant: alpha), limit: 100)
            let tail = try store.auditEntries(AuditQuery(tenant: alpha, afterSeq: all[3].seq), limit: 100)
            #expect(tail.map(\.seq) == all.dropFirst(4).map(\.seq))
        }
    }

    @Test func backupIdsByPrefixAreARangeOfOneTenant() throws {
        try withStore { store, _ in
            let sandbox = try #require(try store.tenant(beta))
            _ = try SandboxSeeder(store: store) { 1_780_000_000 }.run(
                tenant: sandbox, backups: 200, orphans: 0, seed: 11, operatorName: "tester")
            var ids: [String] = []
            try store.forEachBackup(tenant: beta, batchSize: 500) { ids += $0.map(\.backupId) }
            for prefix in ["backup_account_02", "backup_account_03a", String(ids[17].prefix(19)), ids[42]] {
                let expected = ids.filter { $0.hasPrefix(prefix) }.sorted()
                #expect(try store.backupIds(tenant: beta, prefix: prefix, limit: 1000) == expected)
                #expect(try store.backupIds(tenant: beta, prefix: prefix, limit: 2) == Array(expected.prefix(2)))
            }
            #expect(try store.backupIds(tenant: alpha, prefix: "backup_account_", limit: 10).isEmpty)
            #expect(try store.backupIds(tenant: beta, prefix: "backup_account_04", limit: 10).isEmpty)
        }
    }
}
