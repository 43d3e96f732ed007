import Access
import BackupCrypto
import BackupModel
import BackupctlTestSupport
import ConsoleStore
import Foundation
import Inspect
import Recovery
import Testing
import Turnkey

@Suite struct ResetWalkthroughTests {
    func walk(_ f: Fixture, session: Session? = nil) async throws -> ResetWalkthrough {
        try await ResetWalkthrough(
            store: f.store, session: session ?? f.session, service: try await f.service(),
            finder: TestLookupFinder(store: f.store), clock: f.clock)
    }

    /// Drives find → review → proof and returns the challenge shown.
    func toProof(_ w: inout ResetWalkthrough, query: String) async throws -> [UInt8] {
        guard case .review(let review) = try await w.handle(.identify(query)) else { throw Failure.unexpected }
        #expect(review.factors.count == 2 && review.devices.count == 1 && review.lookupRows == 3)
        #expect(review.turnkeySubOrgIds == ["suborg-a", "suborg-b"])
        #expect(review.notWiped.contains { $0.contains("Root Key") })
        guard case .proof(_, let challenge, _) = try await w.handle(.proceed) else { throw Failure.unexpected }
        return try UserRecovery.challengeBytes(base64: challenge)
    }

    enum Failure: Error { case unexpected }

    @Test(arguments: TestBackend.available)
    func remoteProofWithStampsPastedByTheUser(backend: TestBackend) async throws {
        let f = try await Fixture(backend)
        let key = rootKey("42")
        let id = try await f.addBackup(key)
        var w = try await walk(f)
        #expect(w.firstPrompt == .askIdentity)
        let challenge = try await toProof(&w, query: id.rawValue)
        // A mistyped signature is refused and the step stays.
        let wrong = try UserRecovery.signChallenge(challenge, rootKey: rootKey("43"))
        #expect(
            await consoleError { _ = try await w.handle(.remoteProof(signature: wrong)) }?.code
                == "signature_verification_error")
        #expect(w.step == .proof)
        let signature = try UserRecovery.signChallenge(challenge, rootKey: key)
        #expect(
            try await w.handle(.remoteProof(signature: signature)) == .confirm(tenant: "sandbox", backupId: id.rawValue)
        )
        #expect(try await w.handle(.confirm(tenantName: "sandbox")) == .readyToWipe(backupId: id.rawValue))
        guard case .teardown(let result, let items, let needStamps) = try await w.handle(.wipe) else {
            throw Failure.unexpected
        }
        #expect(result.backupId == id.rawValue && needStamps)
        #expect(items.map(\.subOrgId) == ["suborg-a", "suborg-b"])
        #expect(items.allSatisfy { $0.stamp == nil && $0.body.text.contains("\"organizationId\":\"\($0.subOrgId)\"") })
        #expect(try await f.store.backup(tenant: f.session.tenantName, id: id.rawValue) == nil)

        // A stamp by another key is refused; the user's stamp over the exact body is accepted.
        let foreign = try UserRecovery.stamp(body: items[0].body.bytes, rootKey: rootKey("43")).headerValue
        #expect(await consoleError { _ = try await w.handle(.stamps(["suborg-a": foreign])) }?.code == "invalid_stamp")
        let stamp = try UserRecovery.stamp(body: items[0].body.bytes, rootKey: key).headerValue
        guard case .summary(let summary) = try await w.handle(.stamps(["suborg-a": stamp])) else {
            throw Failure.unexpected
        }
        #expect(summary.proof == .remote)
        #expect(summary.teardown.map(\.stamp) == [stamp, nil])
        #expect(summary.teardownStatus.contains("queued for `cleanup`"))
        #expect(summary.nextSteps.contains { $0.contains("Re-enroll") })
        #expect(w.step == .finished)
    }

    @Test(arguments: TestBackend.available)
    func presentUserProofFoundByFactor(backend: TestBackend) async throws {
        let f = try await Fixture(backend)
        let key = rootKey("42")
        let id = try await f.addBackup(key)
        let passkey = try await #require(
            f.store.lookupRows(tenant: f.session.tenantName, backupId: id.rawValue).first {
                $0.pk.hasPrefix("MAIN#PK|")
            })
        var w = try await walk(f)
        _ = try await toProof(&w, query: "passkey " + passkey.pk.dropFirst("MAIN#PK|".count))
        // The wrong Root Key is refused before anything is signed.
        #expect(
            await consoleError { _ = try await w.handle(.presentProof(rootKey("43"))) }?.code
                == "signature_verification_error")
        _ = try await w.handle(.presentProof(key))
        _ = try await w.handle(.confirm(tenantName: "sandbox"))
        guard case .teardown(_, let items, let needStamps) = try await w.handle(.wipe) else { throw Failure.unexpected }
        #expect(!needStamps)
        let backupKey = try BackupAccountID(id.rawValue).publicKey
        for item in items {
            let stamp = try TurnkeyStamp(headerValue: try #require(item.stamp))
            #expect(stamp.scheme == .secp256k1 && stamp.publicKey == backupKey)
            #expect(stamp.verify(body: item.body.bytes) == .valid)
        }
        guard case .summary(let summary) = try await w.handle(.skipStamps) else { throw Failure.unexpected }
        #expect(summary.proof == .present && summary.result.lookupRowsRemoved == 3)
    }

    @Test(arguments: TestBackend.available)
    func wrongTenantNameAtConfirmChangesNothing(backend: TestBackend) async throws {
        let f = try await Fixture(backend)
        let key = rootKey("42")
        let id = try await f.addBackup(key)
        var w = try await walk(f)
        let oidc = try #require(
            try await f.store.lookupRows(tenant: f.session.tenantName, backupId: id.rawValue)
                .first { $0.pk.hasPrefix("MAIN#OIDC|") })
        let parts = oidc.pk.split(separator: "|", maxSplits: 2)
        let challenge = try await toProof(&w, query: "oidc \(parts[1]) \(parts[2])")
        _ = try await w.handle(.remoteProof(signature: try UserRecovery.signChallenge(challenge, rootKey: key)))
        let before = try await f.snapshot(ids: [id])
        #expect(
            await consoleError { _ = try await w.handle(.confirm(tenantName: "production")) }?.code == "not_confirmed")
        #expect(w.step == .confirm)
        #expect(await consoleError { _ = try await w.handle(.wipe) }?.code == "usage")
        #expect(try await w.handle(.abort) == .aborted(step: "confirm"))
        await #expect(try f.snapshot(ids: [id]) == before)
        #expect(before.backups == [id.rawValue])
    }

    @Test(arguments: TestBackend.available)
    func findRefusals(backend: TestBackend) async throws {
        let f = try await Fixture(backend)
        var w = try await walk(f)
        #expect(await consoleError { _ = try await w.handle(.identify("passkey nope")) }?.code == "not_found")
        #expect(await consoleError { _ = try await w.handle(.identify("fax 123")) }?.code == "invalid_query")
        #expect(
            await consoleError { _ = try await w.handle(.identify("backup_account_00")) }?.code
                == "invalid_backup_account_id")
        #expect(w.step == .find)
        let viewer = try await f.session(role: .viewer, name: "vi")
        #expect(await consoleError { _ = try await walk(f, session: viewer) }?.code == "permission_denied")
        await f.stop()
    }

    /// The walkthrough finds backups by the lookup service's rules: an index row whose factor
    /// the backup no longer has is `unauthorized_factor` for both, never a hit.
    @Test(arguments: TestBackend.available)
    func findAgreesWithLookupOnUnauthorizedFactors(backend: TestBackend) async throws {
        let f = try await Fixture(backend)
        let id = try await f.addBackup(rootKey("42"))
        let stale = Base64.encode([UInt8](repeating: 9, count: 16), alphabet: .url, padding: false)
        try await f.store.writeLookupRows(
            tenant: f.session.tenantName, [LookupRow(pk: "MAIN#PK|\(stale)", backupId: id.rawValue)],
            audit: f.session.audit("test.drift"))
        let lookup = await consoleError {
            _ = try await LookupService(store: f.store).lookup(.passkey(credentialId: stale), session: f.session)
        }
        var w = try await walk(f)
        let found = await consoleError { _ = try await w.handle(.identify("passkey \(stale)")) }
        #expect(lookup?.code == "unauthorized_factor" && found?.code == "unauthorized_factor")
        #expect(w.step == .find)
        await f.stop()
    }
}

/// The console's finder (AdminREPL's `LookupFinder`): the lookup service's rules.
struct TestLookupFinder: BackupFinder {
    let store: any ConsoleStore

    func find(_ query: String, session: Session) async throws(ConsoleError) -> BackupRecord {
        let result = try await LookupService(store: store).lookup(try LookupQuery(text: query), session: session)
        guard let record = try await store.backup(tenant: session.tenantName, id: result.backupId) else {
            throw .notFound("Backup \(result.backupId) does not exist.")
        }
        return record
    }
}
