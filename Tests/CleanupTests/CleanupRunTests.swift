import Access
import BackupModel
import BackupctlTestSupport
import ConsoleStore
import Foundation
import SQLiteStore
import Testing
import Turnkey

@testable import Cleanup
@testable import TurnkeySandbox

@Suite("cleanup over loopback HTTP against the sandbox server", .timeLimit(.minutes(10)))
struct CleanupRunTests {
    @Test(
        "30% 5xx and 10% rate-limit 429: every eligible orphan deleted, bodies identical, references kept",
        arguments: TestBackend.available)
    func flakyTurnkey(backend: TestBackend) async throws {
        let fixture = try await CleanupFixture(
            orphanCount: 20, faults: SandboxFaults(serverErrorRate: 0.3, rateLimitErrorRate: 0.1), attempts: 6,
            backend: backend)
        defer { Task { await fixture.stop() } }
        let service = fixture.service(budget: 1000)
        var deleted: Set<String> = []
        for _ in 0..<5 {  // bounded: retries are per call, a later run finishes the few that fail
            let report = try await service.run(
                session: fixture.session, options: CleanupRunOptions(execute: true, concurrency: 4, graceSeconds: 0))
            deleted.formUnion(
                report.items.filter { $0.outcome == "deleted" || $0.outcome == "alreadyGone" }.map(\.subOrgId))
            if deleted.count == fixture.orphans.count { break }
        }
        #expect(deleted == Set(fixture.orphans))
        let left = try await fixture.listed()
        #expect(left == Set(fixture.referenced))
        let bodies = await fixture.sandbox.deleteBodies
        for id in fixture.orphans {
            let sent = bodies[id] ?? []
            #expect(!sent.isEmpty)
            #expect(Set(sent).count == 1, "sub-org \(id) got \(Set(sent).count) different bodies")
        }
        for id in fixture.referenced { #expect(bodies[id] == nil) }
        // Every back-off respects the policy: within [0, min(cap, base·2^n)] (no Retry-After here).
        #expect(fixture.sleeps.all.allSatisfy { $0 >= 0 && $0 <= 2000 })
        #expect(!fixture.sleeps.all.isEmpty)
        let audit = try await fixture.store.latestAuditEntries(tenant: fixture.session.tenantName, limit: 1000)
        #expect(audit.filter { $0.action == "cleanup.delete" }.count == fixture.orphans.count)
    }

    @Test(
        "a 100% 503 outage longer than the retry budget stops with exit-2 error; the next run finishes",
        arguments: TestBackend.available)
    func outage(backend: TestBackend) async throws {
        let fixture = try await CleanupFixture(
            orphanCount: 30, faults: SandboxFaults(serverErrorRate: 1), backend: backend)
        defer { Task { await fixture.stop() } }
        // The scan itself must get through: the outage starts after listing.
        let first = fixture.service(
            transport: HookTransport(inner: HTTPClientTransport()) { request throws(TurnkeyError) in
                if request.path == TurnkeyWire.deleteSubOrganizationPath { return }
            }, budget: 5)
        await fixture.sandbox.setFaults(.none)
        let outageTransport = OutageSwitch()
        let during = fixture.service(
            transport: HookTransport(inner: HTTPClientTransport()) { request throws(TurnkeyError) in
                if request.path == TurnkeyWire.deleteSubOrganizationPath, outageTransport.on {
                    throw TurnkeyError(.serverError, status: 503, message: "outage")
                }
            }, budget: 5)
        _ = first
        outageTransport.on = true
        do {
            _ = try await during.run(
                session: fixture.session, options: CleanupRunOptions(execute: true, concurrency: 2, graceSeconds: 0))
            Issue.record("the run should have stopped")
        } catch {
            #expect(error.kind == .remote)
            #expect(error.code == "turnkey_unavailable")
            #expect(error.message.contains("retry budget"))
        }
        outageTransport.on = false
        let report = try await fixture.service().run(
            session: fixture.session, options: CleanupRunOptions(execute: true, concurrency: 4, graceSeconds: 0))
        #expect(report.deleted + report.alreadyGone == fixture.orphans.count)
        #expect(try await fixture.listed() == Set(fixture.referenced))
    }

    /// The real transport, which runs `body` once, before the first deletion request of `target`
    /// (of any sub-org when `nil`) is sent.
    static func onFirstDeletion(of target: String?, _ body: @escaping @Sendable () async throws -> Void)
        -> HookTransport
    {
        let done = OutageSwitch()
        return HookTransport(inner: HTTPClientTransport()) { request throws(TurnkeyError) in
            guard request.path == TurnkeyWire.deleteSubOrganizationPath,
                target.map({ String(decoding: request.body, as: UTF8.self).contains($0) }) ?? true, !done.on
            else { return }
            done.on = true
            do {
                try await body()
            } catch {
                throw TurnkeyError(.badRequest, message: "fixture failed: \(error)")
            }
        }
    }

    @Test("a backup imported mid-run that references a pending sub-org survives", arguments: TestBackend.available)
    func importMidRun(backend: TestBackend) async throws {
        let fixture = try await CleanupFixture(orphanCount: 5, backend: backend)
        defer { Task { await fixture.stop() } }
        let target = try #require(fixture.orphans.last)
        let store = fixture.store
        let tenant = fixture.session.tenantName
        let service = fixture.service(
            transport: Self.onFirstDeletion(of: nil) {
                try await CleanupRunTests.reference(target, store: store, tenant: tenant)
            })
        let report = try await service.run(
            session: fixture.session, options: CleanupRunOptions(execute: true, concurrency: 1, graceSeconds: 0))
        #expect(report.items.first { $0.subOrgId == target }?.outcome == "skipped")
        #expect(report.deleted == fixture.orphans.count - 1)
        #expect(try await fixture.listed().contains(target))
        #expect(await fixture.sandbox.deleteBodies[target] == nil)
    }

    /// A backup that references the sub-org is imported while its deletion waits to be retried
    /// (a flaky Turnkey: a 500, then the back-off): the retry re-reads the store right before it
    /// is sent, so nothing is sent and the item is `skipped`, referenced.
    @Test("a backup imported while a deletion waits for its retry keeps the sub-org", arguments: TestBackend.available)
    func importedDuringTheRetryWait(backend: TestBackend) async throws {
        let fixture = try await CleanupFixture(orphanCount: 2, backend: backend)
        defer { Task { await fixture.stop() } }
        let target = try #require(fixture.orphans.first)
        let store = fixture.store
        let tenant = fixture.session.tenantName
        let failed = OutageSwitch()
        let service = fixture.service(
            transport: HookTransport(inner: HTTPClientTransport()) { request throws(TurnkeyError) in
                guard request.path == TurnkeyWire.deleteSubOrganizationPath,
                    String(decoding: request.body, as: UTF8.self).contains(target), !failed.on
                else { return }
                failed.on = true
                do {
                    try await CleanupRunTests.reference(target, store: store, tenant: tenant)
                } catch {
                    throw TurnkeyError(.badRequest, message: "fixture failed: \(error)")
                }
                throw TurnkeyError(.serverError, status: 500, message: "flaky")
            }, budget: 1000)
        let report = try await service.run(
            session: fixture.session, options: CleanupRunOptions(execute: true, concurrency: 1, graceSeconds: 0))
        let item = try #require(report.items.first { $0.subOrgId == target })
        #expect(item.outcome == "skipped" && item.error?.hasPrefix("referenced by") == true, "\(item)")
        #expect(await fixture.sandbox.deleteBodies[target] == nil)
        #expect(try await fixture.listed().contains(target))
        #expect(report.deleted == 1)
    }

    /// The first attempt's deletion goes through but its answer is lost, and a backup that
    /// references the sub-org is imported before the retry. The retry is not sent (referenced),
    /// and the item is not recorded "not deleted": Turnkey says it is gone, so it is recorded
    /// `alreadyGone`, audited with the backup that lost its key.
    @Test(
        "a deletion that went through before a referencing import is recorded, not skipped",
        arguments: TestBackend.available)
    func aDeletionThatWentThroughBeforeAnImportIsRecorded(backend: TestBackend) async throws {
        let fixture = try await CleanupFixture(orphanCount: 2, backend: backend)
        defer { Task { await fixture.stop() } }
        let target = try #require(fixture.orphans.first)
        let store = fixture.store
        let tenant = fixture.session.tenantName
        let lost = OutageSwitch()
        let service = fixture.service(
            transport: HookTransport(
                inner: HTTPClientTransport(), hook: { _ throws(TurnkeyError) in },
                after: { request throws(TurnkeyError) in
                    guard request.path == TurnkeyWire.deleteSubOrganizationPath,
                        String(decoding: request.body, as: UTF8.self).contains(target), !lost.on
                    else { return }
                    lost.on = true
                    do {
                        try await CleanupRunTests.reference(target, store: store, tenant: tenant)
                    } catch {
                        throw TurnkeyError(.badRequest, message: "fixture failed: \(error)")
                    }
                    throw TurnkeyError(.transport, message: "the answer was lost")
                }), budget: 1000)
        let report = try await service.run(
            session: fixture.session, options: CleanupRunOptions(execute: true, concurrency: 1, graceSeconds: 0))
        let item = try #require(report.items.first { $0.subOrgId == target })
        #expect(item.outcome == "alreadyGone", "\(item)")
        #expect(await fixture.sandbox.deleteBodies[target]?.count == 1, "the retry was not sent")
        let audit = try await store.latestAuditEntries(tenant: tenant, limit: 1000)
        #expect(
            audit.contains {
                $0.target == target && $0.action == "cleanup.already_gone" && $0.details["referencedBy"] != nil
            })
    }

