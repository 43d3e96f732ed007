import BackupModel
import Foundation
import Testing

@testable import ConsoleStore
@testable import SQLiteStore

/// SQLite commits an audit group with statements of its own (``SQLiteConsoleStore/commitAuditGroup(_:)``):
/// held here to the shared rule (``SQLRuleStore/appendChained(_:_:)``), row for row and byte for byte.
@Suite struct SQLiteAuditGroupTests {
    /// Drafts with every column's edge: no tenant or target, empty texts, quotes, non-ASCII
    /// text and detail keys (which take JSONEncoder's canonical form), and a served request's id.
    static let drafts: [AuditDraft] = [
        AuditDraft(
            operatorName: "ann", tenant: "alpha", action: "backup.lookup", target: "b1",
            details: ["kind": "passkey", "scope": "MAIN"]),
        AuditDraft(operatorName: "ann", tenant: nil, action: "operator.add", target: nil),
        AuditDraft(
            operatorName: "", tenant: "alpha", action: "backup.show", target: "",
            details: ["": "", "quote": "\"'\\\n\t", "é": "ünïcödé 🔑"]),
        AuditDraft(
            operatorName: "bob ✓", tenant: "beta", action: "access.denied", target: "x'; DROP TABLE audit; --",
            details: ["command": "reset", "outcome": "permission_denied"]),
    ]

    /// Every column of every row, with its SQLite type, in `seq` order.
    static func rows(_ store: SQLiteConsoleStore) async throws -> [[SQLValue]] {
        try await store.driver.read("reading the test's rows") { session in
            try await session.query("SELECT \(raw: RowMapping.auditColumns) FROM audit ORDER BY seq").map(\.values)
        }
    }

    @Test func theStoresOwnGroupCommitWritesWhatTheSharedRuleWrites() async throws {
        try await withStore { own, _ in
            try await withStore { shared, _ in
                // Twice each, the second group chained after the first; one group inside a request.
                for round in 0..<2 {
                    let ownEntries = try await ServedRequest.$id.withValue(round == 1 ? "req-1" : nil) {
                        try await own.commitAuditGroup(Self.drafts)
                    }
                    let sharedEntries = try await ServedRequest.$id.withValue(round == 1 ? "req-1" : nil) {
                        try await shared.driver.transaction("appending by the shared rule") { session in
                            try await shared.appendChained(Self.drafts, session)
                        }
                    }
                    #expect(ownEntries == sharedEntries)
                    #expect(ownEntries.allSatisfy { ($0.details["requestId"] == "req-1") == (round == 1) })
                }
                let ownRows = try await Self.rows(own)
                #expect(ownRows.count == 2 + 2 * Self.drafts.count)
                #expect(ownRows == (try await Self.rows(shared)))
                #expect(chainIsValid(try await own.auditEntries(tenant: nil, afterSeq: 0, limit: 100)))
            }
        }
    }

    /// A refused row rolls the whole group back: none of its entries is in the log, and the
    /// next group chains after the last committed entry.
    @Test func aRefusedRowLeavesNoneOfItsGroup() async throws {
        try await withStore { store, _ in
            try await Self.storeSQLite(
                store,
                """
                CREATE TRIGGER refuse_one BEFORE INSERT ON audit WHEN NEW.action = 'refused.here'
                BEGIN SELECT RAISE(ABORT, 'refused by the test'); END
                """)
            let refused = AuditDraft(operatorName: "ann", tenant: "alpha", action: "refused.here")
            await #expect(throws: ConsoleError.self) {
                try await store.commitAuditGroup([Self.drafts[0], refused, Self.drafts[1]])
            }
            #expect(try await Self.rows(store).count == 2)
            let entries = try await store.commitAuditGroup([Self.drafts[0]])
            #expect(entries.map(\.seq) == [3])
            #expect(chainIsValid(try await store.auditEntries(tenant: nil, afterSeq: 0, limit: 100)))
        }
    }

    static func storeSQLite(_ store: SQLiteConsoleStore, _ sql: String) async throws {
        try await store.driver.transaction("running a test's statement") { session in
            try await session.execute(SQLStatement(stringLiteral: sql))
        }
    }
}
