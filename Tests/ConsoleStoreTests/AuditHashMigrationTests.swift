import BackupModel
import ConsoleStore
import Foundation
import GRDB
import Testing

@testable import SQLiteStore

/// Migration `v12-audit-hash-unindexed` on a store whose audit still has the unique index on
/// its hash: the entries stay as they were (the chain unchanged, still linked), the index is
/// gone, and appends go on extending the same chain.
@Suite struct AuditHashMigrationTests {
    @Test func theAuditKeepsItsChainAndLosesTheHashIndex() async throws {
        try await withStorePath("audit-hash") { path in
            let draft = { (n: Int) in
                AuditDraft(operatorName: "ann", tenant: "alpha", action: "backup.show", target: "t\(n)")
            }
            do {
                let store = try SQLiteConsoleStore(path: path)
                for n in 0..<20 { _ = try await store.appendAudit(draft(n)) }
            }
            // The audit as it was before v12: the same table with `hash … UNIQUE`, v12 not recorded.
            let queue = try DatabaseQueue(path: path)
            let before = try await queue.write { db in
                try CatalogParity.rebuild("audit", db) { definition in
                    guard let plain = definition.range(of: "hash TEXT NOT NULL CHECK") else { return false }
                    definition.replaceSubrange(plain, with: "hash TEXT NOT NULL UNIQUE CHECK")
                    return true
                }
                try db.execute(sql: "DELETE FROM grdb_migrations WHERE identifier = 'v12-audit-hash-unindexed'")
                #expect(try Self.uniqueIndexes(db) == 1)
                return try Self.chain(db)
            }
            try queue.close()

            let store = try SQLiteConsoleStore(path: path)
            let after = try await store.pool.read { db in (try Self.chain(db), try Self.uniqueIndexes(db)) }
            #expect(after.0 == before)
            #expect(after.1 == 0)
            let next = try await store.appendAudit(draft(20))
            #expect(next.seq == 21 && next.prevHash == before.last?.hash)
            let chain = try await store.pool.read { db in try Self.chain(db) }
            #expect(chain.count == 21)
            for (earlier, later) in zip(chain, chain.dropFirst()) { #expect(later.prevHash == earlier.hash) }
            let indexes = try await store.pool.read { db in
                try String.fetchAll(
                    db, sql: "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'audit' ORDER BY name")
            }
            #expect(indexes == ["audit_by_tenant"])
        }
    }

    struct Link: Equatable {
        var seq: Int64
        var prevHash: String
        var hash: String
        var target: String?
    }

    static func chain(_ db: Database) throws -> [Link] {
        try Row.fetchAll(db, sql: "SELECT seq, prev_hash, hash, target FROM audit ORDER BY seq").map {
            Link(seq: $0["seq"], prevHash: $0["prev_hash"], hash: $0["hash"], target: $0["target"])
        }
    }

    /// The unique indexes of the audit besides its primary key.
    static func uniqueIndexes(_ db: Database) throws -> Int {
        try Row.fetchAll(db, sql: "PRAGMA index_list(audit)").filter { ($0["unique"] as Int?) == 1 }.count
    }
}
