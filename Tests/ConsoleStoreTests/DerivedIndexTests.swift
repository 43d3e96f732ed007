import BackupCrypto
import BackupModel
import BackupctlTestSupport
import Foundation
import GRDB
import Testing

@testable import ConsoleStore
@testable import SQLiteStore

/// The derived index (`backup_factors`, `backup_summary`) must always equal what the stored
/// metadata implies, whichever path wrote the backup.
@Suite("Derived factors and summaries")
struct DerivedIndexTests {
    /// Every backup's derived rows recomputed from its metadata, and no derived row without a backup.
    func expectConsistent(_ store: SQLiteConsoleStore, _ tenant: TenantName) async throws {
        var backups = 0
        try await store.forEachBackup(tenant: tenant, batchSize: 50) { page throws(ConsoleError) in
            for record in page {
                backups += 1
                let stored = try? store.pool.read { db in
                    try Row.fetchAll(
                        db,
                        sql: """
                            SELECT pk, position, copies, factor_id FROM backup_factors
                            WHERE tenant = ? AND backup_id = ? ORDER BY position
                            """, arguments: [tenant.rawValue, record.backupId]
                    ).map { ImpliedKey(pk: $0[0], position: $0[1], copies: $0[2], factorId: $0[3]) }
                }
                #expect(stored == ImpliedKey.of(record.metadata), "\(record.backupId)")
            }
        }
        var summaries: [BackupSummary] = []
        try await store.forEachBackupSummary(tenant: tenant, batchSize: 7) { summaries += $0 }
        #expect(summaries.count == backups)
        for summary in summaries {
            let record = try #require(try await store.backup(tenant: tenant, id: summary.backupId))
            #expect(summary == BackupSummary(metadata: record.metadata, blobSize: record.blobSize))
        }
        let strays = try await store.pool.read { db in
            try Int.fetchOne(
                db,
                sql: """
                    SELECT (SELECT count(*) FROM backup_factors bf WHERE NOT EXISTS (SELECT 1 FROM backups b
                        WHERE b.tenant = bf.tenant AND b.backup_id = bf.backup_id))
                    + (SELECT count(*) FROM backup_summary s WHERE NOT EXISTS (SELECT 1 FROM backups b
                        WHERE b.tenant = s.tenant AND b.backup_id = s.backup_id))
                    """)
        }
        #expect(strays == 0)
    }

    @Test func writeRewriteAndResetKeepItConsistent() async throws {
        try await withStore { store, _ in
            let f = Fixtures()
            let id = f.backupId()
            let (a, b, c) = (f.credential(), f.credential(), f.credential())
            try await store.writeBackup(
                tenant: alpha, f.write(f.metadata(id: id, passkeys: [a, b], googleSubs: ["9"], subOrgs: [f.uuid()])),
                audit: draft("w"))
            try await expectConsistent(store, alpha)
            // Re-write: a factor removed, one added, a blob now stored.
            var updated = f.metadata(id: id, passkeys: [b, c], sync: ["BAAA"])
            // The same passkey twice (a damaged backup): one derived row, two copies.
            updated.factors.append(updated.factors[0])
            try await store.writeBackup(tenant: alpha, f.write(updated, blob: Data([1, 2, 3])), audit: draft("w"))
            try await expectConsistent(store, alpha)
            let summary = try await #require(try firstSummary(store, alpha))
            #expect(summary.blobSize == 3 && summary.passkeys == 3 && summary.badSyncFactors == 1)
            #expect(summary.firstBadSyncFactor?.problem == .wrongLength(3))
            // A batch (what import and seed use).
            let more = (0..<5).map { _ in
                f.metadata(id: f.backupId(), passkeys: [f.credential()], googleSubs: ["x\(f.uuid())"])
            }
            try await store.writeBackups(tenant: alpha, more.map { f.write($0) }, audit: draft("w"))
            try await expectConsistent(store, alpha)
            // A reset wipes the derived rows with the backup.
            try await store.insertResetChallenge(
                ResetChallengeRecord(
                    tokenHash: "t", tenant: alpha, backupId: id, context: "reset", challenge: [1], createdAt: 1,
                    expiresAt: 10),
                audit: draft("r"))
            _ = try await store.recordServiceReset(
                tenant: alpha, tokenHash: "t", backupId: id, subOrgIds: [], now: 5,
                audit: ResetAuditDraft(draft("r"), lookupRowsAtLeast: 0))
            try await expectConsistent(store, alpha)
            #expect(try await store.resolveLookup(tenant: alpha, pk: passkeyPK(b)) == nil)
        }
    }

    func firstSummary(_ store: SQLiteConsoleStore, _ tenant: TenantName) async throws -> BackupSummary? {
        var first: BackupSummary?
        try await store.forEachBackupSummary(tenant: tenant, batchSize: 1) { if first == nil { first = $0.first } }
        return first
    }

