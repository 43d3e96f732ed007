import Access
import BackupCrypto
import BackupModel
import BackupService
import BackupctlTestSupport
import ConsoleStore
import Foundation
import Recovery
import Testing

@Suite(.timeLimit(.minutes(10))) struct ResetServiceTests {
    @Test func vectorSignatureIsByteIdenticalAndVerifies() throws {
        let v = ResetVector.shared
        let key = try UserRecovery.rootKey(json: Array(v.rootKeyJson.utf8))
        #expect(try UserRecovery.backupAccountID(rootKey: key).rawValue == v.backupAccountId)
        let challenge = try UserRecovery.challengeBytes(base64: v.challengeBase64)
        #expect(try UserRecovery.signChallenge(challenge, rootKey: key) == v.signatureBase64)
        let id = try BackupAccountID(v.backupAccountId)
        try ResetService.verify(signature: v.signatureBase64, challenge: challenge, publicKey: id.publicKey)
    }

    /// The whole live-tenant path over loopback HTTP: status, challenge, /v1/reset, local part.
    @Test(arguments: TestBackend.available)
    func beginThenCompleteThroughTheService(backend: TestBackend) async throws {
        let f = try await Fixture(backend)
        let key = rootKey("42")
        let id = try await f.addBackup(key)
        let keep = try await f.addBackup(rootKey("43"), subOrgs: ["suborg-c"])
        let service = try await f.service()
        let begun = try await service.begin(backupAccountId: id.rawValue, session: f.session)
        #expect(begun.challenge.count == 32)
        #expect(begun.tokenText.hasPrefix("sbx."))
        #expect(begun.expiresAt == f.clock.seconds + 900)
        #expect(begun.factors.map(\.kind) == ["PASSKEY", "OIDC_ACCOUNT"])
        #expect(begun.factors.map(\.accountKind) == [nil, "GOOGLE"])
        let stored = try #require(try await f.store.resetChallenge(tokenHash: begun.tokenHash))
        #expect(stored.context == "reset" && stored.backupId == id.rawValue && stored.challenge == begun.challenge)

        let signature = try UserRecovery.signChallenge(begun.challenge, rootKey: key)
        let result = try await service.complete(token: begun.token, signature: signature, session: f.session)
        #expect(
            result
                == ResetResult(
                    backupId: id.rawValue, wiped: true, lookupRowsRemoved: 3,
                    turnkeySubOrgIds: ["suborg-a", "suborg-b"]))
        let after = try await f.snapshot(ids: [id, keep], tokenHashes: [begun.tokenHash])
        #expect(after.backups == [keep.rawValue])
        #expect(after.blobs[id.rawValue] == nil && after.lookupRows[id.rawValue] == [])
        #expect(after.lookupRows[keep.rawValue]?.count == 3)
        #expect(after.cleanup == ["suborg-a:reset", "suborg-b:reset"])
        #expect(after.challenges[begun.tokenHash] != nil)

        // The audit has both steps and never the token or the signature.
        let entries = try await f.store.auditEntries(tenant: f.session.tenantName, afterSeq: 0, limit: 1000)
        let resets = entries.filter { $0.action.hasPrefix("reset.") }
        #expect(resets.map(\.action) == ["reset.begin", "reset.complete"])
        #expect(resets.last?.details["via"] == "backup_service")
        for entry in entries {
            let text = String(decoding: entry.canonicalBytes, as: UTF8.self)
            #expect(!text.contains(begun.tokenText) && !text.contains(String(begun.tokenText.dropFirst(4))))
            #expect(!text.contains(signature) && !text.contains(begun.challengeBase64))
            #expect(!text.contains(begun.tokenHash))
        }
        #expect(resets.allSatisfy { $0.details["tokenHashPrefix"] == String(begun.tokenHash.prefix(12)) })
        await f.stop()
    }

    @Test(arguments: TestBackend.available)
    func beginRefusals(backend: TestBackend) async throws {
        let f = try await Fixture(backend)
        let service = try await f.service()
        let viewer = try await f.session(role: .viewer, name: "vera")
        let id = try await f.addBackup(rootKey("42"))
        let unknown = try BackupAccountKey.derive(rootKey: rootKey("44"))
        let offCurve = "backup_account_02" + String(repeating: "ff", count: 32)
        let cases: [(String, Session, String)] = [
            ("backup_account_zz", f.session, "invalid_backup_account_id"),
            ("account_02", f.session, "invalid_backup_account_id"),
            (offCurve, f.session, "invalid_backup_account_id"),
            (unknown.rawValue, f.session, "not_found"),  // the service's status answer
            (id.rawValue, viewer, "permission_denied"),
        ]
        for (text, session, code) in cases {
            let before = try await f.snapshot(ids: [id])
            #expect(
                await consoleError { _ = try await service.begin(backupAccountId: text, session: session) }?.code
                    == code)
            await #expect(try f.snapshot(ids: [id]) == before)
        }
        // A support operator may.
        _ = try await service.begin(backupAccountId: id.rawValue, session: try f.session(role: .support, name: "sam"))
        await f.stop()
    }

    /// The answer to /v1/reset is lost after the service committed: status says not_found, so
    /// the console finishes the local part and says how it knew.
    @Test(arguments: TestBackend.available)
    func droppedAnswerAfterCommitIsResolvedByStatus(backend: TestBackend) async throws {
        let f = try await Fixture(backend)
        let key = rootKey("42")
        let id = try await f.addBackup(key)
        let service = try await f.service()
        let begun = try await service.begin(backupAccountId: id.rawValue, session: f.session)
        f.faults.dropAfterReset()
        let result = try await service.complete(
            token: begun.token, signature: try UserRecovery.signChallenge(begun.challenge, rootKey: key),
            session: f.session)
        #expect(result.resolvedBy == "status" && result.turnkeySubOrgIds == ["suborg-a", "suborg-b"])
        let after = try await f.snapshot(ids: [id], tokenHashes: [begun.tokenHash])
        #expect(after.backups.isEmpty && after.cleanup == ["suborg-a:reset", "suborg-b:reset"])
        let last = try #require(try await f.store.latestAuditEntries(tenant: f.session.tenantName, limit: 1).first)
        #expect(last.action == "reset.complete" && last.details["resolvedBy"] == "status")
        await f.stop()
    }

    /// The answer is lost and nothing happened: status still finds the backup. Exit 2, the
    /// console's copy untouched, and the same token still works afterwards.
    @Test func droppedAnswerBeforeCommitSaysTheResetDidNotHappen() async throws {
        let (f, id, service, begun, signature) = try await Self.begun()
        let before = try await f.snapshot(ids: [id])
        f.faults.dropBeforeReset()
        let error = await consoleError {
            _ = try await service.complete(token: begun.token, signature: signature, session: f.session)
        }
        #expect(error?.code == "reset_not_applied" && error?.kind == .remote)
        #expect(error?.message.contains("already_used") == true)
        await #expect(try f.snapshot(ids: [id]) == before)
        let result = try await service.complete(token: begun.token, signature: signature, session: f.session)
        #expect(result.wiped && result.resolvedBy == nil)
        await f.stop()
    }

    /// A console killed after the service's 204 but before its own record: the rerun's
    /// not_found from the service is recognised as that reset (the ledger says it was sent).
    @Test func rerunAfterAnUnrecordedSendFinishesTheLocalPart() async throws {
        let (f, id, service, begun, signature) = try await Self.begun()
        // What the killed process did: claimed and marked the ledger sent; the service reset the backup.
        let killed = try ChildProcess.start("/bin/true", [], environment: [:])
        _ = await killed.wait(seconds: 60)
        let host = ProcessInfo.processInfo.hostName
        #expect(
            try await f.store.claimResetSend(
                tokenHash: begun.tokenHash, subOrgIds: ["suborg-a", "suborg-b"],
                holder: "root@\(host):\(killed.pid):dead", now: 1, until: 4_000_000_000, takeOver: nil)
                == .claimed(sentBefore: false))
        #expect(
            try await f.store.sandboxServiceReset(
                tenant: f.session.tenantName, tokenHash: SHA256.hex(Array(begun.tokenText.utf8)), backupId: id.rawValue,
                now: 1))
        let result = try await service.complete(token: begun.token, signature: signature, session: f.session)
        #expect(result.resolvedBy == "status" && result.turnkeySubOrgIds == ["suborg-a", "suborg-b"])
        await #expect(try f.snapshot(ids: [id]).cleanup == ["suborg-a:reset", "suborg-b:reset"])
        await f.stop()
    }

    /// Two consoles completing one token at once: while one is sending it, the other is refused
    /// (`reset_in_progress`, audited) and changes nothing, so a send in flight is never taken for
    /// a lost earlier one.
    @Test func aSendInFlightElsewhereRefusesASecondSender() async throws {
        let (f, id, service, begun, signature) = try await Self.begun()
        #expect(
            try await f.store.claimResetSend(
                tokenHash: begun.tokenHash, subOrgIds: [], holder: "other@elsewhere:1:live", now: 1,
                until: 4_000_000_000, takeOver: nil) == .claimed(sentBefore: false))
        let before = try await f.snapshot(ids: [id])
        let error = await consoleError {
            _ = try await service.complete(token: begun.token, signature: signature, session: f.session)
        }
        #expect(error?.code == "reset_in_progress" && error?.kind == .conflict)
        await #expect(try f.snapshot(ids: [id]) == before)
        let refused = try await f.store.latestAuditEntries(tenant: f.session.tenantName, limit: 1).first
        #expect(refused?.action == "reset.refused" && refused?.details["code"] == "reset_in_progress")
        // Once that sender lets go (its send answered and refused), this console sends.
        try await f.store.releaseResetSend(tokenHash: begun.tokenHash, holder: "other@elsewhere:1:live")
        let result = try await service.complete(token: begun.token, signature: signature, session: f.session)
        #expect(result.wiped && result.resolvedBy == nil)
        await f.stop()
    }

    /// The service checks the sealed blob (HEAD of `{id}/backup`), not the metadata: a backup
    /// without a blob cannot be reset, and the refusal says so (status still finds the
    /// metadata). A second try is the same refusal: a refused send is not a lost one.
    @Test func aBackupWithoutABlobIsNotFoundForTheService() async throws {
        let (f, id, service, begun, signature) = try await Self.begun(withBlob: false)
        let before = try await f.snapshot(ids: [id])
        for _ in 0..<2 {
            let error = await consoleError {
                _ = try await service.complete(token: begun.token, signature: signature, session: f.session)
            }
            #expect(error?.code == "not_found" && error?.kind == .notFound)
            #expect(error?.message.contains("has none, so the service cannot reset it") == true)
        }
        await #expect(try f.snapshot(ids: [id]) == before)
        await f.stop()
    }

    /// A send the service refused (here a signature from another key) changed nothing there, so
    /// the ledger does not count it as sent: when the backup is later gone at the service for
    /// another reason, the next try is refused `not_found`, never recorded as this reset.
    @Test func aRefusedSendIsNotTakenForALostOne() async throws {
        let (f, id, service, begun, signature) = try await Self.begun()
        let wrong = try UserRecovery.signChallenge(begun.challenge, rootKey: rootKey("43"))
        let refused = await consoleError {
            _ = try await service.complete(token: begun.token, signature: wrong, session: f.session)
        }
        #expect(refused?.code == "signature_verification_error")
        // The backup goes away at the service by another token (another reset, a deletion).
        #expect(
            try await f.store.sandboxServiceReset(
                tenant: f.session.tenantName, tokenHash: SHA256.hex(Array("another token".utf8)), backupId: id.rawValue,
                now: 1))
        let before = try await f.snapshot(ids: [id], tokenHashes: [begun.tokenHash])
        let gone = await consoleError {
            _ = try await service.complete(token: begun.token, signature: signature, session: f.session)
        }
        #expect(gone?.code == "not_found" && gone?.message.contains("has no backup") == true)
        await #expect(try f.snapshot(ids: [id], tokenHashes: [begun.tokenHash]) == before)
        let last = try await f.store.latestAuditEntries(tenant: f.session.tenantName, limit: 1).first
        #expect(last?.action == "reset.refused" && last?.details["code"] == "not_found")
        await f.stop()
    }

    @Test(arguments: TestBackend.available)
    func serviceFailuresAreExit2AndChangeNothing(backend: TestBackend) async throws {
        let f = try await Fixture(backend)
        let key = rootKey("42")
        let id = try await f.addBackup(key)
        let service = try await f.service()
        f.faults.fail("/v1/backup/status", status: 503, count: 5)
        let error = await consoleError { _ = try await service.begin(backupAccountId: id.rawValue, session: f.session) }
        #expect(error?.kind == .remote && error?.code == "internal_server_error")
        // One failure is retried away (status and challenge are safe to repeat).
        f.faults.fail("/v1/backup/status", status: 503, count: 1)
        let begun = try await service.begin(backupAccountId: id.rawValue, session: f.session)
        // /v1/reset is never retried: a 500 is relayed, exit 2.
        f.faults.fail("/v1/reset", status: 500, count: 1)
        let before = try await f.snapshot(ids: [id])
        let failed = await consoleError {
            _ = try await service.complete(
                token: begun.token, signature: try UserRecovery.signChallenge(begun.challenge, rootKey: key),
                session: f.session)
        }
        #expect(failed?.kind == .remote && failed?.code == "internal_server_error")
        // The service's deletes are not atomic: the operator learns it may have stopped part-way.
        #expect(failed?.message.contains("part-way") == true && failed?.message.contains("same token") == true)
        await #expect(try f.snapshot(ids: [id]) == before)
        await f.stop()
    }

    @Test(arguments: TestBackend.available)
    func unreachableServiceIsExit2(backend: TestBackend) async throws {
        let f = try await Fixture(backend)
        let id = try await f.addBackup(rootKey("42"))
        // A port nothing listens on: start a server, note its port, stop it.
        _ = try await f.service()
        let service = try await f.service()
        await f.stop()
        let error = await consoleError { _ = try await service.begin(backupAccountId: id.rawValue, session: f.session) }
        #expect(error?.kind == .remote && error?.code == "backup_service_unavailable")
    }

    /// A fixture with one backup (fixture key `42`), its reset service, a begun reset and the
    /// user's signature over its challenge.
    static func begun(withBlob: Bool = true) async throws -> (
        Fixture, BackupAccountID, ResetService, ResetChallenge, String
    ) {
        let f = try await Fixture()
        let key = rootKey("42")
        let id = try await f.addBackup(key, withBlob: withBlob)
        let service = try await f.service()
        let begun = try await service.begin(backupAccountId: id.rawValue, session: f.session)
        return (f, id, service, begun, try UserRecovery.signChallenge(begun.challenge, rootKey: key))
    }
}
