import BackupCrypto
import BackupModel
import BackupService
import BackupServiceSandbox
import BackupctlTestSupport
import ConsoleStore
import Foundation
import SQLiteStore
import Testing
import Turnkey

@testable import Access
@testable import Cleanup
@testable import TurnkeySandbox

/// Complete snapshots imported into a live tenant: they cannot retire the tenant by accident,
/// a retired backup's sub-org waits for the Backup Service's `not_found`, and a factor that
/// moved from a backup the snapshot no longer holds is no conflict.
@Suite(.serialized, .timeLimit(.minutes(10))) struct SnapshotRetireTests {
    /// Writes `metadata` as an export directory with `export.json` saying complete, at `at`.
    static func export(_ backups: [BackupMetadata], in f: CleanupFixture, name: String, at: Int64) throws -> URL {
        let dir = f.directory.appendingPathComponent(name)
        for metadata in backups {
            let backup = dir.appendingPathComponent(metadata.id)
            try FileManager.default.createDirectory(at: backup, withIntermediateDirectories: true)
            try metadata.encoded(.stored).write(to: backup.appendingPathComponent("metadata"))
        }
        try Data(#"{"snapshotAt": "\#(Timestamp.format(at))", "complete": true}"#.utf8).write(
            to: dir.appendingPathComponent(SnapshotManifest.fileName))
        return dir
    }

    static func metadata(_ f: CleanupFixture, _ id: String) async throws -> BackupMetadata {
        try #require(try await f.store.backup(tenant: f.session.tenantName, id: id)).metadata
    }

    /// A live tenant of `backups` seeded backups: its fixture, name, backup ids and their metadata.
    static func liveTenant(backups: Int, backend: TestBackend = .sqlite) async throws
        -> (CleanupFixture, TenantName, [String], [BackupMetadata])
    {
        let f = try await CleanupFixture(backups: backups, orphanCount: 0, live: true, backend: backend)
        let tenant = f.session.tenantName
        let ids = try await f.store.backupIds(tenant: tenant)
        var all: [BackupMetadata] = []
        for id in ids { all.append(try await metadata(f, id)) }
        return (f, tenant, ids, all)
    }

    @Test(
        "a one-backup complete export into a tenant of 1,000: refused with the count; confirmed, it retires, and cleanup spares what the service still holds"
    )
    func oneBackupCannotRetireAThousand() async throws {
        let f = try await CleanupFixture(backups: 1000, orphanCount: 0, live: true)
        let tenant = f.session.tenantName
        let ids = try await f.store.backupIds(tenant: tenant)
        #expect(ids.count == 1000)
        // The copy begins a second after the seed wrote (a write of its own second may be missing).
        f.time.advance(byMillis: 1000)
        let now = f.time.now / 1000
        let dir = try Self.export([try await Self.metadata(f, ids[0])], in: f, name: "one", at: now)
        let admin = DataAdminService(store: f.store, clock: .manual(f.time))
        let auditBefore = try await f.store.latestAuditEntries(tenant: tenant, limit: 5)
        let refused = await #expect(throws: ConsoleError.self) {
            _ = try await admin.importExport(directory: dir.path, dryRun: false, session: f.session)
        }
        #expect(refused?.code == "retire_threshold_exceeded")
        #expect(refused?.message.contains("retire 999 of the 1000 backups") == true)
        #expect(refused?.message.contains("--retire-at-most 999") == true)
        // Nothing changed (backups, snapshots), and the attempt is audited with what it would
        // have retired.
        #expect(try await f.store.backupIds(tenant: tenant) == ids)
        #expect(try await f.store.newestSnapshot(tenant: tenant) == nil)
        let afterRefusal = try await f.store.latestAuditEntries(tenant: tenant, limit: 6)
        #expect(Array(afterRefusal.dropLast()) == auditBefore)
        let entry = try #require(afterRefusal.last)
        #expect(entry.action == "import.refused" && entry.operatorName == f.session.operatorName.rawValue)
        #expect(entry.details["code"] == "retire_threshold_exceeded" && entry.details["outcome"] == "failure")
        #expect(entry.details["wouldRetire"] == "999" && entry.details["backups"] == "1000", "\(entry.details)")
        #expect(entry.details["allowance"] == "10" && entry.details["retireAtMost"] == nil, "\(entry.details)")
        let named = entry.details["backupIds"]?.split(separator: ",").map(String.init) ?? []
        #expect(
            named.count == 101 && named.last == "…" && named.dropLast().allSatisfy { $0 != ids[0] && ids.contains($0) })
        // A dry run says the same and writes nothing; a confirmation below the count does not cover it.
        let dry = await #expect(throws: ConsoleError.self) {
            _ = try await admin.importExport(directory: dir.path, dryRun: true, session: f.session)
        }
        #expect(dry?.code == "retire_threshold_exceeded")
        #expect(try await f.store.latestAuditEntries(tenant: tenant, limit: 6) == afterRefusal)
        let short = await #expect(throws: ConsoleError.self) {
            _ = try await admin.importExport(directory: dir.path, dryRun: false, session: f.session, retireAtMost: 998)
        }
        #expect(short?.message.contains("more than --retire-at-most 998") == true)
        // The Backup Service still holds five of the backups the export left out.
        let stillLive = Array(ids[1...5])
        let (server, client) = try await Self.backupService(f, holding: stillLive)
        let report = try await admin.importExport(
            directory: dir.path, dryRun: false, session: f.session, retireAtMost: 999)
        #expect(report.complete && report.retired.count == 999)
        #expect(try await f.store.backupIds(tenant: tenant) == [ids[0]])
        // Cleanup: the snapshot is fresh and complete, yet the five wait for the service's word.
        var spared: Set<String> = []
        for item in try await f.store.cleanupItems(tenant: tenant, states: nil)
        where stillLive.contains(item.lastBackupId ?? "") {
            spared.insert(item.subOrgId)
        }
        #expect(!spared.isEmpty)
        let service = f.service(backupService: client)
        let run = try await service.run(
            session: f.session, options: CleanupRunOptions(execute: true, max: 10_000, concurrency: 8, graceSeconds: 0))
        #expect(run.failed == 0)
        let left = try await f.listed()
        #expect(spared.isSubset(of: left))
        let scan = try await service.scan(session: f.session, graceSeconds: 0)
        #expect(scan.orphans.count == spared.count)
        #expect(scan.orphans.allSatisfy { !$0.eligible && $0.waitingFor == "service_status" })
        // Every other retired backup's sub-orgs are gone; the kept backup's stay.
        let kept = Set(try await Self.metadata(f, ids[0]).turnkeySubOrgIds)
        #expect(left == spared.union(kept))
        #expect(run.deleted == f.referenced.count - spared.count - kept.count)
        await server.stop()
        await f.stop()
    }

    @Test(
        "a passkey that moved from a backup the snapshot no longer holds imports cleanly; the next cleanup run proceeds"
    )
    func movedFactorIsNoConflict() async throws {
        let f = try await CleanupFixture(backups: 12, orphanCount: 0, live: true)
        let tenant = f.session.tenantName
        let ids = try await f.store.backupIds(tenant: tenant)
        let gone = ids[0]
        let old = try await Self.metadata(f, gone)
        let moved = try #require(old.factors.first { $0.lookupKey(scope: .main) != nil })
        let pk = try #require(moved.lookupKey(scope: .main)).rawValue
        var all: [BackupMetadata] = []
        for id in ids.dropFirst() { all.append(try await Self.metadata(f, id)) }
        // Backup 1 now holds the factor backup 0 had (an account deleted and made again).
        all[0].factors.append(moved)
        let admin = DataAdminService(store: f.store, clock: .manual(f.time))
        // The copy begins a second after the seed wrote (a write of its own second may be missing).
        f.time.advance(byMillis: 1000)
        let now = f.time.now / 1000
        let dir = try Self.export(all, in: f, name: "moved", at: now)
        let report = try await admin.importExport(directory: dir.path, dryRun: false, session: f.session)
        #expect(report.conflicts.isEmpty && report.failed == 0)
        #expect(report.complete && report.retired == [gone] && report.factorsMoved == 1)
        #expect(try await f.store.lookup(tenant: tenant, pk: pk)?.backupId == all[0].id)
        // Handed over by the write of the backup that claims it: one entry, no separate one.
        let entries = try await f.store.latestAuditEntries(tenant: tenant, limit: 20)
        #expect(entries.filter { $0.details["factorsMoved"] == "1" }.map(\.action) == ["backup.import"])
        #expect(!entries.contains { $0.action == "lookup.handover" })
        #expect(try await f.store.newestCompleteSnapshot(tenant: tenant)?.snapshotAt == now)
        // The next run deletes the retired backup's sub-orgs (no Backup Service: the snapshot proves it).
        let run = try await f.service().run(
            session: f.session, options: CleanupRunOptions(execute: true, graceSeconds: 0))
        #expect(run.deleted == old.turnkeySubOrgIds.count && run.failed == 0)
        #expect(try await f.listed() == Set(f.referenced).subtracting(old.turnkeySubOrgIds))
        await f.stop()
    }

    @Test(
        "a passkey that moved between two backups of the export is handed over whichever id sorts first",
        arguments: [false, true])
    func movedInsideTheExport(newOwnerFirst: Bool) async throws {
        let (f, tenant, ids, seeded) = try await Self.liveTenant(backups: 12)
        var all = seeded
        let (from, to) = newOwnerFirst ? (1, 0) : (0, 1)
        let index = try #require(all[from].factors.firstIndex { $0.lookupKey(scope: .main) != nil })
        let moved = all[from].factors.remove(at: index)
        all[to].factors.append(moved)
        let pk = try #require(moved.lookupKey(scope: .main)).rawValue
        let dir = try Self.export(all, in: f, name: "moved-inside", at: f.time.now / 1000)
        let report = try await DataAdminService(store: f.store, clock: .manual(f.time)).importExport(
            directory: dir.path, dryRun: false, session: f.session)
        #expect(report.conflicts.isEmpty && report.failed == 0, "\(report.conflicts)")
        #expect(report.complete, "\(report.problems)")
        #expect(try await f.store.lookup(tenant: tenant, pk: pk)?.backupId == all[to].id)
        // The export has no sealed blobs: the stored ones stay (those of the same manifest),
        // so only the changed backups were written (the two, and any whose stored rows drifted), and
        // still have theirs.
        #expect(report.unchanged >= 9, "imported \(report.imported), unchanged \(report.unchanged)")
        for id in ids {
            let stored = try #require(try await f.store.backup(tenant: tenant, id: id))
            let blob = try #require(try await f.store.sealedBlob(tenant: tenant, backupId: id))
            #expect(stored.blobSHA256 == SHA256.hex(blob) && stored.blobSize == blob.count)
        }
        await f.stop()
    }

    @Test("a conflict inside the snapshot still makes it partial and retires nothing", arguments: TestBackend.available)
    func conflictInsideTheSnapshot(backend: TestBackend) async throws {
        let f = try await CleanupFixture(backups: 12, orphanCount: 0, live: true, backend: backend)
        let tenant = f.session.tenantName
        let ids = try await f.store.backupIds(tenant: tenant)
        var all: [BackupMetadata] = []
        for id in ids.dropFirst() { all.append(try await Self.metadata(f, id)) }
        // Backup 2 claims a factor backup 1 still holds, in the same snapshot.
        let taken = try #require(all[0].factors.first { $0.lookupKey(scope: .main) != nil })
        all[1].factors.append(taken)
        let now = f.time.now / 1000
        let dir = try Self.export(all, in: f, name: "conflict", at: now)
        let report = try await DataAdminService(store: f.store, clock: .manual(f.time)).importExport(
            directory: dir.path, dryRun: false, session: f.session)
        #expect(report.conflicts.count == 1 && report.failed == 1)
        #expect(!report.complete && report.retired.isEmpty && report.factorsMoved == 0)
        #expect(try await f.store.backupIds(tenant: tenant) == ids)
        await f.stop()
    }

    @Test(
        "a complete snapshot older than the newest one is refused; one taken before a backup was written does not retire it"
    )
    func oldSnapshotsRetireNothingNewer() async throws {
        let (f, tenant, ids, all) = try await Self.liveTenant(backups: 12)
        let admin = DataAdminService(store: f.store, clock: .manual(f.time))
        let start = f.time.now / 1000
        _ = try await admin.importExport(
            directory: try Self.export(all, in: f, name: "whole", at: start).path, dryRun: false, session: f.session)
        // An export copied an hour before that one, without backup 0: refused, nothing changed.
        let older = try Self.export(Array(all.dropFirst()), in: f, name: "older", at: start - 3600)
        let auditBefore = try await f.store.latestAuditEntries(tenant: tenant, limit: 5)
        let refused = await #expect(throws: ConsoleError.self) {
            _ = try await admin.importExport(directory: older.path, dryRun: false, session: f.session)
        }
        #expect(refused?.code == "snapshot_older", "\(refused?.message ?? "")")
        #expect(try await f.store.backupIds(tenant: tenant) == ids)
        let afterRefusal = try await f.store.latestAuditEntries(tenant: tenant, limit: 6)
        #expect(Array(afterRefusal.dropLast()) == auditBefore)
        let entry = try #require(afterRefusal.last)
        #expect(entry.action == "import.refused" && entry.details["code"] == "snapshot_older")
        #expect(entry.details["snapshotAt"] == Timestamp.format(start - 3600), "\(entry.details)")
        #expect(entry.details["newestSnapshotAt"] == Timestamp.format(start), "\(entry.details)")
        // A copy that began in the second backup 0 was written again (a partial import at
        // start + 120 s) and lacks it: backup 0 stays; backup 1, which the copy also lacks and
        // nothing wrote since, is retired. The dry run and the allowance (1 of 12) count only
        // backup 1.
        f.time.advance(byMillis: 120_000)
        let partial = try Self.export([all[0]], in: f, name: "partial", at: start + 120)
        try FileManager.default.removeItem(at: partial.appendingPathComponent(SnapshotManifest.fileName))
        var changed = all[0]
        changed.factors.removeLast()
        try changed.encoded(.stored).write(
            to: partial.appendingPathComponent(all[0].id).appendingPathComponent("metadata"))
        let written = try await admin.importExport(directory: partial.path, dryRun: false, session: f.session)
        #expect(written.imported == 1, "\(written)")
        f.time.advance(byMillis: 60_000)
        let copy = try Self.export(Array(all.dropFirst(2)), in: f, name: "copy", at: start + 120)
        let dry = try await admin.importExport(directory: copy.path, dryRun: true, session: f.session)
        #expect(dry.complete && dry.retired == [ids[1]], "\(dry.retired)")
        let report = try await admin.importExport(
            directory: copy.path, dryRun: false, session: f.session, retireAtMost: 2)
        #expect(report.complete && report.retired == [ids[1]], "\(report.retired)")
        #expect(try await f.store.backupIds(tenant: tenant) == [ids[0]] + Array(ids.dropFirst(2)))
        let retire = try #require(
            try await f.store.latestAuditEntries(tenant: tenant, limit: 5).first { $0.action == "import.retire" })
        #expect(retire.details["backupIds"] == ids[1] && retire.details["retired"] == "1", "\(retire.details)")
        #expect(retire.details["retireAtMost"] == "2", "\(retire.details)")
        await f.stop()
    }

    @Test(
        "a backup a later copy held unchanged is not retired by a complete snapshot taken before that copy; an older copy, a dry run or another tenant does not hold it",
        arguments: TestBackend.available)
    func anUnchangedReimportHoldsItsBackup(backend: TestBackend) async throws {
        let (f, tenant, ids, all) = try await Self.liveTenant(backups: 12, backend: backend)
        let admin = DataAdminService(store: f.store, clock: .manual(f.time))
        f.time.advance(byMillis: 1000)
        let start = f.time.now / 1000
        _ = try await admin.importExport(
            directory: try Self.export(all, in: f, name: "whole", at: start).path, dryRun: false, session: f.session)
        f.time.advance(byMillis: 120_000)
        /// A partial copy of `backups`, as stored, taken at `at` (`nil`: a time unknown).
        func partial(_ backups: [BackupMetadata], _ name: String, at: Int64?, dryRun: Bool = false) async throws {
            let dir = try Self.export(backups, in: f, name: name, at: 0)
            try FileManager.default.removeItem(at: dir.appendingPathComponent(SnapshotManifest.fileName))
            let report = try await admin.importExport(
                directory: dir.path, dryRun: dryRun, session: f.session, snapshotAt: at.map(Timestamp.format))
            #expect(report.unchanged == backups.count && report.imported == 0 && !report.complete, "\(report)")
        }
        // Backup 0 was in a copy taken at +100 s, backup 3 in one of unknown time imported now;
        // backup 1 only in a copy of +40 s, backup 2 only in a dry run of +100 s.
        try await partial([all[0]], "later", at: start + 100)
        try await partial([all[3]], "untimed", at: nil)
        try await partial([all[1]], "earlier", at: start + 40)
        try await partial([all[2]], "dry", at: start + 100, dryRun: true)
        // A copy of +60 s that lacks all four retires 1 and 2 only, and counts only them.
        let copy = try Self.export(Array(all.dropFirst(4)), in: f, name: "copy", at: start + 60)
        let dry = try await admin.importExport(
            directory: copy.path, dryRun: true, session: f.session, retireAtMost: 2)
        #expect(dry.complete && dry.retired == [ids[1], ids[2]], "\(dry.retired)")
        let report = try await admin.importExport(
            directory: copy.path, dryRun: false, session: f.session, retireAtMost: 2)
        #expect(report.complete && report.retired == [ids[1], ids[2]], "\(report.retired)")
        #expect(try await f.store.backupIds(tenant: tenant) == [ids[0], ids[3]] + Array(ids.dropFirst(4)))
        // A confirmation moves a backup's time up only, and only in its own tenant.
        try await f.store.confirmBackups(tenant: tenant, ids: [ids[0]], seenAt: start)
        try await f.store.confirmBackups(tenant: try TenantName("elsewhere"), ids: [ids[4]], seenAt: start + 500)
        #expect(try await f.store.backupIdsWritten(tenant: tenant, since: start + 61) == [ids[0], ids[3]])
        await f.stop()
    }

    @Test("a complete snapshot recorded while another import ran retires nothing", arguments: TestBackend.available)
    func aRacingImportRetiresNothing(backend: TestBackend) async throws {
        let f = try await CleanupFixture(backups: 6, orphanCount: 0, live: true, backend: backend)
        let tenant = f.session.tenantName
        let ids = try await f.store.backupIds(tenant: tenant)
        // The copy begins a second after the seed wrote (a write of its own second may be missing).
        f.time.advance(byMillis: 1000)
        let now = f.time.now / 1000
        let seen = try await f.store.newestSnapshotSeq(tenant: tenant)
        // The other import records its snapshot first.
        try await f.store.recordSnapshot(
            tenant: tenant, SnapshotRecord(snapshotAt: now, complete: true, importedAt: now, backups: 5, retired: 0),
            audit: nil)
        let raced = await #expect(throws: ConsoleError.self) {
            _ = try await f.store.recordCompleteSnapshot(
                tenant: tenant,
                SnapshotRecord(snapshotAt: now, complete: true, importedAt: now, backups: 5, retired: 0),
                retiring: [ids[0]], newestSeqSeen: seen, audits: { _ in [] })
        }
        #expect(raced?.code == "snapshot_raced")
        #expect(try await f.store.backupIds(tenant: tenant) == ids)
        #expect(try await f.store.newestSnapshotSeq(tenant: tenant) == seen + 1)
        // Read again, it goes through; a snapshot of the very second the backup was written
        // (times are whole seconds) does not retire it, one a second later does.
        let sameSecond = try await f.store.recordCompleteSnapshot(
            tenant: tenant,
            SnapshotRecord(snapshotAt: now - 1, complete: true, importedAt: now, backups: 5, retired: 0),
            retiring: [ids[0]], newestSeqSeen: seen + 1, audits: { _ in [] })
        #expect(sameSecond.retired.isEmpty && sameSecond.snapshot.retired == 0)
        let done = try await f.store.recordCompleteSnapshot(
            tenant: tenant, SnapshotRecord(snapshotAt: now, complete: true, importedAt: now, backups: 5, retired: 0),
            retiring: [ids[0]], newestSeqSeen: seen + 2, audits: { _ in [f.session.audit("test")] })
        #expect(done.retired == [ids[0]] && done.snapshot.retired == 1 && done.snapshot.seq == seen + 3)
        await f.stop()
    }

    @Test(
        "an import whose snapshot another import recorded first retires nothing, keeps what it wrote, and is audited",
        arguments: TestBackend.available)
    func aRacedImportIsAudited(backend: TestBackend) async throws {
        let (f, tenant, ids, all) = try await Self.liveTenant(backups: 6, backend: backend)
        f.time.advance(byMillis: 1000)
        let now = f.time.now / 1000
        let seen = try await f.store.newestSnapshotSeq(tenant: tenant)
        // The copy lacks backup 0 and changes backup 1; the other import records its snapshot
        // after this one's backups are written and before this one records.
        let dir = try Self.export(Array(all.dropFirst()), in: f, name: "raced", at: now)
        var changed = all[1]
        changed.factors.removeLast()
        try changed.encoded(.stored).write(to: dir.appendingPathComponent(all[1].id).appendingPathComponent("metadata"))
        var admin = DataAdminService(store: f.store, clock: .manual(f.time))
        let store = f.store
        admin.beforeRecording = { () throws(ConsoleError) in
            try await store.recordSnapshot(
                tenant: tenant,
                SnapshotRecord(snapshotAt: now, complete: false, importedAt: now, backups: 1, retired: 0), audit: nil)
        }
        let raced = await #expect(throws: ConsoleError.self) {
            _ = try await admin.importExport(directory: dir.path, dryRun: false, session: f.session, retireAtMost: 1)
        }
        #expect(raced?.code == "snapshot_raced", "\(raced?.message ?? "")")
        #expect(try await f.store.backupIds(tenant: tenant) == ids)
        #expect(try await Self.metadata(f, ids[1]) == changed)
        let newest = try #require(try await f.store.newestSnapshot(tenant: tenant))
        #expect(newest.seq == seen + 1 && !newest.complete)
        let entry = try #require(try await f.store.latestAuditEntries(tenant: tenant, limit: 1).last)
        #expect(entry.action == "import.refused" && entry.operatorName == f.session.operatorName.rawValue)
        #expect(entry.details["code"] == "snapshot_raced" && entry.details["outcome"] == "failure", "\(entry.details)")
        #expect(entry.details["wouldRetire"] == "1" && entry.details["imported"] == "1", "\(entry.details)")
        #expect(entry.details["backups"] == "5" && entry.details["snapshotAt"] == Timestamp.format(now))
        await f.stop()
    }

    @Test("an empty index, a name given twice in export.json and --complete against a partial export are refused")
    func exportsThatMeanTwoThings() async throws {
        let f = try await CleanupFixture(backups: 6, orphanCount: 0, live: true)
        let tenant = f.session.tenantName
        let ids = try await f.store.backupIds(tenant: tenant)
        var all: [BackupMetadata] = []
        for id in ids.dropFirst() { all.append(try await Self.metadata(f, id)) }
        let admin = DataAdminService(store: f.store, clock: .manual(f.time))
        let now = f.time.now / 1000
        let pk = try #require(all[0].factors.compactMap { $0.lookupKey(scope: .main) }.first)
        // An empty factor_lookup.jsonl (a failed scan): the rows come from the metadata, the
        // snapshot is partial, nothing is retired.
        let empty = try Self.export(all, in: f, name: "empty-index", at: now)
        try Data().write(to: empty.appendingPathComponent("factor_lookup.jsonl"))
        let report = try await admin.importExport(directory: empty.path, dryRun: false, session: f.session)
        #expect(report.problems.map(\.code) == ["empty_index"], "\(report.problems)")
        #expect(!report.complete && report.retired.isEmpty)
        #expect(try await f.store.lookup(tenant: tenant, pk: pk.rawValue)?.backupId == all[0].id)
        #expect(try await f.store.backupIds(tenant: tenant) == ids)
        // export.json giving "complete" twice.
        let twice = try Self.export(all, in: f, name: "twice", at: now)
        try Data(#"{"snapshotAt":"\#(Timestamp.format(now))","complete":true,"complete":false}"#.utf8).write(
            to: twice.appendingPathComponent(SnapshotManifest.fileName))
        let repeated = await #expect(throws: ConsoleError.self) {
            _ = try await admin.importExport(directory: twice.path, dryRun: false, session: f.session)
        }
        #expect(repeated?.code == "invalid_export_manifest" && repeated?.message.contains("twice") == true)
        // --complete while export.json says partial.
        let partial = try Self.export(all, in: f, name: "says-partial", at: now)
        try Data(#"{"snapshotAt":"\#(Timestamp.format(now))","complete":false}"#.utf8).write(
            to: partial.appendingPathComponent(SnapshotManifest.fileName))
        let contradicted = await #expect(throws: ConsoleError.self) {
            _ = try await admin.importExport(
                directory: partial.path, dryRun: false, session: f.session, snapshotAt: Timestamp.format(now),
                complete: true)
        }
        #expect(contradicted?.kind == .usage && contradicted?.message.contains("contradicts") == true)
        #expect(try await f.store.backupIds(tenant: tenant) == ids)
        // A complete export that holds no backup: refused, and audited unless a dry run.
        try FileManager.default.createDirectory(
            at: f.directory.appendingPathComponent("hollow"), withIntermediateDirectories: true)
        let hollow = try Self.export([], in: f, name: "hollow", at: now)
        let before = try await f.store.latestAuditEntries(tenant: tenant, limit: 3)
        for dryRun in [true, false] {
            let refused = await #expect(throws: ConsoleError.self) {
                _ = try await admin.importExport(directory: hollow.path, dryRun: dryRun, session: f.session)
            }
            #expect(refused?.code == "retire_refused", "\(refused?.message ?? "")")
        }
        let after = try await f.store.latestAuditEntries(tenant: tenant, limit: 4)
        #expect(Array(after.dropLast()) == before)
        #expect(after.last?.action == "import.refused" && after.last?.details["code"] == "retire_refused")
        #expect(after.last?.details["snapshotAt"] == Timestamp.format(now), "\(after.last?.details ?? [:])")
        #expect(try await f.store.backupIds(tenant: tenant) == ids)
        await f.stop()
    }

    /// The Backup Service sandbox over a second store that holds `ids` (copies of this tenant's).
    static func backupService(_ f: CleanupFixture, holding ids: [String]) async throws
        -> (BackupServiceSandboxServer, BackupServiceClient)
    {
        let serviceStore = try SQLiteConsoleStore(path: f.directory.appendingPathComponent("service.db").path)
        let access = AccessService(store: serviceStore)
        let op = try await access.authenticate(token: try await access.bootstrap(admin: try OperatorName("svc")))
        let session = try await access.session(operator: op, tenant: try TenantName("sandbox"))
        for id in ids {
            var record = try #require(try await f.store.backup(tenant: f.session.tenantName, id: id))
            record.blobSize = 1
            record.blobSHA256 = SHA256.hex([1])
            try await serviceStore.writeBackup(
                tenant: session.tenantName, BackupWrite(record: record, blob: Data([1]), lookupRows: []),
                audit: session.audit("test"))
        }
        let server = try await BackupServiceSandboxServer.start(
            BackupServiceEmulator.sandbox(store: serviceStore, tenant: session.tenantName))
        return (server, try BackupServiceClient(baseURL: server.baseURL, attempts: 1))
    }
}
