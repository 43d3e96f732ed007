import BackupModel
import Foundation
import SQLiteStore
import Testing

@testable import ConsoleStore

/// Builds a backup-service export in a temporary directory.
struct ExportBuilder {
    let root: URL

    init(in dir: URL) throws {
        root = dir.appendingPathComponent("export-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
    }

    func add(_ metadata: BackupMetadata, form: MetadataForm = .stored, blob: Data? = nil) throws {
        try addRaw(metadata.id, metadata: metadata.encoded(form), blob: blob)
    }

    func addRaw(_ name: String, metadata: Data?, blob: Data? = nil) throws {
        let dir = root.appendingPathComponent(name)
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        if let metadata { try metadata.write(to: dir.appendingPathComponent("metadata")) }
        if let blob { try blob.write(to: dir.appendingPathComponent("backup")) }
    }

    func index(_ rows: [(String, String)], extraLines: [String] = []) throws {
        let lines = rows.map { #"{"PK": "\#($0.0)", "BackupId": "\#($0.1)"}"# } + extraLines
        try Data((lines.joined(separator: "\n") + "\n").utf8).write(
            to: root.appendingPathComponent("factor_lookup.jsonl"))
    }
}

@Suite("Import of backup-service exports")
struct ImportTests {
    func importer(_ store: SQLiteConsoleStore) -> BackupImporter { BackupImporter(store: store) { 1_780_000_000 } }

    @Test func happyPathBothFormsWithoutIndex() async throws {
        try await withStore { store, dir in
            let f = Fixtures()
            let export = try ExportBuilder(in: dir)
            let a = f.metadata(id: f.backupId(), passkeys: [f.credential()], googleSubs: ["104"], subOrgs: [f.uuid()])
            let b = f.metadata(id: f.backupId(), passkeys: [f.credential()], sync: ["BAAA"])
            try export.add(a, form: .stored, blob: Data(repeating: 5, count: 1000))
            try export.add(b, form: .exported)
            try Data("ignored".utf8).write(to: export.root.appendingPathComponent("README"))
            try FileManager.default.createDirectory(
                at: export.root.appendingPathComponent(".hidden"), withIntermediateDirectories: true)
            var ticks: [Int] = []
            let report = try await importer(store).run(
                directory: export.root, tenant: alpha, dryRun: false, operatorName: "tester",
                progress: { ticks.append($0) })
            #expect(report.backupsSeen == 2 && report.imported == 2 && report.failed == 0 && report.unchanged == 0)
            #expect(report.problems.isEmpty && report.drift.isEmpty && report.conflicts.isEmpty)
            #expect(report.lookupRowsImported == 4)
            #expect(ticks == [1, 2])
            let stored = try #require(try await store.backup(tenant: alpha, id: a.id))
            #expect(stored.metadata == a && stored.blobSize == 1000 && stored.blobSHA256?.count == 64)
            #expect(try await store.sealedBlob(tenant: alpha, backupId: a.id) == Data(repeating: 5, count: 1000))
            #expect(
                try await store.lookup(tenant: alpha, pk: "MAIN#OIDC|https://accounts.google.com|104")?.backupId == a.id
            )
            #expect(try await store.lookup(tenant: alpha, pk: "SYNC#EC_KEYPAIR|BAAA")?.backupId == b.id)
            #expect(try await store.subOrgReference(tenant: alpha, subOrgId: a.turnkeySubOrgIds[0]) == a.id)
            // The exported form has no OIDC sub, but passkeys keep their credential id.
            #expect(try await store.backup(tenant: alpha, id: b.id)?.metadata.factors.count == 1)
        }
    }

    @Test func indexIsImportedAsItIsAndDriftIsReported() async throws {
        try await withStore { store, dir in
            let f = Fixtures()
            let export = try ExportBuilder(in: dir)
            let (kept, missing, stale, orphanCred) = (f.credential(), f.credential(), f.credential(), f.credential())
            let a = f.metadata(id: f.backupId(), passkeys: [kept, missing])
            let ghost = f.backupId()
            try export.add(a)
            try export.index(
                [(passkeyPK(kept), a.id), (passkeyPK(stale), a.id), (passkeyPK(orphanCred), ghost)],
                extraLines: ["not json", #"{"PK": "BOGUS#PK|x", "BackupId": "y"}"#])
            let report = try await importer(store).run(
                directory: export.root, tenant: alpha, dryRun: false, operatorName: "tester")
            #expect(report.imported == 1)
            #expect(
                Set(report.drift.map { "\($0.kind.rawValue) \($0.pk) \($0.backupId)" }) == [
                    "missing_in_index \(passkeyPK(missing)) \(a.id)",
                    "unauthorized_factor \(passkeyPK(stale)) \(a.id)",
                    "orphan_row \(passkeyPK(orphanCred)) \(ghost)",
                ])
            #expect(report.problems.map(\.path) == ["factor_lookup.jsonl:4", "factor_lookup.jsonl:5"])
            #expect(report.problems.map(\.code) == ["invalid_lookup_row", "invalid_lookup_key"])
            // Rows as they are: the stale one is there, the missing one is not, the orphan too.
            #expect(
                Set(try await store.lookupRows(tenant: alpha, backupId: a.id).map(\.pk)) == [
                    passkeyPK(kept), passkeyPK(stale),
                ])
            #expect(try await store.lookup(tenant: alpha, pk: passkeyPK(missing)) == nil)
            #expect(try await store.lookup(tenant: alpha, pk: passkeyPK(orphanCred))?.backupId == ghost)
            #expect(report.lookupRowsImported == 3)
        }
    }

    @Test func conflictFailsOnlyThatBackup() async throws {
        try await withStore { store, dir in
            let f = Fixtures()
            let export = try ExportBuilder(in: dir)
            let shared = f.credential()
            let a = f.metadata(id: f.backupId(), passkeys: [shared])
            let b = f.metadata(id: f.backupId(), passkeys: [f.credential(), shared])
            let c = f.metadata(id: f.backupId(), passkeys: [f.credential()])
            for m in [a, b, c] { try export.add(m) }
            let (first, second) = a.id < b.id ? (a.id, b.id) : (b.id, a.id)
            let report = try await importer(store).run(
                directory: export.root, tenant: alpha, dryRun: false, operatorName: "tester")
            #expect(report.imported == 2 && report.failed == 1)
            #expect(report.conflicts == [ImportConflict(pk: passkeyPK(shared), backupIds: [first, second])])
            #expect(try await store.backupExists(tenant: alpha, id: first))
            await #expect(try !store.backupExists(tenant: alpha, id: second))
            #expect(try await store.backupExists(tenant: alpha, id: c.id))
        }
    }

    @Test func badFilesAreReportedAndTheRestImported() async throws {
        try await withStore { store, dir in
            let f = Fixtures()
            let export = try ExportBuilder(in: dir)
            let good = f.metadata(id: f.backupId(), passkeys: [f.credential()])
            try export.add(good)
            let badJSON = f.backupId()
            try export.addRaw(badJSON, metadata: Data("{\"id\": 12".utf8))
            let noMetadata = f.backupId()
            try export.addRaw(noMetadata, metadata: nil, blob: Data([1]))
            let mismatch = f.backupId()
            try export.addRaw(mismatch, metadata: f.metadata(id: f.backupId(), passkeys: [f.credential()]).encoded())
            let huge = f.metadata(id: f.backupId(), passkeys: [f.credential()])
            try export.add(huge, blob: Data(count: BackupMetadata.maxBlobBytes + 1))
            try export.addRaw("not-a-backup-id", metadata: Data("{}".utf8))

            let report = try await importer(store).run(
                directory: export.root, tenant: alpha, dryRun: false, operatorName: "tester")
            #expect(report.backupsSeen == 6 && report.imported == 1 && report.failed == 5)
            let byPath = Dictionary(uniqueKeysWithValues: report.problems.map { ($0.path, $0.code) })
            #expect(byPath["\(badJSON)/metadata"] == "invalid_metadata")
            #expect(byPath["\(noMetadata)/metadata"] == "missing_metadata")
            #expect(byPath["\(mismatch)/metadata"] == "id_mismatch")
            #expect(byPath["\(huge.id)/backup"] == "blob_too_large")
            #expect(byPath["not-a-backup-id"] == "invalid_backup_account_id")
            #expect(report.problems.allSatisfy { !$0.reason.isEmpty })
            #expect(try await store.backupCount(tenant: alpha) == 1)
        }
    }

    @Test("an empty sealed blob is the export's copy cut short: refused, and the stored blob stays")
    func emptyBlobKeepsTheStoredOne() async throws {
        try await withStore { store, dir in
            let f = Fixtures()
            let first = try ExportBuilder(in: dir)
            let m = f.metadata(id: f.backupId(), passkeys: [f.credential()])
            try first.add(m, blob: Data([7, 8, 9]))
            _ = try await importer(store).run(
                directory: first.root, tenant: alpha, dryRun: false, operatorName: "tester")
            #expect(try await store.sealedBlob(tenant: alpha, backupId: m.id) == Data([7, 8, 9]))

            let second = try ExportBuilder(in: dir)
            try second.add(m, blob: Data())
            let report = try await importer(store).run(
                directory: second.root, tenant: alpha, dryRun: false, operatorName: "tester")
            #expect(report.failed == 1 && report.imported == 0, "\(report)")
            #expect(report.problems.map(\.code) == ["empty_blob"] && report.problems.first?.path == "\(m.id)/backup")
            #expect(try await store.sealedBlob(tenant: alpha, backupId: m.id) == Data([7, 8, 9]))
            #expect(try await store.backup(tenant: alpha, id: m.id)?.blobSize == 3)
        }
    }

    @Test func reimportIsIdempotentAndDryRunWritesNothing() async throws {
        try await withStore { store, dir in
            let f = Fixtures()
            let export = try ExportBuilder(in: dir)
            var metas: [BackupMetadata] = []
            for i in 0..<5 {
                let m = f.metadata(id: f.backupId(), passkeys: [f.credential()], subOrgs: [f.uuid()])
                metas.append(m)
                try export.add(m, blob: Data(repeating: UInt8(i), count: 10))
            }
            let dry = try await importer(store).run(
                directory: export.root, tenant: alpha, dryRun: true, operatorName: "tester")
            #expect(dry.dryRun && dry.imported == 5)
            #expect(try await store.backupCount(tenant: alpha) == 0)
            let auditBefore = try await store.auditEntries(tenant: nil, afterSeq: 0, limit: 1000).count

            var wet = try await importer(store).run(
                directory: export.root, tenant: alpha, dryRun: false, operatorName: "tester")
            wet.dryRun = true
            #expect(wet == dry)
            let afterFirst = try await store.auditEntries(tenant: nil, afterSeq: 0, limit: 1000)
            // One batch entry plus one `import` entry, not one per backup.
            #expect(afterFirst.count - auditBefore == 2)
            let stored = try #require(try await store.backup(tenant: alpha, id: metas[0].id))

            let again = try await BackupImporter(store: store) { 1_790_000_000 }
                .run(directory: export.root, tenant: alpha, dryRun: false, operatorName: "tester")
            #expect(again.unchanged == 5 && again.imported == 0 && again.lookupRowsImported == 0)
            let afterSecond = try await store.auditEntries(tenant: nil, afterSeq: 0, limit: 1000)
            #expect(afterSecond.count - afterFirst.count == 1)
            #expect(afterSecond.last?.action == "import")
            // Found as stored, the backup is only confirmed: its time moves to the import's.
            var confirmed = try #require(try await store.backup(tenant: alpha, id: metas[0].id))
            #expect(confirmed.updatedAt == 1_790_000_000)
            confirmed.updatedAt = stored.updatedAt
            #expect(confirmed == stored)

            // A changed blob makes that backup (only) be rewritten.
            try Data([42]).write(to: export.root.appendingPathComponent("\(metas[2].id)/backup"))
            let third = try await importer(store).run(
                directory: export.root, tenant: alpha, dryRun: false, operatorName: "tester")
            #expect(third.imported == 1 && third.unchanged == 4)
            #expect(try await store.sealedBlob(tenant: alpha, backupId: metas[2].id) == Data([42]))
        }
    }

    @Test func unknownTenantAndMissingDirectoryThrow() async throws {
        try await withStore { store, dir in
            await #expect(throws: ConsoleError.self) {
                try await importer(store).run(
                    directory: dir.appendingPathComponent("nope"), tenant: alpha, dryRun: true, operatorName: "t")
            }
            await #expect(throws: ConsoleError.self) {
                try await importer(store).run(
                    directory: dir, tenant: try TenantName("zeta"), dryRun: true, operatorName: "t")
            }
        }
    }
}
