import Access
import BackupModel
import BackupctlTestSupport
import ConsoleStore
import Foundation
import Testing
import Turnkey

@testable import Cleanup

/// `cleanup run --execute --queue` and the workers that drain the queue (``CleanupQueueWorker``)
/// on the SQLite store, against the Turnkey sandbox over loopback HTTP.
@Suite(.timeLimit(.minutes(10))) struct CleanupQueueTests {
    func queueEverything(_ fixture: CleanupFixture, _ service: CleanupService) async throws -> RunReport {
        try await service.run(
            session: fixture.session, options: CleanupRunOptions(execute: true, graceSeconds: 0, queue: true))
    }

    func worker(_ fixture: CleanupFixture, _ service: CleanupService, _ name: String) -> CleanupQueueWorker {
        let session = fixture.session
        var worker = CleanupQueueWorker(service: service, name: name) { queuedBy in
            #expect(queuedBy == "root")
            return session
        }
        worker.leaseMillis = 10_000
        return worker
    }

    @Test(
        "three workers drain a queued backlog: each orphan deleted once, with one body, audited as its queuer",
        arguments: TestBackend.available)
    func threeWorkersDrainTheQueue(backend: TestBackend) async throws {
        let fixture = try await CleanupFixture(orphanCount: 24, backend: backend)
        defer { Task { await fixture.stop() } }
        let service = fixture.service(budget: 1000)
        let queued = try await queueEverything(fixture, service)
        #expect(queued.items.count == 24 && queued.items.allSatisfy { $0.outcome == "queued" })
        #expect(try await fixture.listed().count == 24 + fixture.referenced.count)  // nothing deleted yet
        let outcomes = try await withThrowingTaskGroup(of: [RunReport.Item].self) { group in
            for index in 0..<3 {
                let worker = worker(fixture, service, "w\(index)")
                group.addTask { try await worker.drain(tenant: fixture.session.tenantName) }
            }
            return try await group.reduce(into: [RunReport.Item]()) { $0 += $1 }
        }
        #expect(outcomes.count == 24, "every item taken by exactly one worker")
        #expect(Set(outcomes.map(\.subOrgId)) == Set(fixture.orphans))
        #expect(outcomes.allSatisfy { $0.outcome == "deleted" })
        #expect(try await fixture.listed() == Set(fixture.referenced))
        let bodies = await fixture.sandbox.deleteBodies
        for id in fixture.orphans { #expect(bodies[id]?.count == 1, "sub-org \(id) sent \(bodies[id] ?? [])") }
        for id in fixture.referenced { #expect(bodies[id] == nil) }
        let audit = try await fixture.store.latestAuditEntries(tenant: fixture.session.tenantName, limit: 1000)
        let deletes = audit.filter { $0.action == "cleanup.delete" }
        #expect(deletes.count == 24 && deletes.allSatisfy { $0.operatorName == "root" })
        #expect(audit.contains { $0.action == "cleanup.queue" && $0.details["queued"] == "24" })
        // Nothing is left to claim.
        #expect(try await worker(fixture, service, "late").drain(tenant: fixture.session.tenantName).isEmpty)
    }

    @Test(
        "a worker that died holding an item loses it when its lease expires; another re-sends its journaled body",
        arguments: TestBackend.available)
    func aDeadWorkersItemIsFinishedWithItsBody(backend: TestBackend) async throws {
        let fixture = try await CleanupFixture(orphanCount: 3, backend: backend)
        defer { Task { await fixture.stop() } }
        let service = fixture.service(budget: 1000)
        _ = try await queueEverything(fixture, service)
        let tenant = fixture.session.tenantName
        // What a worker killed after journaling did: claimed the first item and wrote its body.
        let claimed = try await fixture.store.claimCleanup(
            tenant: tenant, worker: "dead", limit: 1, now: fixture.time.now, leaseMillis: 10_000)
        var item = try #require(claimed.first?.item)
        item.body = try TurnkeyActivityBody.deleteSubOrganization(subOrgId: item.subOrgId, timestampMs: 1_234).text
        let journaled = try await fixture.store.updateCleanupItem(tenant: tenant, item, audit: nil)
        // While the lease holds, another worker leaves it alone.
        let before = try await worker(fixture, service, "alive").drain(tenant: tenant)
        #expect(Set(before.map(\.subOrgId)) == Set(fixture.orphans.dropFirst()))
        fixture.time.advance(byMillis: 10_001)
        let after = try await worker(fixture, service, "alive").drain(tenant: tenant)
        #expect(after.map(\.subOrgId) == [item.subOrgId] && after.first?.outcome == "deleted")
        #expect(await fixture.sandbox.deleteBodies[item.subOrgId] == [item.body ?? ""])
        // The dead worker's late write changes nothing.
        var late = journaled
        late.state = .failed
        let error = await #expect(throws: ConsoleError.self) {
            try await fixture.store.updateCleanupItem(tenant: tenant, late, audit: nil)
        }
        #expect(error?.code == "stale_journal_item")
        try await fixture.store.releaseCleanupClaim(tenant: tenant, worker: "dead", subOrgId: item.subOrgId)
        #expect(try await fixture.store.cleanupItem(tenant: tenant, subOrgId: item.subOrgId)?.state == .deleted)
    }

    @Test(
        "a worker told to stop hands back the items it claimed and did not begin: another takes them at once",
        arguments: TestBackend.available)
    func aStoppedWorkerHandsBackItsClaims(backend: TestBackend) async throws {
        let fixture = try await CleanupFixture(orphanCount: 6, backend: backend)
        defer { Task { await fixture.stop() } }
        let service = fixture.service(budget: 1000)
        _ = try await queueEverything(fixture, service)
        let tenant = fixture.session.tenantName
        var stopping = worker(fixture, service, "stopping")
        stopping.batch = 10
        // Not stopped when it claims; stopped from its first item on.
        let asked = Counter()
        #expect(try await stopping.drain(tenant: tenant, shouldStop: { asked.next() > 1 }).isEmpty)
        #expect(await fixture.sandbox.deleteBodies.isEmpty)
        // No clock moved: without the hand-back these are claimed for the lease.
        let done = try await worker(fixture, service, "next").drain(tenant: tenant)
        #expect(Set(done.map(\.subOrgId)) == Set(fixture.orphans) && done.allSatisfy { $0.outcome == "deleted" })
    }

    @Test(
        "the tenant's Turnkey rate is one for all workers: burst at once, then one per interval",
        arguments: TestBackend.available)
    func oneSharedRate(backend: TestBackend) async throws {
        let fixture = try await CleanupFixture(orphanCount: 1, backend: backend)
        defer { Task { await fixture.stop() } }
        let tenant = fixture.session.tenantName
        let now: Int64 = 1_790_000_000_000_000
        var slots: [Int64] = []
        for _ in 0..<6 {
            slots.append(
                try await fixture.store.reserveTurnkeyCall(tenant: tenant, perSecond: 10, burst: 2, nowMicros: now))
        }
        #expect(slots.map { $0 - now } == [0, 0, 100_000, 200_000, 300_000, 400_000])
        // After a quiet spell the burst is back, and no more than it.
        let later = now + 10_000_000
        let again = try await (0..<3).asyncMap { _ in
            try await fixture.store.reserveTurnkeyCall(tenant: tenant, perSecond: 10, burst: 2, nowMicros: later)
        }
        #expect(again.map { $0 - later } == [0, 0, 100_000])
        let bad = await #expect(throws: ConsoleError.self) {
            try await fixture.store.reserveTurnkeyCall(tenant: tenant, perSecond: 0, burst: 1, nowMicros: now)
        }
        #expect(bad?.kind == .usage)
    }

    /// Two orphans queued, and a worker whose every read of the queuer's session throws `error`.
    func twoQueued(_ backend: TestBackend, sessionFails error: ConsoleError) async throws -> (
        CleanupFixture, CleanupService, CleanupQueueWorker
    ) {
        let fixture = try await CleanupFixture(orphanCount: 2, backend: backend)
        let service = fixture.service(budget: 1000)
        _ = try await queueEverything(fixture, service)
        let worker = CleanupQueueWorker(service: service, name: "w") { _ throws(ConsoleError) in throw error }
        return (fixture, service, worker)
    }

    @Test(
        "--queue needs no Turnkey call until a worker runs, and a refused queuer's items leave the queue",
        arguments: TestBackend.available)
    func aQueuerWithoutTheRoleLeavesItemsQueued(backend: TestBackend) async throws {
        let (fixture, service, refusing) = try await twoQueued(
            backend, sessionFails: ConsoleError(.permissionDenied, code: "permission_denied", "root lost the role"))
        defer { Task { await fixture.stop() } }
        #expect(try await refusing.drain(tenant: fixture.session.tenantName).isEmpty)
        #expect(await fixture.sandbox.deleteBodies.isEmpty)
        let pending = try await fixture.store.cleanupItems(tenant: fixture.session.tenantName, states: [.pending])
        #expect(pending.count == 2)
        #expect(try await worker(fixture, service, "w").drain(tenant: fixture.session.tenantName).isEmpty)
        #expect(await fixture.sandbox.deleteBodies.isEmpty)
    }

    /// A store failure while reading the queuer's session is not a refusal: the drain stops
    /// with it and the items stay queued for the next drain.
    @Test("a store failure reading the queuer's session leaves the items queued", arguments: TestBackend.available)
    func aStoreFailureIsNotARefusal(backend: TestBackend) async throws {
        let (fixture, service, failing) = try await twoQueued(
            backend, sessionFails: ConsoleError(.remote, code: "database_unavailable", "PostgreSQL went away"))
        defer { Task { await fixture.stop() } }
        let error = await #expect(throws: ConsoleError.self) {
            try await failing.drain(tenant: fixture.session.tenantName)
        }
        #expect(error?.code == "database_unavailable")
        #expect(await fixture.sandbox.deleteBodies.isEmpty)
        // The failed worker's claims lapse with its lease; another worker then deletes them.
        fixture.time.advance(byMillis: failing.leaseMillis + 1)
        let done = try await worker(fixture, service, "w2").drain(tenant: fixture.session.tenantName)
        #expect(done.count == 2 && done.allSatisfy { $0.outcome == "deleted" }, "\(done)")
    }

    /// Drains `orphanCount` queued items with a worker whose queuer is revoked once the access
    /// version has been read `unchangedReads` times: the first session read succeeds, every
    /// later one is refused. Returns the drain's outcomes and what is left pending.
    func drainRevoked(orphanCount: Int, unchangedReads: Int, backend: TestBackend) async throws -> (
        fixture: CleanupFixture, done: [RunReport.Item], left: [CleanupItemRecord]
    ) {
        let fixture = try await CleanupFixture(orphanCount: orphanCount, backend: backend)
        let tenant = fixture.session.tenantName
        let service = fixture.service(budget: 1000)
        _ = try await queueEverything(fixture, service)
        let session = fixture.session
        let reads = Counter()
        var drainer = CleanupQueueWorker(service: service, name: "w") { queuedBy throws(ConsoleError) in
            guard reads.next() == 1 else {
                throw ConsoleError(.permissionDenied, code: "permission_denied", "\(queuedBy) was revoked")
            }
            return session
        }
        let versions = Counter()
        drainer.accessVersion = { versions.next() <= unchangedReads ? 1 : 2 }
        let done = try await drainer.drain(tenant: tenant)
        let left = try await fixture.store.cleanupItems(tenant: tenant, states: [.pending])
        #expect(try await worker(fixture, service, "w2").drain(tenant: tenant).isEmpty, "off the queue")
        return (fixture, done, left)
    }

    /// Revoked mid-drain: the access version moves after the first item (its two reads: taken,
    /// then confirmed after its rate slot), the queuer's session is read again and refused, and
    /// the rest of the queuer's items leave the queue undeleted.
    @Test("a queuer revoked while a worker drains stops at the next item", arguments: TestBackend.available)
    func aRevokedQueuerStopsAtTheNextItem(backend: TestBackend) async throws {
        let (fixture, done, left) = try await drainRevoked(orphanCount: 4, unchangedReads: 2, backend: backend)
        defer { Task { await fixture.stop() } }
        #expect(done.count == 1 && done.first?.outcome == "deleted", "\(done)")
        #expect(await fixture.sandbox.deleteBodies.count == 1)
        #expect(left.count == 3)
    }

    /// Revoked while an item waits for its rate slot: the right, read when the item was taken,
    /// is confirmed again after the slot (the access version's second read moves), so nothing
    /// is sent; the item keeps its journaled body and leaves the queue with the queuer's others.
    @Test("a queuer revoked while an item waits for its rate slot has nothing sent", arguments: TestBackend.available)
    func aRevokedQueuerHasNothingSentAfterTheSlot(backend: TestBackend) async throws {
        let (fixture, done, left) = try await drainRevoked(orphanCount: 3, unchangedReads: 1, backend: backend)
        defer { Task { await fixture.stop() } }
        #expect(done.isEmpty, "\(done)")
        #expect(await fixture.sandbox.deleteBodies.isEmpty)
        #expect(left.count == 3)
        let first = try #require(left.first { $0.body != nil })
        #expect(first.lastError?.hasPrefix("not sent: root was revoked") == true, "\(first)")
    }

    /// A worker re-checks an item's proof right before deleting it. Queued on a live tenant's
    /// fresh snapshot, then left until that snapshot is older than the tenant's maximum age: the
    /// worker deletes nothing and takes the items off the queue, and a fresh snapshot alone does
    /// not put them back; the next queueing run does.
    @Test(
        "a queued item whose proof lapsed is not deleted and leaves the queue; one found referenced too",
        arguments: TestBackend.available)
    func aWorkerRechecksTheProof(backend: TestBackend) async throws {
        let fixture = try await CleanupFixture(orphanCount: 3, live: true, backend: backend)
        defer { Task { await fixture.stop() } }
        let tenant = fixture.session.tenantName
        let service = fixture.service(budget: 1000)
        let snapshot = {
            let at = fixture.time.now / 1000
            try await fixture.store.recordSnapshot(
                tenant: tenant, SnapshotRecord(snapshotAt: at, complete: true, importedAt: at, backups: 12), audit: nil)
        }
        _ = try await service.scan(session: fixture.session, graceSeconds: 0)
        try await snapshot()
        #expect(try await queueEverything(fixture, service).items.count == 3)
        fixture.time.advance(byMillis: 25 * 3600 * 1000)
        let lapsed = try await worker(fixture, service, "w").drain(tenant: tenant)
        #expect(lapsed.map(\.outcome) == ["skipped", "skipped", "skipped"])
        #expect(lapsed.allSatisfy { $0.error?.hasSuffix("waiting for snapshot") == true })
        #expect(await fixture.sandbox.deleteBodies.isEmpty)
        try await snapshot()
        #expect(try await worker(fixture, service, "w").drain(tenant: tenant).isEmpty)
        #expect(try await queueEverything(fixture, service).items.count == 3)
        // One is found referenced (a worker's or a scan's skip) and unreferenced again: it left the queue.
        var first = try #require(try await fixture.store.cleanupItem(tenant: tenant, subOrgId: fixture.orphans[0]))
        first.state = .skipped
        first = try await fixture.store.updateCleanupItem(tenant: tenant, first, audit: nil)
        first.state = .pending
        _ = try await fixture.store.updateCleanupItem(tenant: tenant, first, audit: nil)
        let done = try await worker(fixture, service, "w").drain(tenant: tenant)
        #expect(
            done.map(\.subOrgId) == Array(fixture.orphans.dropFirst()) && done.allSatisfy { $0.outcome == "deleted" })
        #expect(try await fixture.listed() == Set(fixture.referenced + [fixture.orphans[0]]))
    }
}

extension Sequence {
    func asyncMap<T>(_ transform: (Element) async throws -> T) async rethrows -> [T] {
        var result: [T] = []
        for element in self { result.append(try await transform(element)) }
        return result
    }
}
