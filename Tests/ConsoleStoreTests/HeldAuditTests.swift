import BackupModel
import Foundation
import GRDB
import Testing

@testable import ConsoleStore

/// Read audits held for one shared transaction: nothing lost, nothing reordered.
@Suite("Held read audits")
struct HeldAuditTests {
    /// The audit as another connection sees it (what is committed, nothing held).
    func committed(_ store: SQLiteConsoleStore) throws -> [(action: String, target: String?)] {
        let queue = try DatabaseQueue(path: store.path)
        return try queue.read { db in
            try Row.fetchAll(db, sql: "SELECT action, target FROM audit ORDER BY seq").map { ($0[0], $0[1]) }
        }
    }

    @Test("held entries wait, then land in order in one flush and verify")
    func flushWritesInOrder() throws {
        try withStore { store, _ in
            let before = try committed(store).count
            store.holdReadAudits(true)
            for i in 0..<3 { try store.appendReadAudit(draft("backup.lookup", tenant: alpha, target: "b\(i)")) }
            #expect(store.heldAuditCount == 3)
            #expect(try committed(store).count == before)
            try store.flushAudit()
            #expect(store.heldAuditCount == 0)
            #expect(try committed(store).suffix(3).map(\.target) == ["b0", "b1", "b2"])
            let entries = try store.auditEntries(tenant: nil, afterSeq: 0, limit: 100)
            for (index, entry) in entries.enumerated().dropFirst() {
                #expect(entry.prevHash == entries[index - 1].hash)
            }
        }
    }

    @Test("a mutation writes the held entries first; reading the audit flushes them")
    func mutationsAndReadsFlushFirst() throws {
        try withStore { store, _ in
            store.holdReadAudits(true)
            try store.appendReadAudit(draft("backup.show", tenant: alpha, target: "held"))
            try store.appendAudit(draft("operator.add", target: "after"))
            #expect(try committed(store).suffix(2).map(\.target) == ["held", "after"])
            try store.appendReadAudit(draft("backup.show", tenant: alpha, target: "read"))
            #expect(try store.latestAuditEntries(tenant: nil, limit: 1).map(\.target) == ["read"])
            #expect(store.heldAuditCount == 0)
        }
    }

    @Test("not holding: a read audit is written at once")
    func notHoldingWritesAtOnce() throws {
        try withStore { store, _ in
            try store.appendReadAudit(draft("backup.lookup", tenant: alpha, target: "now"))
            #expect(store.heldAuditCount == 0)
            #expect(try committed(store).last?.target == "now")
        }
    }

    @Test("a transaction that rolls back keeps the held entries for the next one")
    func rollbackKeepsThemHeld() throws {
        try withStore { store, _ in
            store.holdReadAudits(true)
            try store.appendReadAudit(draft("backup.lookup", tenant: alpha, target: "kept"))
            // The tenant exists already: the write fails and rolls back.
            #expect(throws: ConsoleError.self) {
                try store.createTenant(
                    TenantRecord(name: alpha, isSandbox: false, createdAt: 1), audit: draft("tenant.create"))
            }
            #expect(store.heldAuditCount == 1)
            #expect(try committed(store).last?.target != "kept")
            try store.flushAudit()
            #expect(try committed(store).last?.target == "kept")
        }
    }
}
