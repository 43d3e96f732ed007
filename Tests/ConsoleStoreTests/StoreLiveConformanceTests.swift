import BackupModel
import BackupctlTestSupport
import ConsoleStore
import Foundation
import Testing

/// The store conformance suite, backup and live-tenant part: backups and the index, snapshots,
/// retirement, the journal's compare-and-set, the reset ledger, the sandbox's own state, the run
/// lease and the queue, each with its errors and audit entries, once per backend with the same
/// expectations.
@Suite struct StoreLiveConformanceTests {
    static let sandbox = valid({ () throws(ConsoleError) in try TenantName("sandbox") })
    static let audit = AuditDraft(operatorName: "test", tenant: "sandbox", action: "test.write")

    /// The tenant and three synthetic backups.
    static func seed(_ store: any ConsoleStore) async throws -> [BackupWrite] {
        let writes = try SyntheticBackups.writes(seed: 31, indices: 0..<3, now: 1_750_000_000)
        try await store.createTenant(TenantRecord(name: sandbox, isSandbox: true, createdAt: 1), audit: audit)
        try await store.writeBackups(tenant: sandbox, writes, audit: audit)
        return writes
    }

    static func actions(_ store: any ConsoleStore) async throws -> [String] {
        try await store.auditEntries(tenant: nil, afterSeq: 0, limit: 1000).map(\.action)
    }

    @Test(arguments: TestBackend.available) func backupsIndexAndReferencesReadBack(backend: TestBackend) async throws {
        try await backend.withStore { store in
            let writes = try await Self.seed(store)
            let t = Self.sandbox
            let ids = writes.map(\.record.backupId).sorted()
            #expect(try await store.backupCount(tenant: t) == 3)
            #expect(try await store.backupIds(tenant: t) == ids)
            #expect(try await store.backupIds(tenant: t, prefix: String(ids[1].dropLast(6)), limit: 5) == [ids[1]])
            #expect(try await store.backups(tenant: t, after: ids[0], limit: 1).map(\.backupId) == [ids[1]])
            let first = writes[0]
            let id = first.record.backupId
            #expect(try await store.backup(tenant: t, id: id)?.metadata == first.record.metadata)
            #expect(try await store.backupExists(tenant: t, id: id))
            #expect(try await !store.backupExists(tenant: t, id: "nope"))
            #expect(try await store.sealedBlob(tenant: t, backupId: id) == first.blob)
            let rows = first.lookupRows.sorted { $0.pk < $1.pk }
            #expect(try await store.lookupRows(tenant: t, backupId: id) == rows)
            #expect(try await store.lookup(tenant: t, pk: rows[0].pk) == rows[0])
            #expect(try await store.lookup(tenant: t, pk: "MAIN#none") == nil)
            let resolution = try #require(try await store.resolveLookup(tenant: t, pk: rows[0].pk))
            #expect(resolution.backupId == id && resolution.backupExists && resolution.factorId != nil)
            let all = writes.flatMap(\.lookupRows).sorted { $0.pk < $1.pk }
            #expect(try await store.lookupRows(tenant: t, after: nil, limit: 1000) == all)
            #expect(try await store.lookupRows(tenant: t, after: all[0].pk, limit: 1) == [all[1]])
            #expect(try await store.backupSummaries(tenant: t, after: nil, limit: 10).map(\.backupId) == ids)
            let health = try await store.backupHealth(tenant: t, after: nil, limit: 10)
            #expect(health.map(\.summary.backupId) == ids)
            #expect(health.allSatisfy { $0.unauthorizedKeys.isEmpty && $0.unindexedKeys.isEmpty })

            let subOrgs = Set(writes.flatMap(\.record.metadata.turnkeySubOrgIds))
            let firstSubOrg = try #require(first.record.metadata.turnkeySubOrgIds.first)
            #expect(try await store.subOrgReference(tenant: t, subOrgId: firstSubOrg) == id)
            #expect(try await Set(store.referencedSubOrgs(tenant: t, after: nil, limit: 100)) == subOrgs)
            #expect(
                try await store.referencedSubOrgs(tenant: t, among: [firstSubOrg, "nobody"]) == [firstSubOrg])

            // Drift: an index row its metadata does not imply, and a key moved to another backup.
            #expect(
                try await store.writeLookupRows(
                    tenant: t, [LookupRow(pk: "MAIN#stray", backupId: id), rows[0]], audit: Self.audit) == 1)
            let drifted = try await store.backupHealth(tenant: t, after: nil, limit: 10)
            #expect(drifted.first { $0.summary.backupId == id }?.unauthorizedKeys == ["MAIN#stray"])
            let strayResolution = try #require(try await store.resolveLookup(tenant: t, pk: "MAIN#stray"))
            #expect(strayResolution.factorId == nil && strayResolution.backupExists)

