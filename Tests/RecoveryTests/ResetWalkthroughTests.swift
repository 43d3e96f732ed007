import Access
import BackupCrypto
import BackupModel
import ConsoleStore
import Foundation
import Recovery
import Testing
import Turnkey

@Suite struct ResetWalkthroughTests {
    func walk(_ f: Fixture) throws -> ResetWalkthrough {
        try ResetWalkthrough(store: f.store, session: f.session, clock: f.clock, random: SeededRandom(seed: 5))
    }

    /// Drives find → review → proof and returns the challenge shown.
    func toProof(_ w: inout ResetWalkthrough, query: String) throws -> [UInt8] {
        guard case .review(let review) = try w.handle(.identify(query)) else { throw Failure.unexpected }
        #expect(review.factors.count == 2 && review.devices.count == 1 && review.lookupRows == 3)
        #expect(review.turnkeySubOrgIds == ["suborg-a", "suborg-b"])
        #expect(review.notWiped.contains { $0.contains("Root Key") })
        guard case .proof(_, let challenge, _) = try w.handle(.proceed) else { throw Failure.unexpected }
        return try UserRecovery.challengeBytes(base64: challenge)
    }

    enum Failure: Error { case unexpected }

    @Test func remoteProofWithStampsPastedByTheUser() throws {
        let f = try Fixture()
        let key = rootKey("42")
        let id = try f.addBackup(key)
        var w = try walk(f)
        #expect(w.firstPrompt == .askIdentity)
        let challenge = try toProof(&w, query: id.rawValue)
        // A mistyped signature is refused and the step stays.
        let wrong = try UserRecovery.signChallenge(challenge, rootKey: rootKey("43"))
        #expect(
            consoleError { _ = try w.handle(.remoteProof(signature: wrong)) }?.code == "signature_verification_error")
        #expect(w.step == .proof)
        let signature = try UserRecovery.signChallenge(challenge, rootKey: key)
        #expect(try w.handle(.remoteProof(signature: signature)) == .confirm(tenant: "sandbox", backupId: id.rawValue))
        #expect(try w.handle(.confirm(tenantName: "sandbox")) == .readyToWipe(backupId: id.rawValue))
        guard case .teardown(let result, let items, let needStamps) = try w.handle(.wipe) else {
            throw Failure.unexpected
        }
        #expect(result.backupId == id.rawValue && needStamps)
        #expect(items.map(\.subOrgId) == ["suborg-a", "suborg-b"])
        #expect(items.allSatisfy { $0.stamp == nil && $0.body.text.contains("\"organizationId\":\"\($0.subOrgId)\"") })
        #expect(try f.store.backup(tenant: f.session.tenantName, id: id.rawValue) == nil)

        // A stamp by another key is refused; the user's stamp over the exact body is accepted.
        let foreign = try UserRecovery.stamp(body: items[0].body.bytes, rootKey: rootKey("43")).headerValue
        #expect(consoleError { _ = try w.handle(.stamps(["suborg-a": foreign])) }?.code == "invalid_stamp")
        let stamp = try UserRecovery.stamp(body: items[0].body.bytes, rootKey: key).headerValue
        guard case .summary(let summary) = try w.handle(.stamps(["suborg-a": stamp])) else { throw Failure.unexpected }
        #expect(summary.proof == .remote)
        #expect(summary.teardown.map(\.stamp) == [stamp, nil])
        #expect(summary.teardownStatus.contains("queued for `cleanup`"))
        #expect(summary.nextSteps.contains { $0.contains("Re-enroll") })
        #expect(w.step == .finished)
    }

    @Test func presentUserProofFoundByFactor() throws {
        let f = try Fixture()
        let key = rootKey("42")
        let id = try f.addBackup(key)
        let passkey = try #require(
            f.store.lookupRows(tenant: f.session.tenantName, backupId: id.rawValue).first {
                $0.pk.hasPrefix("MAIN#PK|")
            })
        var w = try walk(f)
        _ = try toProof(&w, query: "passkey " + passkey.pk.dropFirst("MAIN#PK|".count))
        // The wrong Root Key is refused before anything is signed.
        #expect(consoleError { _ = try w.handle(.presentProof(rootKey("43"))) }?.code == "signature_verification_error")
        _ = try w.handle(.presentProof(key))
        _ = try w.handle(.confirm(tenantName: "sandbox"))
        guard case .teardown(_, let items, let needStamps) = try w.handle(.wipe) else { throw Failure.unexpected }
        #expect(!needStamps)
        let backupKey = try BackupAccountID(id.rawValue).publicKey
        for item in items {
            let stamp = try TurnkeyStamp(headerValue: try #require(item.stamp))
            #expect(stamp.scheme == .secp256k1 && stamp.publicKey == backupKey)
            #expect(stamp.verify(body: item.body.bytes) == .valid)
        }
        guard case .summary(let summary) = try w.handle(.skipStamps) else { throw Failure.unexpected }
        #expect(summary.proof == .present && summary.result.lookupRowsRemoved == 3)
    }

    @Test func wrongTenantNameAtConfirmChangesNothing() throws {
        let f = try Fixture()
        let key = rootKey("42")
        let id = try f.addBackup(key)
        var w = try walk(f)
        let challenge = try toProof(
            &w,
            query: "MAIN#"
                + (try f.store.lookupRows(tenant: f.session.tenantName, backupId: id.rawValue)
                    .first { $0.pk.hasPrefix("MAIN#OIDC|") }?.pk.dropFirst(5) ?? ""))
        _ = try w.handle(.remoteProof(signature: try UserRecovery.signChallenge(challenge, rootKey: key)))
        let before = try f.snapshot(ids: [id])
        #expect(consoleError { _ = try w.handle(.confirm(tenantName: "production")) }?.code == "not_confirmed")
        #expect(w.step == .confirm)
        #expect(consoleError { _ = try w.handle(.wipe) }?.code == "usage")
        #expect(try w.handle(.abort) == .aborted(step: "confirm"))
        #expect(try f.snapshot(ids: [id]) == before)
        #expect(before.backups == [id.rawValue])
    }

    @Test func findRefusals() throws {
        let f = try Fixture()
        var w = try walk(f)
        #expect(consoleError { _ = try w.handle(.identify("passkey nope")) }?.code == "not_found")
        #expect(consoleError { _ = try w.handle(.identify("fax 123")) }?.code == "invalid_query")
        #expect(consoleError { _ = try w.handle(.identify("backup_account_00")) }?.code == "invalid_backup_account_id")
        #expect(w.step == .find)
        let viewer = try f.session(role: .viewer, name: "vi")
        #expect(consoleError { _ = try ResetWalkthrough(store: f.store, session: viewer) }?.code == "permission_denied")
    }
}
