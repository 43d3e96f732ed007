import BackupCrypto
import BackupModel
import Foundation
import SQLiteStore
import Testing

@testable import ConsoleStore

@Suite("Reset and audit")
struct ResetAndAuditTests {
    struct Scene {
        let id: String
        let subOrgs: [String]
        let token = "token-hash-1"
    }

    /// A backup with two factors, a blob and two sub-orgs, plus an open challenge expiring at 1000.
    func scene(_ store: SQLiteConsoleStore) async throws -> Scene {
        let f = Fixtures()
        let id = f.backupId()
        let subOrgs = [f.uuid(), f.uuid()]
        let metadata = f.metadata(id: id, passkeys: [f.credential()], googleSubs: ["77"], subOrgs: subOrgs)
        try await store.writeBackup(
            tenant: alpha, f.write(metadata, blob: Data([7, 7])), audit: draft("w", tenant: alpha))
        let scene = Scene(id: id, subOrgs: subOrgs)
        try await store.insertResetChallenge(
            ResetChallengeRecord(
                tokenHash: scene.token, tenant: alpha, backupId: id, context: "reset",
                challenge: Array(repeating: 1, count: 32),
                createdAt: 100, expiresAt: 1000),
            audit: draft("reset.begin", tenant: alpha, target: id))
        return scene
    }

    var resetAudit: ResetAuditDraft {
        ResetAuditDraft(
            AuditDraft(operatorName: "tester", tenant: "alpha", action: "reset.complete"), lookupRowsAtLeast: 0)
    }