            // A factor claimed by another backup is a conflict, and nothing is written or audited.
            let before = try await Self.actions(store)
            var thief = writes[1]
            thief.lookupRows.append(LookupRow(pk: rows[0].pk, backupId: thief.record.backupId))
            let error = try await #require(throws: ConsoleError.self) {
                try await store.writeBackup(tenant: t, thief, audit: Self.audit)
            }
            #expect(error.code == "factor_conflict" && error.kind == .conflict)
            #expect(try await Self.actions(store) == before)
            #expect(try await store.lookup(tenant: t, pk: rows[0].pk)?.backupId == id)

            let unknown = try await #require(throws: ConsoleError.self) {
                try await store.writeBackups(tenant: try TenantName("ghost"), [writes[0]], audit: Self.audit)
            }
            #expect(unknown.code == "not_found")
        }
    }

    @Test(arguments: TestBackend.available) func snapshotsRetirementAndTheBackupServiceURL(backend: TestBackend)
        async throws
    {
        try await backend.withStore { store in
            let writes = try await Self.seed(store)
            let t = Self.sandbox
            #expect(try await store.newestSnapshot(tenant: t) == nil)
            let first = try await store.recordSnapshot(
                tenant: t, SnapshotRecord(snapshotAt: 100, complete: true, importedAt: 5, backups: 3), audit: nil)
            let second = try await store.recordSnapshot(
                tenant: t, SnapshotRecord(snapshotAt: 200, complete: false, importedAt: 6, backups: 2),
                audit: Self.audit)
            #expect(first.seq == 1 && second.seq == 2)
            #expect(try await store.newestSnapshot(tenant: t) == second)
            #expect(try await store.newestCompleteSnapshot(tenant: t) == first)
            let missing = try await #require(throws: ConsoleError.self) {
                try await store.recordSnapshot(
                    tenant: try TenantName("ghost"),
                    SnapshotRecord(snapshotAt: 1, complete: true, importedAt: 1, backups: 0),
                    audit: nil)
            }
            #expect(missing.code == "not_found")

            let retired = writes[1]
            let wipes = try await store.retireBackups(
                tenant: t, ids: [retired.record.backupId, "absent"], now: 300, audit: Self.audit)
            #expect(wipes.map(\.backupId) == [retired.record.backupId])
            #expect(wipes[0].lookupRowsRemoved == retired.lookupRows.count)
            #expect(Set(wipes[0].turnkeySubOrgIds) == Set(retired.record.metadata.turnkeySubOrgIds))
            #expect(try await !store.backupExists(tenant: t, id: retired.record.backupId))
            #expect(try await store.lookupRows(tenant: t, backupId: retired.record.backupId).isEmpty)
            let queued = try await store.cleanupItems(tenant: t, states: [.pending])
            #expect(Set(queued.map(\.subOrgId)) == Set(retired.record.metadata.turnkeySubOrgIds))
            #expect(queued.allSatisfy { $0.reason == "retired" && $0.lastBackupId == retired.record.backupId })

            try await store.setBackupServiceURL(tenant: t, url: "http://127.0.0.1:9", audit: Self.audit)
            #expect(try await store.tenant(t)?.backupServiceURL == "http://127.0.0.1:9")
            let ghost = try await #require(throws: ConsoleError.self) {
                try await store.setBackupServiceURL(tenant: try TenantName("ghost"), url: nil, audit: Self.audit)
            }
            #expect(ghost.code == "not_found" && ghost.message == "Tenant ghost does not exist.")
            #expect(try await Self.actions(store).suffix(3) == ["test.write", "test.write", "test.write"])
        }
    }

    @Test(arguments: TestBackend.available) func theJournalIsWrittenByCompareAndSetOnly(backend: TestBackend)
        async throws
    {
        try await backend.withStore { store in
            _ = try await Self.seed(store)
            let t = Self.sandbox
            let items = ["s1", "s2"].map {
                CleanupItemRecord(subOrgId: $0, reason: "unreferenced", firstSeenAt: 50, updatedAt: 50)
            }
            #expect(try await store.enqueueCleanup(tenant: t, items, audit: Self.audit) == 2)
            // An earlier sighting wins; a known id is not new.
            let earlier = CleanupItemRecord(subOrgId: "s2", reason: "service_log", firstSeenAt: 40, updatedAt: 60)
            #expect(try await store.enqueueCleanup(tenant: t, [earlier], audit: nil) == 0)
            let s2 = try #require(try await store.cleanupItem(tenant: t, subOrgId: "s2"))
            #expect(s2.reason == "unreferenced" && s2.firstSeenAt == 40 && s2.version == 1)
            // A reset is fresh evidence (referenced by b until then): its reason and time win.
            let again = CleanupItemRecord(
                subOrgId: "s1", reason: "reset", firstSeenAt: 60, updatedAt: 60, lastBackupId: "b")
            #expect(try await store.enqueueCleanup(tenant: t, [again], audit: nil) == 0)
            var item = try #require(try await store.cleanupItem(tenant: t, subOrgId: "s1"))
            #expect(item.reason == "reset" && item.firstSeenAt == 60 && item.lastBackupId == "b" && item.version == 1)
            // The same sighting again changes nothing, not even the version.
            #expect(try await store.enqueueCleanup(tenant: t, [again], audit: nil) == 0)
            #expect(try await store.cleanupItem(tenant: t, subOrgId: "s1")?.version == 1)

            item.body = #"{"type":"ACTIVITY_TYPE_DELETE_SUB_ORGANIZATION"}"#
            let written = try await store.updateCleanupItem(tenant: t, item, audit: Self.audit)
            #expect(written.version == 2)
            #expect(try await store.cleanupItem(tenant: t, subOrgId: "s1") == written)
            let stale = try await #require(throws: ConsoleError.self) {
                try await store.updateCleanupItem(tenant: t, item, audit: Self.audit)
            }
            #expect(stale.code == "stale_journal_item" && stale.kind == .conflict)
            var missing = item
            missing.subOrgId = "nowhere"
            let absent = try await #require(throws: ConsoleError.self) {
                try await store.updateCleanupItem(tenant: t, missing, audit: nil)
            }
            #expect(
                absent.code == "not_found"
                    && absent.message == "Sub-org nowhere is not in the cleanup journal of sandbox.")
            var done = written
            done.state = .deleted
            _ = try await store.updateCleanupItem(tenant: t, done, audit: nil)
            #expect(try await store.cleanupCounts(tenant: t) == [.pending: 1, .deleted: 1])
            #expect(try await store.cleanupItems(tenant: t, states: [.deleted]).map(\.subOrgId) == ["s1"])

            let teardown = StampedTeardown(subOrgId: "s2", body: "{}", stamp: "st", submittedAt: 9)
            try await store.saveStampedTeardown(tenant: t, teardown, audit: nil)
            var replaced = teardown
            replaced.stamp = "st2"
            try await store.saveStampedTeardown(tenant: t, replaced, audit: Self.audit)
            #expect(try await store.stampedTeardown(tenant: t, subOrgId: "s2") == replaced)
            #expect(try await store.stampedTeardown(tenant: t, subOrgId: "s1") == nil)
            // Audited: the tenant, the batch, the first enqueue, the first update, the second save.
            #expect(try await Self.actions(store).count == 5)
        }
    }

    @Test(arguments: TestBackend.available) func theResetLedgerClaimsSendsAndRecordsTheWipeOnce(
        backend: TestBackend
    ) async throws {
        try await backend.withStore { store in
            let writes = try await Self.seed(store)
            let t = Self.sandbox
            let id = writes[0].record.backupId
            let token = String(repeating: "cd", count: 32)
            try await store.insertResetChallenge(
                ResetChallengeRecord(
                    tokenHash: token, tenant: t, backupId: id, context: "reset", challenge: [1, 2, 3],
                    createdAt: 100, expiresAt: 400),
                audit: Self.audit)
            #expect(
                try await store.claimResetSend(
                    tokenHash: token, subOrgIds: ["sent"], holder: "h", now: 110, until: 230, takeOver: nil)
                    == .claimed(sentBefore: false))
            #expect(
                try await store.claimResetSend(
                    tokenHash: token, subOrgIds: [], holder: "k", now: 111, until: 231, takeOver: nil)
                    == .inFlight(holder: "h", until: 230))
            // A sender known to be dead is taken over; its earlier send was never confirmed.
            #expect(
                try await store.claimResetSend(
                    tokenHash: token, subOrgIds: [], holder: "k", now: 112, until: 232, takeOver: "h")
                    == .claimed(sentBefore: true))
            try await store.releaseResetSend(tokenHash: token, holder: "k")
            #expect(
                try await store.claimResetSend(
                    tokenHash: "unknown", subOrgIds: [], holder: "k", now: 1, until: 2, takeOver: nil)
                    == .claimed(sentBefore: false))

            let wipe = try await store.recordServiceReset(
                tenant: t, tokenHash: token, backupId: id, subOrgIds: [], now: 120,
                audit: ResetAuditDraft(
                    AuditDraft(operatorName: "test", tenant: "sandbox", action: "reset.complete"),
                    lookupRowsAtLeast: 0))
            #expect(wipe.lookupRowsRemoved == writes[0].lookupRows.count)
            #expect(Set(wipe.turnkeySubOrgIds) == Set(["sent"] + writes[0].record.metadata.turnkeySubOrgIds))
            let ledger = try #require(try await store.resetChallenge(tokenHash: token))
            #expect(ledger.usedAt == 120 && ledger.sentAt == 112 && ledger.challenge == [1, 2, 3])
            #expect(try await !store.backupExists(tenant: t, id: id))
            let queued = try await store.cleanupItems(tenant: t, states: [.pending])
            #expect(Set(queued.map(\.subOrgId)) == Set(wipe.turnkeySubOrgIds))
            #expect(queued.allSatisfy { $0.reason == "reset" })
            let last = try #require(try await store.latestAuditEntries(tenant: t, limit: 1).first)
            #expect(last.action == "reset.complete")

            // The sandbox service's own reset: once per token, without queueing or auditing.
            let other = writes[1].record.backupId
            let entries = try await Self.actions(store).count
            let used = String(repeating: "ef", count: 32)
            #expect(try await store.sandboxServiceReset(tenant: t, tokenHash: used, backupId: other, now: 5))
            #expect(
                try await !store.sandboxServiceReset(
                    tenant: t, tokenHash: used, backupId: writes[2].record.backupId, now: 6))
            #expect(try await !store.backupExists(tenant: t, id: other))
            #expect(try await store.backupExists(tenant: t, id: writes[2].record.backupId))
            #expect(try await Self.actions(store).count == entries)
        }
    }

    @Test(arguments: TestBackend.available) func theRunLeaseAndTheQueueHaveOneHolder(backend: TestBackend)
        async throws
    {
        try await backend.withStore { store in
            _ = try await Self.seed(store)
            let t = Self.sandbox
            #expect(
                try await store.acquireCleanupLease(tenant: t, holder: "a", now: 10, expiresAt: 20, takeOver: nil)
                    == nil)
            let held = try await store.acquireCleanupLease(
                tenant: t, holder: "b", now: 11, expiresAt: 21, takeOver: nil)
            #expect(held?.holder == "a" && held?.expiresAt == 20)
            #expect(
                try await store.acquireCleanupLease(tenant: t, holder: "b", now: 12, expiresAt: 22, takeOver: "a")
                    == nil)
            #expect(try await !store.renewCleanupLease(tenant: t, holder: "a", expiresAt: 30))
            #expect(try await store.renewCleanupLease(tenant: t, holder: "b", expiresAt: 5))
            // Renewed to before its acquisition, the lease ends at its acquisition: expired at 13.
            #expect(
                try await store.acquireCleanupLease(tenant: t, holder: "c", now: 13, expiresAt: 40, takeOver: nil)
                    == nil)
            try await store.releaseCleanupLease(tenant: t, holder: "c")
            #expect(
                try await store.acquireCleanupLease(tenant: t, holder: "d", now: 14, expiresAt: 40, takeOver: nil)
                    == nil)

            let items = ["q1", "q2", "q3"].map {
                CleanupItemRecord(subOrgId: $0, reason: "unreferenced", firstSeenAt: 1, updatedAt: 1)
            }
            _ = try await store.enqueueCleanup(tenant: t, items, audit: nil)
            #expect(
                try await store.queueCleanup(
                    tenant: t, subOrgIds: ["q1", "q2", "nope"], queuedBy: "op", now: 1, audit: Self.audit) == 2)
            let claimed = try await store.claimCleanup(tenant: t, worker: "w1", limit: 5, now: 100, leaseMillis: 50)
            #expect(claimed.map(\.item.subOrgId) == ["q1", "q2"] && claimed.allSatisfy { $0.queuedBy == "op" })
            #expect(try await store.claimCleanup(tenant: t, worker: "w2", limit: 5, now: 120, leaseMillis: 50).isEmpty)
            #expect(
                try await store.renewCleanupClaims(tenant: t, worker: "w1", now: 140, leaseMillis: 50) == ["q1", "q2"])
            try await store.releaseCleanupClaim(tenant: t, worker: "w1", subOrgId: "q1")
            // Released, or past its lease, an item goes to the next worker.
            let next = try await store.claimCleanup(tenant: t, worker: "w2", limit: 5, now: 200, leaseMillis: 50)
            #expect(next.map(\.item.subOrgId) == ["q1", "q2"])
            #expect(try await store.renewCleanupClaims(tenant: t, worker: "w1", now: 210, leaseMillis: 50).isEmpty)

            #expect(try await store.reserveTurnkeyCall(tenant: t, perSecond: 10, burst: 1, nowMicros: 1_000) == 1_000)
            #expect(try await store.reserveTurnkeyCall(tenant: t, perSecond: 10, burst: 1, nowMicros: 1_000) == 101_000)
            let rate = try await #require(throws: ConsoleError.self) {
                try await store.reserveTurnkeyCall(tenant: t, perSecond: 0, burst: 1, nowMicros: 1)
            }
            #expect(rate.kind == .usage)
        }
    }

    @Test(arguments: TestBackend.available) func sandboxSubOrgsKeepTheirFirstTime(backend: TestBackend) async throws {
        try await backend.withStore { store in
            _ = try await Self.seed(store)
            let t = Self.sandbox
            #expect(try await store.addSandboxSubOrgs(tenant: t, ["a", "b"], createdAt: 1, audit: nil) == 2)
            #expect(try await store.addSandboxSubOrgs(tenant: t, ["b", "c"], createdAt: 2, audit: Self.audit) == 1)
            #expect(try await store.sandboxSubOrgPage(tenant: t, after: "", limit: 2) == ["a", "b"])
            #expect(try await store.sandboxSubOrgPage(tenant: t, after: "b", limit: 2) == ["c"])
            #expect(try await store.sandboxSubOrgExists(tenant: t, subOrgId: "c"))
            #expect(try await store.sandboxSubOrgCount(tenant: t) == 3)
            #expect(try await store.removeSandboxSubOrg(tenant: t, subOrgId: "b", audit: nil))
            #expect(try await !store.removeSandboxSubOrg(tenant: t, subOrgId: "b", audit: nil))
            #expect(try await !store.sandboxSubOrgExists(tenant: t, subOrgId: "b"))
            #expect(try await Self.actions(store).count == 3)
        }
    }
}