    /// A live tenant's snapshot ages past the tenant's maximum during a long run: the proof is
    /// judged again at the clock's time right before each send, so the items after that moment
    /// are not deleted on the word of a snapshot that is now too old.
    @Test("a snapshot that goes stale during a run stops proving the items after it", arguments: TestBackend.available)
    func aSnapshotThatGoesStaleMidRun(backend: TestBackend) async throws {
        let fixture = try await CleanupFixture(orphanCount: 3, live: true, backend: backend)
        defer { Task { await fixture.stop() } }
        let tenant = fixture.session.tenantName
        _ = try await fixture.service().scan(session: fixture.session, graceSeconds: 0)
        let at = fixture.time.now / 1000
        try await fixture.store.recordSnapshot(
            tenant: tenant, SnapshotRecord(snapshotAt: at, complete: true, importedAt: at, backups: 12), audit: nil)
        let time = fixture.time
        let service = fixture.service(
            transport: Self.onFirstDeletion(of: nil) { time.advance(byMillis: 25 * 3600 * 1000) })
        let report = try await service.run(
            session: fixture.session, options: CleanupRunOptions(execute: true, concurrency: 1, graceSeconds: 0))
        #expect(report.deleted == 1, "\(report.items)")
        #expect(
            report.items.filter { $0.error?.hasSuffix("waiting for snapshot") == true }.count == 2, "\(report.items)")
        #expect(await fixture.sandbox.deleteBodies.count == 1)
    }

    /// A stop ends the run's waits at once (a rate slot, a back-off, a Retry-After of an hour):
    /// the process does not linger after SIGTERM with nothing left to send.
    @Test func aStopEndsAWaitAtOnce() async throws {
        let hour = TurnkeyTiming(clock: .system) { _ in try await Task.sleep(for: .seconds(3600)) }
        await CleanupService.wait(3_600_000, timing: hour, unless: { true })
        // A stopped run's client ends every wait with a cancellation (its call stops, unsent).
        let fixture = try await CleanupFixture(orphanCount: 1)
        defer { Task { await fixture.stop() } }
        let client = fixture.service().client(fixture.session, stop: { true })
        await #expect(throws: CancellationError.self) { try await client.timing.sleep(3_600_000) }
    }

    /// A scan runs while a deletion is in flight: Turnkey has deleted the sub-org, the run has
    /// not yet recorded it (its answer was lost and it retries). The scan leaves the journaled
    /// item to its deleter instead of recording it `already_gone`, so the run records the
    /// outcome and its audit entry, with the signer.
    @Test("a scan during a deletion in flight leaves the item to its deleter", arguments: TestBackend.available)
    func aScanLeavesAnInFlightDeletionToItsDeleter(backend: TestBackend) async throws {
        let fixture = try await CleanupFixture(orphanCount: 2, backend: backend)
        defer { Task { await fixture.stop() } }
        let target = try #require(fixture.orphans.first)
        let session = fixture.session
        let scanned = OutageSwitch()
        let scanner = fixture.service()
        let service = fixture.service(
            transport: HookTransport(
                inner: HTTPClientTransport(), hook: { _ throws(TurnkeyError) in },
                after: { request throws(TurnkeyError) in
                    guard request.path == TurnkeyWire.deleteSubOrganizationPath,
                        String(decoding: request.body, as: UTF8.self).contains(target), !scanned.on
                    else { return }
                    scanned.on = true
                    do {
                        let scan = try await scanner.scan(session: session, graceSeconds: 0)
                        #expect(scan.vanished == 0, "\(scan)")
                    } catch {
                        throw TurnkeyError(.badRequest, message: "fixture failed: \(error)")
                    }
                    throw TurnkeyError(.transport, message: "the answer was lost")
                }), budget: 1000)
        let report = try await service.run(
            session: session, options: CleanupRunOptions(execute: true, concurrency: 1, graceSeconds: 0))
        #expect(scanned.on)
        let item = try #require(report.items.first { $0.subOrgId == target })
        #expect(item.outcome == "deleted" || item.outcome == "alreadyGone", "\(item)")
        let audit = try await fixture.store.latestAuditEntries(tenant: session.tenantName, limit: 1000)
        #expect(!audit.contains { $0.target == target && $0.details["via"] == "scan" })
        #expect(audit.contains { $0.target == target && $0.details["signer"] == "cleanup_key" })
    }

    /// Stopped (SIGTERM) while a re-queued pass waits out Turnkey's Retry-After: the wait ends,
    /// the pass is not started, nothing more is sent, and the report says it was interrupted.
    @Test("a stop during a pass's Retry-After wait starts nothing more", arguments: TestBackend.available)
    func aStopDuringAPassWaitStartsNothingMore(backend: TestBackend) async throws {
        let fixture = try await CleanupFixture(orphanCount: 2, backend: backend)
        defer { Task { await fixture.stop() } }
        let target = try #require(fixture.orphans.first)
        let stop = OutageSwitch()
        let service = fixture.service(
            transport: HookTransport(inner: HTTPClientTransport()) { request throws(TurnkeyError) in
                guard request.path == TurnkeyWire.deleteSubOrganizationPath,
                    String(decoding: request.body, as: UTF8.self).contains(target)
                else { return }
                // The stop arrives with the 429: its Retry-After outlasts the client's own wait.
                stop.on = true
                throw TurnkeyError(
                    .rateLimited, status: 429, turnkeyErrorCode: "RATE_LIMIT_EXCEEDED", message: "slow down",
                    retryAfterMillis: 90_000)
            }, budget: 1000)
        let report = try await service.run(
            session: fixture.session, options: CleanupRunOptions(execute: true, concurrency: 1, graceSeconds: 0),
            shouldStop: { stop.on })
        #expect(report.stoppedReason?.hasPrefix("interrupted") == true, "\(report)")
        #expect(!report.items.contains { $0.subOrgId == target }, "\(report.items)")
        #expect(await fixture.sandbox.deleteBodies[target] == nil)
        #expect(
            try await fixture.store.cleanupItem(tenant: fixture.session.tenantName, subOrgId: target)?.state == .pending
        )
    }

    /// A cleanup worker finishes an item while a run is sending it: the run's write of that item
    /// is stale, so it reports it `skipped` (the worker's outcome stands) and goes on with the
    /// others, instead of failing the whole run with `stale_journal_item`.
    @Test("an item a worker finished mid-run is skipped and the run goes on", arguments: TestBackend.available)
    func aWorkerFinishesAnItemMidRun(backend: TestBackend) async throws {
        let fixture = try await CleanupFixture(orphanCount: 4, backend: backend)
        defer { Task { await fixture.stop() } }
        let target = try #require(fixture.orphans.first)
        let store = fixture.store
        let tenant = fixture.session.tenantName
        let service = fixture.service(
            transport: Self.onFirstDeletion(of: target) {
                // The worker's write: the same item, recorded deleted.
                guard var item = try await store.cleanupItem(tenant: tenant, subOrgId: target) else { return }
                item.state = .deleted
                _ = try await store.updateCleanupItem(tenant: tenant, item, audit: nil)
            })
        let report = try await service.run(
            session: fixture.session, options: CleanupRunOptions(execute: true, concurrency: 1, graceSeconds: 0))
        let item = try #require(report.items.first { $0.subOrgId == target })
        #expect(item.outcome == "skipped" && item.error?.contains("another writer") == true, "\(item)")
        #expect(report.deleted == fixture.orphans.count - 1)
        #expect(try await store.cleanupItem(tenant: tenant, subOrgId: target)?.state == .deleted)
    }

    /// The operator is revoked during a long run: the second deletion's confirmation, made
    /// after its rate slot, is refused, so it is not sent, no new item starts, and the run ends
    /// with the refusal (exit 77) after recording what it did.
    @Test(
        "an operator revoked mid-run: the next deletion is not sent and the run stops", arguments: TestBackend.available
    )
    func revokedMidRun(backend: TestBackend) async throws {
        let fixture = try await CleanupFixture(orphanCount: 4, backend: backend)
        defer { Task { await fixture.stop() } }
        let tenant = fixture.session.tenantName
        let service = fixture.service(budget: 1000)
        let confirmations = Counter()
        let error = await #expect(throws: ConsoleError.self) {
            try await service.run(
                session: fixture.session, options: CleanupRunOptions(execute: true, concurrency: 1, graceSeconds: 0),
                confirm: { () throws(ConsoleError) in
                    guard confirmations.next() == 1 else {
                        throw ConsoleError(.permissionDenied, code: "permission_denied", "root was revoked.")
                    }
                })
        }
        #expect(error?.kind == .permissionDenied)
        #expect(error?.message.contains("1 deleted") == true, "\(String(describing: error))")
        #expect(await fixture.sandbox.deleteBodies.count == 1)
        #expect(confirmations.value == 2, "no item started after the refusal")
        let deleted = try await fixture.store.cleanupItems(tenant: tenant, states: [.deleted])
        #expect(deleted.count == 1)
        let withdrawn = try await fixture.store.cleanupItems(tenant: tenant, states: [.pending]).filter {
            $0.body != nil
        }
        #expect(withdrawn.count == 1 && withdrawn.first?.lastError?.hasPrefix("not sent: root was revoked") == true)
    }

    /// A rate-limit 429 whose `Retry-After` (90 s) is longer than the client waits in place
    /// (60 s) fails the attempt at once; the run's next pass of that sub-org waits it out
    /// instead of starting at once and spending its passes in seconds, and the run finishes.
    @Test("a Retry-After past the client's own wait is waited out by the next pass", arguments: TestBackend.available)
    func retryAfterBetweenPasses(backend: TestBackend) async throws {
        let fixture = try await CleanupFixture(orphanCount: 2, backend: backend)
        defer { Task { await fixture.stop() } }
        let target = try #require(fixture.orphans.first)
        let limited = OutageSwitch()
        let service = fixture.service(
            transport: HookTransport(inner: HTTPClientTransport()) { request throws(TurnkeyError) in
                guard request.path == TurnkeyWire.deleteSubOrganizationPath,
                    String(decoding: request.body, as: UTF8.self).contains(target), !limited.on
                else { return }
                limited.on = true
                throw TurnkeyError(
                    .rateLimited, status: 429, turnkeyErrorCode: "RATE_LIMIT_EXCEEDED", message: "slow down",
                    retryAfterMillis: 90_000)
            })
        let report = try await service.run(
            session: fixture.session, options: CleanupRunOptions(execute: true, graceSeconds: 0))
        #expect(report.deleted == 2 && report.failed == 0, "\(report.items)")
        #expect(fixture.sleeps.all.contains { $0 >= 90_000 }, "\(fixture.sleeps.all)")
    }

    /// Adds a TURNKEY key referencing `subOrgId` to an existing backup and rewrites it.
    static func reference(_ subOrgId: String, store: any ConsoleStore, tenant: TenantName) async throws {
        var first: BackupRecord?
        try await store.forEachBackup(tenant: tenant, batchSize: 1) { page throws(ConsoleError) in
            if first == nil { first = page.first }
        }
        var record = try #require(first)
        record.metadata.keys.append(
            .turnkey(
                TurnkeyKey(
                    encryptedKey: "00", turnkeyAccountId: subOrgId, turnkeyUserId: UUID().uuidString.lowercased(),
                    turnkeyPrivateKeyId: UUID().uuidString.lowercased())))
        let rows = try await store.lookupRows(tenant: tenant, backupId: record.backupId)
        try await store.writeBackup(
            tenant: tenant, BackupWrite(record: record, blob: nil, lookupRows: rows),
            audit: AuditDraft(operatorName: "root", tenant: tenant.rawValue, action: "test.import"))
    }
}

final class OutageSwitch: @unchecked Sendable {
    private let lock = NSLock()
    private var value = false
    var on: Bool {
        get { lock.withLock { value } }
        set { lock.withLock { value = newValue } }
    }
}
