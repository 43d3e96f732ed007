import Access
import BackupCrypto
import BackupModel
import ConsoleStore
import Foundation
import Recovery
import Testing

@Suite struct ResetServiceTests {
    @Test func vectorSignatureIsByteIdenticalAndVerifies() throws {
        let v = ResetVector.shared
        let key = try UserRecovery.rootKey(json: Array(v.rootKeyJson.utf8))
        #expect(try UserRecovery.backupAccountID(rootKey: key).rawValue == v.backupAccountId)
        let challenge = try UserRecovery.challengeBytes(base64: v.challengeBase64)
        #expect(try UserRecovery.signChallenge(challenge, rootKey: key) == v.signatureBase64)
        let id = try BackupAccountID(v.backupAccountId)
        try ResetService.verify(signature: v.signatureBase64, challenge: challenge, publicKey: id.publicKey)
    }

    @Test func beginThenCompleteWipesAndQueues() throws {
        let f = try Fixture()
        let key = rootKey("42")
        let id = try f.addBackup(key)
        let keep = try f.addBackup(rootKey("43"), subOrgs: ["suborg-c"])
        let service = f.service()
        let begun = try service.begin(backupAccountId: id.rawValue, session: f.session)
        #expect(begun.challenge.count == 32)
        #expect(begun.tokenText.hasPrefix("rst_") && begun.tokenText.count == 47)
        #expect(begun.expiresAt == f.clock.seconds + 900)
        #expect(begun.expiresAtRFC3339.hasSuffix("Z"))
        let stored = try #require(try f.store.resetChallenge(tokenHash: begun.tokenHash))
        #expect(stored.context == "reset" && stored.backupId == id.rawValue && stored.challenge == begun.challenge)

        let signature = try UserRecovery.signChallenge(begun.challenge, rootKey: key)
        let result = try service.complete(token: begun.token, signature: signature, session: f.session)
        #expect(
            result
                == ResetResult(
                    backupId: id.rawValue, wiped: true, lookupRowsRemoved: 3,
                    turnkeySubOrgIds: ["suborg-a", "suborg-b"]))
        let after = try f.snapshot(ids: [id, keep], tokenHashes: [begun.tokenHash])
        #expect(after.backups == [keep.rawValue])
        #expect(after.blobs[id.rawValue] == nil && after.lookupRows[id.rawValue] == [])
        #expect(after.lookupRows[keep.rawValue]?.count == 3)
        #expect(after.cleanup == ["suborg-a:reset", "suborg-b:reset"])
        #expect(after.challenges[begun.tokenHash] != nil)

        // The audit has both steps and never the token or the signature.
        let entries = try f.store.auditEntries(tenant: f.session.tenantName, afterSeq: 0, limit: 1000)
        let resets = entries.filter { $0.action.hasPrefix("reset.") }
        #expect(resets.map(\.action) == ["reset.begin", "reset.complete"])
        for entry in entries {
            let text = String(decoding: entry.canonicalBytes, as: UTF8.self)
            #expect(!text.contains(begun.tokenText) && !text.contains(String(begun.tokenText.dropFirst(4))))
            #expect(!text.contains(signature) && !text.contains(begun.challengeBase64))
            #expect(!text.contains(begun.tokenHash))
        }
        #expect(resets.allSatisfy { $0.details["tokenHashPrefix"] == String(begun.tokenHash.prefix(12)) })
    }

    @Test func beginRefusals() throws {
        let f = try Fixture()
        let service = f.service()
        let viewer = try f.session(role: .viewer, name: "vera")
        let id = try f.addBackup(rootKey("42"))
        let unknown = try BackupAccountKey.derive(rootKey: rootKey("44"))
        let offCurve = "backup_account_02" + String(repeating: "ff", count: 32)
        let cases: [(String, Session, String)] = [
            ("backup_account_zz", f.session, "invalid_backup_account_id"),
            ("account_02", f.session, "invalid_backup_account_id"),
            (offCurve, f.session, "invalid_backup_account_id"),
            (unknown.rawValue, f.session, "not_found"),
            (id.rawValue, viewer, "permission_denied"),
        ]
        for (text, session, code) in cases {
            let before = try f.snapshot(ids: [id])
            #expect(consoleError { _ = try service.begin(backupAccountId: text, session: session) }?.code == code)
            #expect(try f.snapshot(ids: [id]) == before)
        }
        // A support operator may.
        _ = try service.begin(backupAccountId: id.rawValue, session: try f.session(role: .support, name: "sam"))
    }

    @Test func tenantPolicyShortensTheTokenLife() throws {
        let f = try Fixture()
        let other = try f.otherTenant(policy: TenantPolicy(resetTokenTTLSeconds: 120))
        let id = try f.addBackup(rootKey("42"), tenant: other.tenantName)
        let begun = try f.service().begin(backupAccountId: id.rawValue, session: other)
        #expect(begun.expiresAt == f.clock.seconds + 120)
    }
}
