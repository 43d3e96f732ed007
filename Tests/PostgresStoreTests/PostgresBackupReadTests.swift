import BackupModel
import BackupctlTestSupport
import ConsoleStore
import Foundation
import SQLiteStore
import Testing

@testable import PostgresStore

/// The PostgreSQL store answers every backup, index and sub-org read exactly as the SQLite
/// store does, given the same writes: synthetic backups plus drift a real index has (a row of a
/// missing backup, a key the metadata no longer implies, an implied key another backup holds).
@Suite(.enabled(if: PostgresTestDatabase.enabled, Comment(rawValue: PostgresTestDatabase.skipped)))
struct PostgresBackupReadTests {
    static func tenant() throws -> TenantName { try TenantName("sandbox") }
    static let audit = AuditDraft(operatorName: "test", tenant: "sandbox", action: "test.write")

    /// Both stores with the same tenant, the same 60 synthetic backups (written in two batches,
    /// the second rewriting ten of the first) and the same drift.
    func withBothStores(_ body: (SQLiteConsoleStore, PostgresConsoleStore, [BackupWrite]) async throws -> Void)
        async throws
    {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("pgread-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let sqlite = try SQLiteConsoleStore(
            path: directory.appendingPathComponent("console.db").path, clock: { 1_780_000_000_000 })
        let first = try SyntheticBackups.writes(seed: 21, indices: 0..<50, now: 1_750_000_000)
        let second = try SyntheticBackups.writes(seed: 21, indices: 40..<60, now: 1_760_000_000)
        let stolen = try #require(first[3].lookupRows.first)
        let drift = [
            LookupRow(pk: "MAIN#dangling|nobody", backupId: "backup_account_missing"),
            LookupRow(pk: "MAIN#stale|key", backupId: first[5].record.backupId),
            // An implied key of backup 3, now pointed at backup 7: unindexed for 3, unauthorized for 7.
            LookupRow(pk: stolen.pk, backupId: first[7].record.backupId),
        ]
        try await PostgresTestDatabase.make { testDatabase in
            try await withDatabase(testDatabase) { database in
                let postgres = try await PostgresConsoleStore.open(database, clock: { 1_780_000_000_000 })
                for store in [sqlite as any AnyBackupWriter, postgres as any AnyBackupWriter] {
                    try await store.setUp(tenant: try Self.tenant(), [first, second], drift: drift, audit: Self.audit)
                }
                try await body(sqlite, postgres, first + second)
            }
        }
    }