    @Test func recordServiceResetWipesEverythingAtomically() async throws {
        try await withStore { store, _ in
            let s = try await scene(store)
            // An earlier sighting of one sub-org (before the backup referenced it) gives way to the reset.
            _ = try await store.enqueueCleanup(
                tenant: alpha,
                [CleanupItemRecord(subOrgId: s.subOrgs[0], reason: "unreferenced", firstSeenAt: 10, updatedAt: 10)],
                audit: nil)
            // The sub-orgs the console sent with the request count even if the copy lost them.
            let claimed = try await store.claimResetSend(
                tokenHash: s.token, subOrgIds: s.subOrgs + ["sent-only"], holder: "one", now: 450, until: 570,
                takeOver: nil)
            #expect(claimed == .claimed(sentBefore: false))
            #expect(try await store.resetChallenge(tokenHash: s.token)?.sentAt == 450)
            // While it is in flight, nobody else sends the token; a sender known dead is taken over.
            #expect(
                try await store.claimResetSend(
                    tokenHash: s.token, subOrgIds: [], holder: "two", now: 460, until: 580, takeOver: nil)
                    == .inFlight(holder: "one", until: 570))
            #expect(
                try await store.claimResetSend(
                    tokenHash: s.token, subOrgIds: [], holder: "two", now: 460, until: 580, takeOver: "one")
                    == .claimed(sentBefore: true))
            try await store.releaseResetSend(tokenHash: s.token, holder: "one")  // not the holder: no effect
            #expect(
                try await store.claimResetSend(
                    tokenHash: s.token, subOrgIds: [], holder: "three", now: 470, until: 590, takeOver: nil)
                    == .inFlight(holder: "two", until: 580))
            try await store.releaseResetSend(tokenHash: s.token, holder: "two")
            #expect(
                try await store.claimResetSend(
                    tokenHash: s.token, subOrgIds: [], holder: "one", now: 480, until: 600, takeOver: nil)
                    == .claimed(sentBefore: true))
            let wipe = try await store.recordServiceReset(
                tenant: alpha, tokenHash: s.token, backupId: s.id, subOrgIds: [], now: 500, audit: resetAudit)
            #expect(
                wipe == ResetWipe(backupId: s.id, lookupRowsRemoved: 2, turnkeySubOrgIds: s.subOrgs + ["sent-only"]))
            #expect(try await store.backup(tenant: alpha, id: s.id) == nil)
            #expect(try await store.sealedBlob(tenant: alpha, backupId: s.id) == nil)
            #expect(try await store.lookupRows(tenant: alpha, backupId: s.id).isEmpty)
            #expect(try await store.subOrgReference(tenant: alpha, subOrgId: s.subOrgs[1]) == nil)
            #expect(try await store.resetChallenge(tokenHash: s.token)?.usedAt == 500)
            // The confirmed reset dropped the claim; a later send is not taken for a lost one.
            #expect(
                try await store.claimResetSend(
                    tokenHash: s.token, subOrgIds: [], holder: "four", now: 510, until: 630, takeOver: nil)
                    == .claimed(sentBefore: false))
            let first = try #require(try await store.cleanupItem(tenant: alpha, subOrgId: s.subOrgs[0]))
            let second = try #require(try await store.cleanupItem(tenant: alpha, subOrgId: s.subOrgs[1]))
            // A reset proves the sub-org orphaned from then on: the reason becomes reset, and the
            // grace clock starts at the reset (the backup referenced it until then).
            #expect(first.firstSeenAt == 500 && first.reason == "reset" && first.lastBackupId == s.id)
            #expect(second.reason == "reset" && second.state == .pending && second.firstSeenAt == 500)
            let last = try #require(try await store.latestAuditEntries(tenant: alpha, limit: 1).first)
            #expect(last.action == "reset.complete" && last.target == s.id && last.details["lookupRowsRemoved"] == "2")
            // Recording it again (a resolved retry) changes nothing but the audit.
            let again = try await store.recordServiceReset(
                tenant: alpha, tokenHash: s.token, backupId: s.id, subOrgIds: [], now: 600, audit: resetAudit)
            #expect(again.lookupRowsRemoved == 0 && again.turnkeySubOrgIds == s.subOrgs + ["sent-only"])
            #expect(try await store.resetChallenge(tokenHash: s.token)?.usedAt == 500)
        }
    }

    @Test func sandboxServiceResetIsSingleUseAndAtomic() async throws {
        try await withStore { store, _ in
            let s = try await scene(store)
            let hash = String(repeating: "a", count: 64)
            #expect(try await store.sandboxServiceReset(tenant: alpha, tokenHash: hash, backupId: s.id, now: 1))
            #expect(try await store.backup(tenant: alpha, id: s.id) == nil)
            #expect(try await store.lookupRows(tenant: alpha, backupId: s.id).isEmpty)
            // The service queues nothing and audits nothing: that is the console's part.
            #expect(try await store.cleanupItems(tenant: alpha, states: nil).isEmpty)
            #expect(!(try await store.sandboxServiceReset(tenant: alpha, tokenHash: hash, backupId: s.id, now: 2)))
        }
    }

    @Test func staleJournalWritesAreRefused() async throws {
        try await withStore { store, _ in
            _ = try await scene(store)
            _ = try await store.enqueueCleanup(
                tenant: alpha, [CleanupItemRecord(subOrgId: "x", reason: "unreferenced", firstSeenAt: 1, updatedAt: 1)],
                audit: nil)
            let read = try #require(try await store.cleanupItem(tenant: alpha, subOrgId: "x"))
            var newer = read
            newer.state = .deleted
            let written = try await store.updateCleanupItem(tenant: alpha, newer, audit: nil)
            #expect(written.version == read.version + 1)
            var stale = read
            stale.state = .failed
            let error = await #expect(throws: ConsoleError.self) {
                try await store.updateCleanupItem(tenant: alpha, stale, audit: nil)
            }
            #expect(error?.code == "stale_journal_item")
            #expect(try await store.cleanupItem(tenant: alpha, subOrgId: "x")?.state == .deleted)
        }
    }

    @Test func cleanupLeaseIsExclusiveUntilItExpires() async throws {
        try await withStore { store, _ in
            _ = try await scene(store)
            #expect(
                try await store.acquireCleanupLease(tenant: alpha, holder: "a", now: 100, expiresAt: 160, takeOver: nil)
                    == nil)
            let held = try await store.acquireCleanupLease(
                tenant: alpha, holder: "b", now: 120, expiresAt: 180, takeOver: nil)
            #expect(held?.holder == "a" && held?.expiresAt == 160)
            #expect(try await store.renewCleanupLease(tenant: alpha, holder: "a", expiresAt: 200))
            #expect(!(try await store.renewCleanupLease(tenant: alpha, holder: "b", expiresAt: 200)))
            // A killed holder's lease expires and its successor takes it over.
            #expect(
                try await store.acquireCleanupLease(tenant: alpha, holder: "b", now: 201, expiresAt: 260, takeOver: nil)
                    == nil)
            #expect(!(try await store.renewCleanupLease(tenant: alpha, holder: "a", expiresAt: 300)))
            // A holder known to be dead is taken over before its expiry.
            #expect(
                try await store.acquireCleanupLease(tenant: alpha, holder: "d", now: 202, expiresAt: 260, takeOver: "b")
                    == nil)
            try await store.releaseCleanupLease(tenant: alpha, holder: "d")
            #expect(
                try await store.acquireCleanupLease(tenant: alpha, holder: "c", now: 202, expiresAt: 260, takeOver: nil)
                    == nil)
        }
    }

    @Test func auditChainRecomputes() async throws {
        try await withStore { store, _ in
            _ = try await scene(store)
            let appended = try await store.appendAudit(
                AuditDraft(
                    operatorName: "tester", tenant: nil, action: "backup.show", target: "x", details: ["a": "b/c"]))
            let all = try await store.auditEntries(tenant: nil, afterSeq: 0, limit: 1000)
            #expect(all.count == 5)
            #expect(all.last == appended)
            #expect(all.first?.prevHash == AuditEntry.genesisHash)
            #expect(all.allSatisfy { $0.at == testClockMillis })
            #expect(chainIsValid(all))
            var tampered = all
            tampered[2].target = "someone-else"
            #expect(!chainIsValid(tampered))
            #expect(try await store.auditEntries(tenant: nil, afterSeq: 3, limit: 1).map(\.seq) == [4])
            #expect(try await store.latestAuditEntries(tenant: nil, limit: 2).map(\.seq) == [4, 5])
            #expect(
                try await store.auditEntries(tenant: alpha, afterSeq: 0, limit: 100).map(\.action) == [
                    "w", "reset.begin",
                ])
        }
    }
}
