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

    @Test func completeResetWipesEverythingAtomically() throws {
        try withStore { store, _ in
            let s = try scene(store)
            // An earlier sighting of one sub-org keeps its first-seen time.
            _ = try store.enqueueCleanup(
                tenant: alpha,
                [CleanupItemRecord(subOrgId: s.subOrgs[0], reason: "unreferenced", firstSeenAt: 10, updatedAt: 10)],
                audit: nil)
            var verified: ResetChallengeRecord?
            let wipe = try store.completeReset(
                tokenHash: s.token, now: 500, verify: { verified = $0 }, audit: resetAudit)
            #expect(verified?.backupId == s.id)
            #expect(wipe == ResetWipe(backupId: s.id, lookupRowsRemoved: 2, turnkeySubOrgIds: s.subOrgs))
            #expect(try store.backup(tenant: alpha, id: s.id) == nil)
            #expect(try store.sealedBlob(tenant: alpha, backupId: s.id) == nil)
            #expect(try store.lookupRows(tenant: alpha, backupId: s.id).isEmpty)
            #expect(try store.subOrgReference(tenant: alpha, subOrgId: s.subOrgs[1]) == nil)
            #expect(try store.resetChallenge(tokenHash: s.token)?.usedAt == 500)
            let first = try #require(try store.cleanupItem(tenant: alpha, subOrgId: s.subOrgs[0]))
            let second = try #require(try store.cleanupItem(tenant: alpha, subOrgId: s.subOrgs[1]))
            #expect(first.firstSeenAt == 10)
            #expect(second.reason == "reset" && second.state == .pending && second.firstSeenAt == 500)
            let last = try #require(try store.latestAuditEntries(tenant: alpha, limit: 1).first)
            #expect(last.action == "reset.complete" && last.target == s.id && last.details["lookupRowsRemoved"] == "2")
        }
    }

    enum Failure: CaseIterable { case unknown, used, expired, refused, backupGone }

    @Test(arguments: Failure.allCases)
    func completeResetFailuresChangeNothing(_ failure: Failure) throws {
        try withStore { store, _ in
            let s = try scene(store)
            var token = s.token
            var now: Int64 = 500
            var verify: (ResetChallengeRecord) throws(ConsoleError) -> Void = { _ in }
            var expected = ("", ConsoleError.Kind.internalError)
            switch failure {
            case .unknown:
                token = "nope"
                expected = ("not_found", .notFound)
            case .used:
                _ = try store.completeReset(tokenHash: token, now: 400, verify: { _ in }, audit: resetAudit)
                expected = ("already_used", .verificationFailed)
            case .expired:
                now = 1001
                expected = ("token_expired", .verificationFailed)
            case .refused:
                verify = { _ throws(ConsoleError) in
                    throw ConsoleError(.verificationFailed, code: "signature_verification_error", "bad signature")
                }
                expected = ("signature_verification_error", .verificationFailed)
            case .backupGone:
                try store.insertResetChallenge(
                    ResetChallengeRecord(
                        tokenHash: "ghost", tenant: alpha, backupId: Fixtures(seed: 9).backupId(), context: "reset",
                        challenge: [1], createdAt: 100, expiresAt: 1000),
                    audit: draft("reset.begin"))
                token = "ghost"
                expected = ("not_found", .notFound)
            }
            let backupBefore = try store.backup(tenant: alpha, id: s.id)
            let rowsBefore = try store.lookupRows(tenant: alpha, backupId: s.id)
            let challengeBefore = try store.resetChallenge(tokenHash: token)
            let auditBefore = try store.auditEntries(tenant: nil, afterSeq: 0, limit: 1000)
            let cleanupBefore = try store.cleanupItems(tenant: alpha, states: nil)

            let error = #expect(throws: ConsoleError.self) {
                try store.completeReset(tokenHash: token, now: now, verify: verify, audit: resetAudit)
            }
            #expect(error?.code == expected.0 && error?.kind == expected.1)
            #expect(try store.backup(tenant: alpha, id: s.id) == backupBefore)
            #expect(try store.lookupRows(tenant: alpha, backupId: s.id) == rowsBefore)
            #expect(try store.resetChallenge(tokenHash: token) == challengeBefore)
            #expect(try store.auditEntries(tenant: nil, afterSeq: 0, limit: 1000) == auditBefore)
            #expect(try store.cleanupItems(tenant: alpha, states: nil) == cleanupBefore)
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
