import Access
import BackupCrypto
import BackupModel
import BackupctlTestSupport
import ConsoleStore
import Foundation
import GRDB
import Testing

@Suite struct AuditLogTests {
    /// A store with `n` audit entries beyond the bootstrap ones.
    func populated(_ n: Int, _ backend: TestBackend) async throws -> (TempStore, Session) {
        let fixture = try await TempStore(backend)
        let (_, session) = try await fixture.bootstrap()
        for i in 0..<n {
            fixture.time.advance(byMillis: 1000)
            try await fixture.store.appendAudit(
                session.audit("backup.show", target: "backup_\(i)", details: ["i": "\(i)"]))
        }
        return (fixture, session)
    }

    /// Runs `sql` (statements separated by `;`) straight on the store's tables, as a tamperer would.
    func raw(_ fixture: TempStore, _ sql: String) async throws {
        for statement in sql.split(separator: ";") where !statement.allSatisfy(\.isWhitespace) {
            _ = try await storeSQL(fixture.store, SQLStatement(stringLiteral: String(statement)))
        }
    }

    @Test(arguments: TestBackend.available) func intactChainVerifies(backend: TestBackend) async throws {
        let (fixture, session) = try await populated(20, backend)
        let result = try await AuditLog(store: fixture.store).verify(session: session)
        #expect(result.ok && result.firstBadSeq == nil)
        #expect(result.entries == (try await fixture.store.auditEntries(tenant: nil, afterSeq: 0, limit: 10_000).count))
        #expect(result.entries >= 21)
        let last = try await fixture.store.latestAuditEntries(tenant: nil, limit: 1)
        #expect(result.headHash == last.first?.hash)
    }

    @Test(arguments: TestBackend.available) func alteredEntryIsFound(backend: TestBackend) async throws {
        let (fixture, session) = try await populated(10, backend)
        try await raw(fixture, "UPDATE audit SET target = 'someone_else' WHERE seq = 5")
        let result = try await AuditLog(store: fixture.store).verify(session: session)
        #expect(!result.ok && result.firstBadSeq == 5)
    }

    @Test(arguments: TestBackend.available) func removedEntryIsFound(backend: TestBackend) async throws {
        let (fixture, session) = try await populated(10, backend)
        try await raw(fixture, "DELETE FROM audit WHERE seq = 4")
        let result = try await AuditLog(store: fixture.store).verify(session: session)
        #expect(!result.ok && result.firstBadSeq == 5)
    }

    @Test(arguments: TestBackend.available) func reorderedEntriesAreFound(backend: TestBackend) async throws {
        let (fixture, session) = try await populated(10, backend)
        // Swap the content of 6 and 7 but keep each row's own hashes: the chain no longer links.
        try await raw(
            fixture,
            """
            UPDATE audit SET seq = 100006 WHERE seq = 6;
            UPDATE audit SET seq = 6 WHERE seq = 7;
            UPDATE audit SET seq = 7 WHERE seq = 100006;
            """)
        let result = try await AuditLog(store: fixture.store).verify(session: session)
        #expect(!result.ok && result.firstBadSeq == 6)
    }

    @Test(arguments: TestBackend.available) func rehashedForgeryStillBreaksTheNextLink(backend: TestBackend)
        async throws
    {
        let (fixture, session) = try await populated(10, backend)
        let entries = try await fixture.store.auditEntries(tenant: nil, afterSeq: 0, limit: 100)
        var forged = try #require(entries.first { $0.seq == 3 })
        forged.target = "forged"
        let hash = SHA256.hex(Array(forged.prevHash.utf8) + Array(forged.canonicalBytes))
        try await raw(fixture, "UPDATE audit SET target = 'forged', hash = '\(hash)' WHERE seq = 3")
        let result = try await AuditLog(store: fixture.store).verify(session: session)
        #expect(!result.ok && result.firstBadSeq == 4)
    }

    @Test(arguments: TestBackend.available) func listIsAdminOnlyAndTenantScoped(backend: TestBackend) async throws {
        let (fixture, admin) = try await populated(3, backend)
        let access = fixture.access(seed: 12)
        let token = try await access.addOperator(try OperatorName("viewer1"), role: .viewer, session: admin)
        let viewer = try await access.session(
            operator: try await access.authenticate(token: token), tenant: try TenantName("sandbox"))
        await #expect(throws: ConsoleError.self) {
            try await AuditLog(store: fixture.store).list(session: viewer, limit: 5)
        }
        await #expect(throws: ConsoleError.self) { try await AuditLog(store: fixture.store).verify(session: viewer) }
        let listed = try await AuditLog(store: fixture.store).list(session: admin, limit: 2)
        #expect(listed.count == 2 && listed[0].seq < listed[1].seq)
        #expect(listed.allSatisfy { $0.tenant == "sandbox" })
        await #expect(throws: ConsoleError.self) {
            try await AuditLog(store: fixture.store).list(session: admin, limit: 0)
        }
    }

    /// A follower that fell behind pages forward: with `afterSeq` the first entries after it,
    /// not the latest (which skipped everything between), and a page of the most a list answers.
    @Test(arguments: TestBackend.available) func afterSeqPagesForwardWithoutAGap(backend: TestBackend) async throws {
        let (fixture, admin) = try await populated(30, backend)
        let log = AuditLog(store: fixture.store)
        let all = try await log.list(
            session: admin, operatorName: nil, action: "backup.show", sinceMillis: nil, limit: 100)
        #expect(all.count == 30)
        var seen: [Int64] = []
        var after = all[4].seq
        for _ in 0..<10 {  // bounded: 25 entries in pages of 7
            let page = try await log.list(
                session: admin, operatorName: nil, action: "backup.show", sinceMillis: nil, afterSeq: after, limit: 7)
            seen += page.map(\.seq)
            guard let last = page.last else { break }
            after = last.seq
        }
        #expect(seen == all.dropFirst(5).map(\.seq))
        // Without `afterSeq`, the latest ones.
        let latest = try await log.list(
            session: admin, operatorName: nil, action: "backup.show", sinceMillis: nil, limit: 3)
        #expect(latest.map(\.seq) == all.suffix(3).map(\.seq))
        let tooMany = await #expect(throws: ConsoleError.self) {
            try await log.list(
                session: admin, operatorName: nil, action: nil, sinceMillis: nil, limit: AuditLog.maxListLimit + 1)
        }
        #expect(tooMany?.code == "invalid_limit")
    }
}