    @Test func backupsIdsPagesAndBlobsMatch() async throws {
        try await withBothStores { sqlite, postgres, writes in
            let t = try Self.tenant()
            #expect(try await postgres.backupCount(tenant: t) == sqlite.backupCount(tenant: t))
            #expect(try await postgres.backupCount(tenant: t) == 60)
            for id in [writes[0].record.backupId, writes[45].record.backupId, "backup_account_missing"] {
                #expect(try await postgres.backup(tenant: t, id: id) == sqlite.backup(tenant: t, id: id))
                #expect(try await postgres.backupExists(tenant: t, id: id) == sqlite.backupExists(tenant: t, id: id))
                #expect(
                    try await postgres.sealedBlob(tenant: t, backupId: id) == sqlite.sealedBlob(tenant: t, backupId: id)
                )
                #expect(
                    try await postgres.lookupRows(tenant: t, backupId: id)
                        == sqlite.lookupRows(tenant: t, backupId: id))
                #expect(
                    try await postgres.subOrgReference(tenant: t, subOrgId: id)
                        == sqlite.subOrgReference(tenant: t, subOrgId: id))
            }
            for prefix in ["", "backup_account_0", "backup_account_03", "zzz"] {
                #expect(
                    try await postgres.backupIds(tenant: t, prefix: prefix, limit: 7)
                        == sqlite.backupIds(tenant: t, prefix: prefix, limit: 7))
            }
            #expect(try await postgres.backupIds(tenant: t) == sqlite.backupIds(tenant: t))
            // Pages across the limit boundary, to the end.
            let backups = try await pages(7) { try await postgres.backups(tenant: t, after: $0?.backupId, limit: $1) }
            #expect(backups.count == 60)
            #expect(
                backups == (try await pages(7) { try await sqlite.backups(tenant: t, after: $0?.backupId, limit: $1) }))
            let index = try await pages(11) { try await postgres.lookupRows(tenant: t, after: $0?.pk, limit: $1) }
            #expect(index == (try await pages(11) { try await sqlite.lookupRows(tenant: t, after: $0?.pk, limit: $1) }))
            let referenced = try await pages(9) {
                try await postgres.referencedSubOrgs(tenant: t, after: $0, limit: $1)
            }
            #expect(!referenced.isEmpty)
            #expect(
                referenced
                    == (try await pages(9) { try await sqlite.referencedSubOrgs(tenant: t, after: $0, limit: $1) }))
            let subOrgs = try await sqlite.referencedSubOrgs(tenant: t, after: nil, limit: 1000)
            let probe = Array(subOrgs.prefix(5)) + ["not-a-sub-org"]
            #expect(
                try await postgres.referencedSubOrgs(tenant: t, among: probe)
                    == sqlite.referencedSubOrgs(tenant: t, among: probe))
            for id in subOrgs.prefix(3) {
                #expect(
                    try await postgres.subOrgReference(tenant: t, subOrgId: id)
                        == sqlite.subOrgReference(tenant: t, subOrgId: id))
            }
        }
    }

    @Test func lookupsAndTheirResolutionMatchDriftIncluded() async throws {
        try await withBothStores { sqlite, postgres, _ in
            let t = try Self.tenant()
            let index = try await sqlite.lookupRows(tenant: t, after: nil, limit: 100_000)
            #expect(index.count > 100)
            var kinds = Set<String>()
            for row in index + [LookupRow(pk: "MAIN#absent|key", backupId: "")] {
                let expected = try await sqlite.resolveLookup(tenant: t, pk: row.pk)
                #expect(try await postgres.resolveLookup(tenant: t, pk: row.pk) == expected)
                #expect(try await postgres.lookup(tenant: t, pk: row.pk) == sqlite.lookup(tenant: t, pk: row.pk))
                switch expected {
                case nil: kinds.insert("miss")
                case let resolution? where !resolution.backupExists: kinds.insert("dangling")
                case let resolution? where resolution.factorId == nil: kinds.insert("unauthorized")
                default: kinds.insert("hit")
                }
            }
            #expect(kinds == ["miss", "dangling", "unauthorized", "hit"])
            // Every key at once (a script's run of lookups), a miss and a repeat among them.
            let keys = index.map(\.pk) + ["MAIN#absent|key", index[0].pk]
            let all = try await postgres.resolveLookups(tenant: t, pks: keys)
            #expect(all == (try await sqlite.resolveLookups(tenant: t, pks: keys)))
            #expect(all.count == index.count && all["MAIN#absent|key"] == nil)
        }
    }

    @Test func summariesAndHealthPagesMatch() async throws {
        try await withBothStores { sqlite, postgres, _ in
            let t = try Self.tenant()
            for size in [1, 8, 100] {
                let summaries = try await pages(size) {
                    try await postgres.backupSummaries(tenant: t, after: $0?.backupId, limit: $1)
                }
                let expectedSummaries = try await pages(size) {
                    try await sqlite.backupSummaries(tenant: t, after: $0?.backupId, limit: $1)
                }
                #expect(summaries == expectedSummaries && summaries.count == 60)
                let health = try await pages(size) {
                    try await postgres.backupHealth(tenant: t, after: $0?.summary.backupId, limit: $1)
                }
                let expectedHealth = try await pages(size) {
                    try await sqlite.backupHealth(tenant: t, after: $0?.summary.backupId, limit: $1)
                }
                #expect(health == expectedHealth)
                #expect(
                    health.contains { !$0.unauthorizedKeys.isEmpty } && health.contains { !$0.unindexedKeys.isEmpty })
            }
        }
    }

    @Test func conflictsUnknownTenantsAndBadKeysFailAsOnSQLite() async throws {
        try await withBothStores { sqlite, postgres, writes in
            let t = try Self.tenant()
            var thief = try SyntheticBackups.writes(seed: 22, indices: 0..<1, now: 1_750_000_000)[0]
            let taken = try #require(writes[10].lookupRows.first)
            thief.lookupRows.append(LookupRow(pk: taken.pk, backupId: thief.record.backupId))
            let audits = try await postgres.auditEntries(tenant: nil, afterSeq: 0, limit: 1000).count
            let expected = try await #require(throws: ConsoleError.self) {
                try await sqlite.writeBackup(tenant: t, thief, audit: Self.audit)
            }
            let actual = try await #require(throws: ConsoleError.self) {
                try await postgres.writeBackup(tenant: t, thief, audit: Self.audit)
            }
            #expect(actual.code == "factor_conflict" && actual.code == expected.code)
            #expect(actual.message == expected.message)
            let nowhere = try TenantName("nowhere")
            let clean = try SyntheticBackups.writes(seed: 23, indices: 0..<1, now: 1_750_000_000)
            let sqliteMissing = try await #require(throws: ConsoleError.self) {
                try await sqlite.writeBackups(tenant: nowhere, clean, audit: Self.audit)
            }
            let missing = try await #require(throws: ConsoleError.self) {
                try await postgres.writeBackups(tenant: nowhere, clean, audit: Self.audit)
            }
            #expect(missing.kind == sqliteMissing.kind && missing.code == sqliteMissing.code)
            #expect(missing.message == sqliteMissing.message)
            let badKey = [LookupRow(pk: "OTHER#x", backupId: "b")]
            let sqliteBad = try await #require(throws: ConsoleError.self) {
                try await sqlite.writeLookupRows(tenant: t, badKey, audit: Self.audit)
            }
            let bad = try await #require(throws: ConsoleError.self) {
                try await postgres.writeLookupRows(tenant: t, badKey, audit: Self.audit)
            }
            #expect(bad.code == "invalid_lookup_key" && bad.message == sqliteBad.message)
            // Nothing was written, not even an audit entry.
            #expect(try await postgres.auditEntries(tenant: nil, afterSeq: 0, limit: 1000).count == audits)
            #expect(try await postgres.backupExists(tenant: t, id: thief.record.backupId) == false)
            // Re-writing index rows that did not change changes none.
            let existing = Array(try await sqlite.lookupRows(tenant: t, after: nil, limit: 5))
            #expect(try await postgres.writeLookupRows(tenant: t, existing, audit: Self.audit) == 0)
        }
    }

    /// Every item of a keyset-paged read, page by page until a short page.
    func pages<T>(_ size: Int, _ page: (T?, Int) async throws -> [T]) async throws -> [T] {
        var all: [T] = []
        for _ in 0..<10_000 {
            let next = try await page(all.last, size)
            all += next
            if next.count < size { return all }
        }
        Issue.record("paging did not end")
        return all
    }
}

/// The writes both stores take, so a test sets them up with one loop.
protocol AnyBackupWriter: Sendable {
    func createTenant(_ tenant: TenantRecord, audit: AuditDraft) async throws(ConsoleError)
    func writeBackups(tenant: TenantName, _ writes: [BackupWrite], audit: AuditDraft) async throws(ConsoleError)
    @discardableResult
    func writeLookupRows(tenant: TenantName, _ rows: [LookupRow], audit: AuditDraft) async throws(ConsoleError) -> Int
}

extension AnyBackupWriter {
    func setUp(tenant: TenantName, _ batches: [[BackupWrite]], drift: [LookupRow], audit: AuditDraft) async throws {
        try await createTenant(TenantRecord(name: tenant, isSandbox: true, createdAt: 1), audit: audit)
        for batch in batches { try await writeBackups(tenant: tenant, batch, audit: audit) }
        try await writeLookupRows(tenant: tenant, drift, audit: audit)
    }
}

extension SQLiteConsoleStore: AnyBackupWriter {}
extension PostgresConsoleStore: AnyBackupWriter {}
