import Access
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

@testable import Cleanup
@testable import TurnkeySandbox

/// A live tenant's store is a snapshot of the Backup Service: cleanup deletes a sub-org only on
/// proof that is fresh enough — over loopback HTTP to the Turnkey and Backup Service sandboxes.
@Suite(.serialized, .timeLimit(.minutes(10))) struct LiveSnapshotTests {
    func snapshot(_ f: CleanupFixture, at seconds: Int64, complete: Bool = true) async throws {
        try await f.store.recordSnapshot(
            tenant: f.session.tenantName,
            SnapshotRecord(snapshotAt: seconds, complete: complete, importedAt: seconds, backups: 12), audit: nil)
    }

    var now: (CleanupFixture) -> Int64 { { $0.time.now / 1000 } }

    @Test(
        "a sub-org first seen after the newest snapshot is never deleted; a fresh complete snapshot lets it go",
        arguments: TestBackend.available)
    func staleSnapshotNeverDeletes(backend: TestBackend) async throws {
        let f = try await CleanupFixture(orphanCount: 3, live: true, backend: backend)
        let service = f.service()
        let execute = CleanupRunOptions(execute: true, graceSeconds: 3600)
        // The import the tenant has is from before anyone saw these sub-orgs unreferenced.
        try await snapshot(f, at: now(f) - 60)
        let first = try await service.scan(session: f.session, graceSeconds: 3600)
        #expect(first.orphans.map(\.waitingFor) == ["grace", "grace", "grace"])
        f.time.advance(byMillis: 2 * 3600 * 1000)
        // Past the grace period, but the snapshot is older than first-seen + grace: wait.
        let waiting = try await service.run(session: f.session, options: execute)
        #expect(waiting.items.isEmpty && waiting.waitingForSnapshot == 3)
        #expect(try await f.listed() == Set(f.referenced + f.orphans))
        // A partial snapshot proves nothing either.
        try await snapshot(f, at: now(f), complete: false)
        #expect(try await service.run(session: f.session, options: execute).items.isEmpty)
        // A complete snapshot taken after first-seen + grace that still does not reference them.
        try await snapshot(f, at: now(f))
        let scan = try await service.scan(session: f.session, graceSeconds: 3600)
        #expect(scan.orphans.allSatisfy { $0.eligible && $0.provenBy == "snapshot" })
        let done = try await service.run(session: f.session, options: execute)
        #expect(done.deleted == 3 && done.failed == 0)
        #expect(try await f.listed() == Set(f.referenced))
        await f.stop()
    }

    @Test(
        "teardown-request for a sub-org a backup still references is refused; nothing is journaled",
        arguments: TestBackend.available)
    func teardownOfAReferencedSubOrg(backend: TestBackend) async throws {
        let f = try await CleanupFixture(orphanCount: 1, backend: backend)
        let service = f.service()
        let referenced = try #require(f.referenced.first)
        let before = try await f.store.cleanupItems(tenant: f.session.tenantName, states: nil)
        let error = await #expect(throws: ConsoleError.self) {
            _ = try await service.teardownRequest(session: f.session, subOrgId: referenced)
        }
        #expect(error?.code == "suborg_referenced")
        #expect(try await f.store.cleanupItems(tenant: f.session.tenantName, states: nil) == before)
        await f.stop()
    }

    @Test("a complete snapshot older than the tenant's maximum age is not trusted", arguments: TestBackend.available)
    func tooOldSnapshot(backend: TestBackend) async throws {
        let f = try await CleanupFixture(orphanCount: 2, live: true, backend: backend)
        let service = f.service()
        _ = try await service.scan(session: f.session, graceSeconds: 0)
        try await snapshot(f, at: now(f))
        f.time.advance(byMillis: 25 * 3600 * 1000)
        let stale = try await service.run(
            session: f.session, options: CleanupRunOptions(execute: true, graceSeconds: 0))
        #expect(stale.items.isEmpty && stale.waitingForSnapshot == 2)
        try await snapshot(f, at: now(f))
        let fresh = try await service.run(
            session: f.session, options: CleanupRunOptions(execute: true, graceSeconds: 0))
        #expect(fresh.deleted == 2)
        await f.stop()
    }

    @Test("the service's reset and /v1/backup/status not_found need no snapshot; a live backup blocks")
    func resetAndStatusProofs() async throws {
        let f = try await CleanupFixture(orphanCount: 0, live: true)
        let tenant = f.session.tenantName
        let ids = try await f.store.backupIds(tenant: tenant)
        let resetId = ids[0]
        let retiredId = ids[1]
        let liveId = ids[2]
        let subOrgOf: (String) async throws -> [String] = { id in
            try #require(try await f.store.backup(tenant: tenant, id: id)).metadata.turnkeySubOrgIds
        }
        let resetSubOrgs = try await subOrgOf(resetId)
        let retiredSubOrgs = try await subOrgOf(retiredId)
        // Reset through the service (its 204 recorded), and retired by a complete snapshot.
        _ = try await f.store.recordServiceReset(
            tenant: tenant, tokenHash: nil, backupId: resetId, subOrgIds: [], now: now(f),
            audit: ResetAuditDraft(f.session.audit("test.reset"), lookupRowsAtLeast: 0))
        _ = try await f.store.retireBackups(
            tenant: tenant, ids: [retiredId], now: now(f), audit: f.session.audit("test"))
        // A sub-org whose last backup the service still has: retired here by mistake below.
        let blocked = try await subOrgOf(liveId)[0]
        let (server, client) = try await SnapshotRetireTests.backupService(f, holding: [liveId])
        _ = try await f.store.retireBackups(tenant: tenant, ids: [liveId], now: now(f), audit: f.session.audit("test"))
        let scan = try await f.service(backupService: client).scan(session: f.session, graceSeconds: 0)
        let verdicts = Dictionary(uniqueKeysWithValues: scan.orphans.map { ($0.subOrgId, $0) })
        for id in resetSubOrgs { #expect(verdicts[id]?.provenBy == "reset") }
        for id in retiredSubOrgs { #expect(verdicts[id]?.provenBy == "status") }
        // Retired, but the service still holds it: no snapshot's word lets it go.
        #expect(verdicts[blocked]?.eligible == false && verdicts[blocked]?.waitingFor == "service_status")
        // Without a Backup Service the retired ones wait for a snapshot too.
        let without = try await f.service().scan(session: f.session, graceSeconds: 0)
        for id in retiredSubOrgs { #expect(without.orphans.first { $0.subOrgId == id }?.waitingFor == "snapshot") }
        await server.stop()
        await f.stop()
    }

    /// A sub-org is journaled unreferenced (the app made it before `/v1/create`), then a backup
    /// references it, then a snapshot retires that backup. Its old first-seen time must not
    /// count: the grace clock starts at the retirement, and the retirement needs the service's
    /// word. One sub-org is found referenced by a scan in between; the other never is.
    @Test(
        "an orphan referenced again and then retired restarts its clock and needs the service's word",
        arguments: TestBackend.available)
    func referencedAgainThenRetired(backend: TestBackend) async throws {
        let f = try await CleanupFixture(orphanCount: 0, live: true, backend: backend)
        let tenant = f.session.tenantName
        let cleanup = f.service()
        let execute = CleanupRunOptions(execute: true, graceSeconds: 3600)
        var backups: [String] = []
        var subOrgs: [String] = []
        for id in try await f.store.backupIds(tenant: tenant) where backups.count < 2 {
            let own = try #require(try await f.store.backup(tenant: tenant, id: id)).metadata.turnkeySubOrgIds
            guard own.count == 1 else { continue }
            backups.append(id)
            subOrgs += own
        }
        try #require(backups.count == 2)
        let seenAt = now(f)
        let early = { (id: String) in
            CleanupItemRecord(subOrgId: id, reason: "unreferenced", firstSeenAt: seenAt, updatedAt: seenAt)
        }
        _ = try await f.store.enqueueCleanup(tenant: tenant, [early(subOrgs[0])], audit: nil)
        // A scan finds the first referenced now: whatever made it an orphan is void.
        _ = try await cleanup.scan(session: f.session, graceSeconds: 3600)
        let skipped = try #require(try await f.store.cleanupItem(tenant: tenant, subOrgId: subOrgs[0]))
        #expect(skipped.state == .skipped && skipped.lastBackupId == backups[0])
        _ = try await f.store.enqueueCleanup(tenant: tenant, [early(subOrgs[1])], audit: nil)
        // The Backup Service keeps both: the snapshot below leaves them out by mistake.
        let (server, client) = try await SnapshotRetireTests.backupService(f, holding: backups)
        f.time.advance(byMillis: 2 * 3600 * 1000)
        try await snapshot(f, at: now(f))
        let retiredAt = now(f)
        _ = try await f.store.retireBackups(
            tenant: tenant, ids: backups, now: retiredAt, audit: f.session.audit("test"))
        for id in subOrgs {
            let item = try #require(try await f.store.cleanupItem(tenant: tenant, subOrgId: id))
            #expect(item.reason == "retired" && item.state == .pending && item.firstSeenAt == retiredAt)
        }
        // Unreferenced only since the retirement: the grace period has not passed.
        let soon = try await cleanup.run(session: f.session, options: execute)
        #expect(soon.items.isEmpty)
        // Past it, with a fresh complete snapshot, but the service still has both backups.
        f.time.advance(byMillis: 2 * 3600 * 1000)
        try await snapshot(f, at: now(f))
        let asked = try await f.service(backupService: client).run(session: f.session, options: execute)
        #expect(asked.items.isEmpty)
        let scan = try await f.service(backupService: client).scan(session: f.session, graceSeconds: 3600)
        #expect(
            scan.orphans.filter { subOrgs.contains($0.subOrgId) }.map(\.waitingFor) == [
                "service_status", "service_status",
            ])
        #expect(try await f.listed().isSuperset(of: subOrgs))
        await server.stop()
        await f.stop()
    }

    @Test(
        "two runs at once: one holds the lease, the other refuses; every sub-org is deleted once",
        arguments: TestBackend.available)
    func concurrentRuns(backend: TestBackend) async throws {
        let f = try await CleanupFixture(orphanCount: 6, backend: backend)
        let a = f.service()
        let b = f.service()
        let options = CleanupRunOptions(execute: true, concurrency: 2, graceSeconds: 0)
        let session = f.session
        async let first = Result(catching: { () async throws(ConsoleError) in
            try await a.run(session: session, options: options)
        })
        async let second = Result(catching: { () async throws(ConsoleError) in
            try await b.run(session: session, options: options)
        })
        let results = await [first, second]
        let refused = results.compactMap { result -> ConsoleError? in
            if case .failure(let error) = result { return error }
            return nil
        }
        let reports = results.compactMap { try? $0.get() }
        // Either they overlapped (one refused) or one finished before the other began (nothing left).
        #expect(refused.allSatisfy { $0.code == "cleanup_run_in_progress" })
        #expect(reports.map(\.deleted).reduce(0, +) == 6)
        let bodies = await f.sandbox.deleteBodies
        for id in f.orphans { #expect(bodies[id]?.count == 1, "\(id) was sent \(bodies[id]?.count ?? 0) times") }
        let audit = try await f.store.latestAuditEntries(tenant: f.session.tenantName, limit: 1000)
        #expect(audit.filter { $0.action == "cleanup.delete" }.count == 6)
        // A lease held by a live run refuses at once; an expired one (a killed run) is taken over.
        #expect(
            try await f.store.acquireCleanupLease(
                tenant: session.tenantName, holder: "other", now: now(f), expiresAt: now(f) + 120, takeOver: nil) == nil
        )
        let held = await #expect(throws: ConsoleError.self) { _ = try await a.run(session: session, options: options) }
        #expect(held?.code == "cleanup_run_in_progress")
        f.time.advance(byMillis: 121_000)
        _ = try await a.run(session: session, options: options)
        await f.stop()
    }

    @Test(
        "20% 5xx and 10% 429 with the default policy: later passes finish every eligible sub-org",
        arguments: TestBackend.available)
    func faultsLeaveNothingFailed(backend: TestBackend) async throws {
        let f = try await CleanupFixture(
            orphanCount: 40, faults: SandboxFaults(serverErrorRate: 0.2, rateLimitErrorRate: 0.1), backend: backend)
        let report = try await f.service(budget: 200).run(
            session: f.session, options: CleanupRunOptions(execute: true, concurrency: 8, graceSeconds: 0))
        #expect(report.failed == 0 && report.deleted + report.alreadyGone == 40)
        #expect(try await f.listed() == Set(f.referenced))
        let bodies = await f.sandbox.deleteBodies
        for id in f.orphans { #expect(Set(bodies[id] ?? []).count == 1) }
        await f.stop()
    }
}

extension Result where Failure == ConsoleError {
    init(catching body: () async throws(ConsoleError) -> Success) async {
        do { self = .success(try await body()) } catch { self = .failure(error) }
    }
}