    @Test func importAndSeedKeepItConsistent() async throws {
        try await withStore { store, dir in
            let f = Fixtures()
            let export = try ExportBuilder(in: dir)
            try export.add(
                f.metadata(id: f.backupId(), passkeys: [f.credential()], googleSubs: ["104"]), blob: Data([9]))
            try export.add(f.metadata(id: f.backupId(), googleSubs: ["105"]), form: .exported)
            _ = try await BackupImporter(store: store) { 1 }.run(
                directory: export.root, tenant: alpha, dryRun: false, operatorName: "tester")
            try await expectConsistent(store, alpha)
            let sandbox = try #require(try await store.tenant(beta))
            var seeder = SandboxSeeder(store: store) { 1_780_000_000 }
            seeder.batchSize = 64
            _ = try await seeder.run(tenant: sandbox, backups: 150, orphans: 0, seed: 3, operatorName: "tester")
            try await expectConsistent(store, beta)
        }
    }

    @Test func resolveLookupTellsHitUnauthorizedDanglingAndMiss() async throws {
        try await withStore { store, _ in
            let f = Fixtures()
            let (kept, stale) = (f.credential(), f.credential())
            let metadata = f.metadata(id: f.backupId(), passkeys: [kept])
            try await store.writeBackup(tenant: alpha, f.write(metadata), audit: draft("w"))
            let ghost = f.backupId()
            try await store.writeLookupRows(
                tenant: alpha,
                [
                    LookupRow(pk: passkeyPK(stale), backupId: metadata.id),
                    LookupRow(pk: "MAIN#PK|Z2hvc3Q", backupId: ghost),
                ],
                audit: draft("rows"))
            #expect(
                try await store.resolveLookup(tenant: alpha, pk: passkeyPK(kept))
                    == LookupResolution(backupId: metadata.id, backupExists: true, factorId: metadata.factors[0].id))
            #expect(
                try await store.resolveLookup(tenant: alpha, pk: passkeyPK(stale))
                    == LookupResolution(backupId: metadata.id, backupExists: true, factorId: nil))
            #expect(
                try await store.resolveLookup(tenant: alpha, pk: "MAIN#PK|Z2hvc3Q")
                    == LookupResolution(backupId: ghost, backupExists: false, factorId: nil))
            #expect(try await store.resolveLookup(tenant: alpha, pk: passkeyPK(f.credential())) == nil)
            #expect(try await store.resolveLookup(tenant: beta, pk: passkeyPK(kept)) == nil)

            // Many keys in one read: what each key alone answers, a miss left out, a key asked
            // twice answered once, another tenant's rows not seen.
            let keys = [
                passkeyPK(kept), passkeyPK(stale), "MAIN#PK|Z2hvc3Q", passkeyPK(f.credential()), passkeyPK(kept),
            ]
            var expected: [String: LookupResolution] = [:]
            for key in keys { expected[key] = try await store.resolveLookup(tenant: alpha, pk: key) }
            #expect(expected.count == 3)
            #expect(try await store.resolveLookups(tenant: alpha, pks: keys) == expected)
            // The same on a reader of the pool, which a read takes while the writer is busy.
            #expect(store.driver.gate.tryAcquire())
            let onReader = try await store.resolveLookups(tenant: alpha, pks: keys)
            store.driver.gate.release()
            #expect(onReader == expected)
            #expect(try await store.resolveLookups(tenant: beta, pks: keys).isEmpty)
            #expect(try await store.resolveLookups(tenant: alpha, pks: []).isEmpty)
        }
    }

    /// A store made before v4 gets its derived rows when it is opened.
    @Test func migrationBackfillsExistingBackups() async throws {
        try await withStorePath("derived") { path in
            let f = Fixtures()
            let metadata = f.metadata(id: f.backupId(), passkeys: [f.credential()], googleSubs: ["7"], sync: ["bad"])
            do {
                let queue = try olderStore(at: path, upTo: "v3-cleanup-stamped")
                try await queue.write { db in
                    try db.execute(
                        sql: """
                            INSERT INTO backups (tenant, backup_id, metadata, manifest_hash, blob_size, imported_at, updated_at)
                            VALUES ('alpha', ?, ?, ?, 12, 1, 1)
                            """,
                        arguments: [
                            metadata.id, String(decoding: metadata.encoded(.stored), as: UTF8.self),
                            metadata.manifestHash,
                        ])
                    try db.execute(
                        sql: "INSERT INTO factor_lookup (tenant, pk, backup_id) VALUES ('alpha', ?, ?)",
                        arguments: ["MAIN#OIDC|https://accounts.google.com|7", metadata.id])
                }
            }
            let store = try SQLiteConsoleStore(path: path)
            try await expectConsistent(store, alpha)
            let summary = try await #require(try firstSummary(store, alpha))
            #expect(
                summary.blobSize == 12 && summary.badSyncFactors == 1
                    && summary.firstBadSyncFactor?.problem == .notBase64)
            #expect(
                try await store.resolveLookup(tenant: alpha, pk: "MAIN#OIDC|https://accounts.google.com|7")?.factorId
                    != nil
            )
        }
    }

    @Test func syncProblemCodesRoundTrip() {
        let problems: [SyncFactorProblem] = [
            .notKeypair("PASSKEY"), .notBase64, .wrongLength(33), .notStoredForm, .notOnCurve,
        ]
        for problem in problems { #expect(SyncFactorProblem(code: problem.code) == problem) }
        #expect(SyncFactorProblem(code: "nonsense") == nil)
    }
}
