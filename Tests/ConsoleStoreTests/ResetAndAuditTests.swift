import BackupCrypto
import BackupModel
import Foundation
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
    func scene(_ store: SQLiteConsoleStore) throws -> Scene {
        let f = Fixtures()
        let id = f.backupId()
        let subOrgs = [f.uuid(), f.uuid()]
        let metadata = f.metadata(id: id, passkeys: [f.credential()], googleSubs: ["77"], subOrgs: subOrgs)
        try store.writeBackup(tenant: alpha, f.write(metadata, blob: Data([7, 7])), audit: draft("w", tenant: alpha))
        let scene = Scene(id: id, subOrgs: subOrgs)
        try store.insertResetChallenge(
            ResetChallengeRecord(
                tokenHash: scene.token, tenant: alpha, backupId: id, context: "reset",
                challenge: Array(repeating: 1, count: 32),
                createdAt: 100, expiresAt: 1000),
            audit: draft("reset.begin", tenant: alpha, target: id))
        return scene
    }

    func resetAudit(_ wipe: ResetWipe) -> AuditDraft {
        AuditDraft(
            operatorName: "tester", tenant: "alpha", action: "reset.complete", target: wipe.backupId,
            details: ["lookupRowsRemoved": "\(wipe.lookupRowsRemoved)"])
    }

    @Test func recordServiceResetWipesEverythingAtomically() throws {
        try withStore { store, _ in
            let s = try scene(store)
            // An earlier sighting of one sub-org keeps its first-seen time.
            _ = try store.enqueueCleanup(
                tenant: alpha,
                [CleanupItemRecord(subOrgId: s.subOrgs[0], reason: "unreferenced", firstSeenAt: 10, updatedAt: 10)],
                audit: nil)
            // The sub-orgs the console sent with the request count even if the copy lost them.
            try store.markResetSent(tokenHash: s.token, subOrgIds: s.subOrgs + ["sent-only"], now: 450)
            #expect(try store.resetChallenge(tokenHash: s.token)?.sentAt == 450)
            let wipe = try store.recordServiceReset(
                tenant: alpha, tokenHash: s.token, backupId: s.id, subOrgIds: [], now: 500, audit: resetAudit)
            #expect(
                wipe == ResetWipe(backupId: s.id, lookupRowsRemoved: 2, turnkeySubOrgIds: s.subOrgs + ["sent-only"]))
            #expect(try store.backup(tenant: alpha, id: s.id) == nil)
            #expect(try store.sealedBlob(tenant: alpha, backupId: s.id) == nil)
            #expect(try store.lookupRows(tenant: alpha, backupId: s.id).isEmpty)
            #expect(try store.subOrgReference(tenant: alpha, subOrgId: s.subOrgs[1]) == nil)
            #expect(try store.resetChallenge(tokenHash: s.token)?.usedAt == 500)
            let first = try #require(try store.cleanupItem(tenant: alpha, subOrgId: s.subOrgs[0]))
            let second = try #require(try store.cleanupItem(tenant: alpha, subOrgId: s.subOrgs[1]))
            // A reset proves the sub-org orphaned: the reason becomes reset, first-seen stays earliest.
            #expect(first.firstSeenAt == 10 && first.reason == "reset" && first.lastBackupId == s.id)
            #expect(second.reason == "reset" && second.state == .pending && second.firstSeenAt == 500)
            let last = try #require(try store.latestAuditEntries(tenant: alpha, limit: 1).first)
            #expect(last.action == "reset.complete" && last.target == s.id && last.details["lookupRowsRemoved"] == "2")
            // Recording it again (a resolved retry) changes nothing but the audit.
            let again = try store.recordServiceReset(
                tenant: alpha, tokenHash: s.token, backupId: s.id, subOrgIds: [], now: 600, audit: resetAudit)
            #expect(again.lookupRowsRemoved == 0 && again.turnkeySubOrgIds == s.subOrgs + ["sent-only"])
            #expect(try store.resetChallenge(tokenHash: s.token)?.usedAt == 500)
        }
    }

    @Test func sandboxServiceResetIsSingleUseAndAtomic() throws {
        try withStore { store, _ in
            let s = try scene(store)
            let hash = String(repeating: "a", count: 64)
            #expect(try store.sandboxServiceReset(tenant: alpha, tokenHash: hash, backupId: s.id, now: 1))
            #expect(try store.backup(tenant: alpha, id: s.id) == nil)
            #expect(try store.lookupRows(tenant: alpha, backupId: s.id).isEmpty)
            // The service queues nothing and audits nothing: that is the console's part.
            #expect(try store.cleanupItems(tenant: alpha, states: nil).isEmpty)
            #expect(!(try store.sandboxServiceReset(tenant: alpha, tokenHash: hash, backupId: s.id, now: 2)))
        }
    }

    @Test func staleJournalWritesAreRefused() throws {
        try withStore { store, _ in
            _ = try scene(store)
            _ = try store.enqueueCleanup(
                tenant: alpha, [CleanupItemRecord(subOrgId: "x", reason: "unreferenced", firstSeenAt: 1, updatedAt: 1)],
                audit: nil)
            let read = try #require(try store.cleanupItem(tenant: alpha, subOrgId: "x"))
            var newer = read
            newer.state = .deleted
            let written = try store.updateCleanupItem(tenant: alpha, newer, audit: nil)
            #expect(written.version == read.version + 1)
            var stale = read
            stale.state = .failed
            let error = #expect(throws: ConsoleError.self) {
                try store.updateCleanupItem(tenant: alpha, stale, audit: nil)
            }
            #expect(error?.code == "stale_journal_item")
            #expect(try store.cleanupItem(tenant: alpha, subOrgId: "x")?.state == .deleted)
        }
    }

    @Test func cleanupLeaseIsExclusiveUntilItExpires() throws {
        try withStore { store, _ in
            _ = try scene(store)
            #expect(
                try store.acquireCleanupLease(tenant: alpha, holder: "a", now: 100, expiresAt: 160, takeOver: nil)
                    == nil)
            let held = try store.acquireCleanupLease(
                tenant: alpha, holder: "b", now: 120, expiresAt: 180, takeOver: nil)
            #expect(held?.holder == "a" && held?.expiresAt == 160)
            #expect(try store.renewCleanupLease(tenant: alpha, holder: "a", expiresAt: 200))
            #expect(!(try store.renewCleanupLease(tenant: alpha, holder: "b", expiresAt: 200)))
            // A killed holder's lease expires and its successor takes it over.
            #expect(
                try store.acquireCleanupLease(tenant: alpha, holder: "b", now: 201, expiresAt: 260, takeOver: nil)
                    == nil)
            #expect(!(try store.renewCleanupLease(tenant: alpha, holder: "a", expiresAt: 300)))
            // A holder known to be dead is taken over before its expiry.
            #expect(
                try store.acquireCleanupLease(tenant: alpha, holder: "d", now: 202, expiresAt: 260, takeOver: "b")
                    == nil)
            try store.releaseCleanupLease(tenant: alpha, holder: "d")
            #expect(
                try store.acquireCleanupLease(tenant: alpha, holder: "c", now: 202, expiresAt: 260, takeOver: nil)
                    == nil)
        }
    }

    @Test func auditChainRecomputes() throws {
        try withStore { store, _ in
            _ = try scene(store)
            let appended = try store.appendAudit(
                AuditDraft(
                    operatorName: "tester", tenant: nil, action: "backup.show", target: "x", details: ["a": "b/c"]))
            let all = try store.auditEntries(tenant: nil, afterSeq: 0, limit: 1000)
            #expect(all.count == 5)
            #expect(all.last == appended)
            #expect(all.first?.prevHash == AuditEntry.genesisHash)
            #expect(all.allSatisfy { $0.at == testClockMillis })
            #expect(chainIsValid(all))
            var tampered = all
            tampered[2].target = "someone-else"
            #expect(!chainIsValid(tampered))
            #expect(try store.auditEntries(tenant: nil, afterSeq: 3, limit: 1).map(\.seq) == [4])
            #expect(try store.latestAuditEntries(tenant: nil, limit: 2).map(\.seq) == [4, 5])
            #expect(
                try store.auditEntries(tenant: alpha, afterSeq: 0, limit: 100).map(\.action) == ["w", "reset.begin"])
        }
    }
}
