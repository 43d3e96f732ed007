import Access
import BackupCrypto
import BackupModel
import BackupctlTestSupport
import ConsoleStore
import Foundation
import Testing
import Turnkey

@testable import Cleanup
@testable import TurnkeySandbox

@Suite("signer chain and activity outcomes over loopback HTTP", .timeLimit(.minutes(10)))
struct SignerChainTests {
    /// A Backup Account Key and the sub-org users that make it the only deleter of a sub-org.
    struct BreakGlass {
        let signer: Secp256k1StampSigner
        let users: [SandboxUser]

        init(seed: UInt64) throws {
            signer = try Secp256k1StampSigner(
                rootKey: RootKey(version: .v1, secret: SeededRandom(seed: seed).secretBytes(32)))
            let main = SandboxUser(
                name: "auth_user_main", publicKey: "03" + String(repeating: "cd", count: 32),
                scheme: TurnkeyStamp.Scheme.p256.rawValue, canDelete: false)
            users = [main, SandboxUser.breakGlass(publicKeyHex: Hex.encode(try signer.compressedPublicKey()))]
        }

        func stamp(_ body: String) throws -> String {
            try TurnkeyStamp.sign(body: Array(body.utf8), with: signer).headerValue
        }
    }

    @Test(
        "cleanup key PUBLIC_KEY_NOT_FOUND → needsUser; the user's stamped teardown request then deletes it",
        arguments: TestBackend.available)
    func breakGlassAfterPublicKeyNotFound(backend: TestBackend) async throws {
        let fixture = try await CleanupFixture(orphanCount: 3, backend: backend)
        defer { Task { await fixture.stop() } }
        let target = fixture.orphans[0]
        let user = try BreakGlass(seed: 5)
        #expect(user.users[1].name.hasPrefix("break_glass_user_") && user.users[1].name.count == 23)
        await fixture.sandbox.setUsers(user.users, of: target)
        let service = fixture.service()
        let session = fixture.session
        let run = try await service.run(session: session, options: CleanupRunOptions(execute: true, graceSeconds: 0))
        let item = try #require(run.items.first { $0.subOrgId == target })
        #expect(item.outcome == "needsUser")
        #expect(item.error?.contains("PUBLIC_KEY_NOT_FOUND") == true)
        #expect(run.deleted == 2 && run.needsUser == 1)

        // `cleanup teardown-request`: the journaled body, the very bytes the cleanup key sent.
        let body = try await service.teardownRequest(session: session, subOrgId: target)
        #expect(try await fixture.store.cleanupItem(tenant: session.tenantName, subOrgId: target)?.body == body)
        #expect(await fixture.sandbox.deleteBodies[target] == [body])
        let stamp = try user.stamp(body)

        // A stamp over other bytes, or a body other than the journaled one, is refused with no change.
        await #expect(throws: ConsoleError.self) {
            _ = try await service.submit(session: session, body: Array((body + "\n").utf8), stamp: stamp)
        }
        let otherBody = try TurnkeyActivityBody.deleteSubOrganization(subOrgId: target, timestampMs: 1).text
        let otherStamp = try user.stamp(otherBody)
        do {
            _ = try await service.submit(session: session, body: Array(otherBody.utf8), stamp: otherStamp)
            Issue.record("a second body for one sub-org must be refused")
        } catch {
            #expect(error.code == "body_mismatch")
        }
        #expect(try await fixture.store.stampedTeardown(tenant: session.tenantName, subOrgId: target) == nil)

        // `cleanup submit` on the tenant's grace (24 h): first seen at the run just now, so it is
        // journaled and not sent.
        let early = try await service.submit(session: session, body: Array(body.utf8), stamp: stamp)
        #expect(early.outcome == "skipped" && early.error?.hasSuffix("waiting for grace") == true)
        #expect(await fixture.sandbox.deleteBodies[target] == [body])
        // With the run's --grace 0: cleanup key first (PUBLIC_KEY_NOT_FOUND again), then the stamped request.
        let submitted = try await service.submit(
            session: session, body: Array(body.utf8), stamp: stamp, graceSeconds: 0)
        #expect(submitted.outcome == "deleted")
        #expect(!(try await fixture.listed()).contains(target))
        let sent = await fixture.sandbox.deleteBodies[target] ?? []
        #expect(sent.count == 3 && Set(sent) == [body])
        let audit = try await fixture.store.latestAuditEntries(tenant: session.tenantName, limit: 100)
        #expect(
            audit.contains {
                $0.action == "cleanup.delete" && $0.target == target && $0.details["signer"] == "break_glass"
            })
        #expect(audit.contains { $0.action == "cleanup.submit" && $0.target == target })
        await #expect(try service.status(session: session).needsUser == 0)
    }

    @Test(
        "no signer left: a stamp by another key, or no cleanup key and no stamp, is needsUser",
        arguments: TestBackend.available)
    func needsUserWhenNoSignerLeft(backend: TestBackend) async throws {
        let fixture = try await CleanupFixture(orphanCount: 2, backend: backend)
        defer { Task { await fixture.stop() } }
        let target = fixture.orphans[0]
        await fixture.sandbox.setUsers(try BreakGlass(seed: 5).users, of: target)
        let service = fixture.service()
        let session = fixture.session
        let body = try await service.teardownRequest(session: session, subOrgId: target)
        // Stamped with the wrong Root Key: the stamp is valid for the body, the key is not in the sub-org.
        let item = try await service.submit(
            session: session, body: Array(body.utf8), stamp: try BreakGlass(seed: 6).stamp(body), graceSeconds: 0)
        #expect(item.outcome == "needsUser")
        #expect(item.error?.contains("break_glass is not a user of the sub-org") == true)
        #expect(await fixture.sandbox.deleteBodies[target] == [body, body])

        // A tenant without a cleanup key and no submitted stamp has no signer at all.
        var noKey = fixture.connection
        noKey.cleanupKey = nil
        let bare = CleanupService(
            store: fixture.store, connection: noKey, timing: .virtual(fixture.time), random: SeededRandom(seed: 1))
        let run = try await bare.run(session: session, options: CleanupRunOptions(execute: true, graceSeconds: 0))
        let other = try #require(run.items.first { $0.subOrgId == fixture.orphans[1] })
        #expect(other.outcome == "needsUser")
        #expect(other.error?.contains("no signer") == true)
        #expect(await fixture.sandbox.deleteBodies[fixture.orphans[1]] == nil)
    }

    @Test(
        "PENDING is polled a bounded number of times; the next run re-sends the same body and finishes",
        arguments: TestBackend.available)
    func pendingBoundedPolling(backend: TestBackend) async throws {
        let fixture = try await CleanupFixture(
            orphanCount: 4, faults: SandboxFaults(pendingRate: 1, pendingPolls: 6), backend: backend)
        defer { Task { await fixture.stop() } }
        let counter = RequestCounter()
        let service = fixture.service(transport: CountingTransport(inner: HTTPClientTransport(), counter: counter))
        let first = try await service.run(
            session: fixture.session,
            options: CleanupRunOptions(execute: true, concurrency: 2, graceSeconds: 0, maxPolls: 2))
        #expect(first.items.allSatisfy { $0.outcome == "pending" && $0.error?.contains("still pending") == true })
        #expect(counter.count(TurnkeyWire.getActivityPath) == 4 * 2)
        #expect(try await fixture.store.cleanupItems(tenant: fixture.session.tenantName, states: [.pending]).count == 4)
        #expect(try await fixture.listed().isSuperset(of: fixture.orphans))

        let second = try await service.run(
            session: fixture.session,
            options: CleanupRunOptions(execute: true, concurrency: 2, graceSeconds: 0, maxPolls: 10))
        #expect(second.deleted == 4)
        #expect(counter.count(TurnkeyWire.getActivityPath) == 4 * 6)
        let bodies = await fixture.sandbox.deleteBodies
        for id in fixture.orphans {
            #expect(bodies[id]?.count == 2 && Set(bodies[id] ?? []).count == 1)
        }
        #expect(try await fixture.listed() == Set(fixture.referenced))
    }

    @Test("CONSENSUS_NEEDED and REJECTED are reported at once, never polled", arguments: TestBackend.available)
    func consensusAndRejectedNotWaitedOn(backend: TestBackend) async throws {
        let fixture = try await CleanupFixture(orphanCount: 3, backend: backend)
        defer { Task { await fixture.stop() } }
        let held = fixture.orphans[0]
        let refused = fixture.orphans[1]
        await fixture.sandbox.setFaults(SandboxFaults(consensusSubOrgs: [held], rejectedSubOrgs: [refused]))
        let counter = RequestCounter()
        let service = fixture.service(transport: CountingTransport(inner: HTTPClientTransport(), counter: counter))
        let report = try await service.run(
            session: fixture.session, options: CleanupRunOptions(execute: true, graceSeconds: 0, maxPolls: 50))
        let heldItem = try #require(report.items.first { $0.subOrgId == held })
        let refusedItem = try #require(report.items.first { $0.subOrgId == refused })
        #expect(heldItem.outcome == "needsUser" && heldItem.error?.contains("consensus") == true)
        #expect(refusedItem.outcome == "failed" && refusedItem.error?.contains("ACTIVITY_STATUS_REJECTED") == true)
        #expect(heldItem.attempts == 1 && refusedItem.attempts == 1)
        #expect(counter.count(TurnkeyWire.getActivityPath) == 0)
        #expect(report.deleted == 1)
        #expect(try await fixture.listed().isSuperset(of: [held, refused]))
    }

    @Test(
        "404 after our own delete (answer lost, activity forgotten) is alreadyGone, same body",
        arguments: TestBackend.available)
    func notFoundAfterOwnDeleteIsAlreadyGone(backend: TestBackend) async throws {
        let fixture = try await CleanupFixture(orphanCount: 3, backend: backend)
        defer { Task { await fixture.stop() } }
        let target = fixture.orphans[1]
        let sandbox = fixture.sandbox
        let once = OutageSwitch()
        let service = fixture.service(
            transport: AfterSendTransport(inner: HTTPClientTransport()) { request throws(TurnkeyError) in
                guard request.path == TurnkeyWire.deleteSubOrganizationPath, !once.on,
                    String(decoding: request.body, as: UTF8.self).contains(target)
                else { return }
                once.on = true
                // Turnkey deleted it, the answer was lost, and the activity is no longer found by fingerprint.
                await sandbox.forgetActivities()
                throw TurnkeyError(.transport, message: "connection reset by peer")
            })
        let report = try await service.run(
            session: fixture.session, options: CleanupRunOptions(execute: true, graceSeconds: 0))
        let item = try #require(report.items.first { $0.subOrgId == target })
        #expect(item.outcome == "alreadyGone")
        #expect(item.attempts == 2)
        #expect(report.deleted == 2 && report.alreadyGone == 1)
        let sent = await fixture.sandbox.deleteBodies[target] ?? []
        #expect(sent.count == 2 && Set(sent).count == 1)
        let audit = try await fixture.store.latestAuditEntries(tenant: fixture.session.tenantName, limit: 100)
        #expect(audit.contains { $0.action == "cleanup.already_gone" && $0.target == target })
        #expect(
            try await fixture.store.cleanupItem(tenant: fixture.session.tenantName, subOrgId: target)?.state
                == .alreadyGone)
    }

    @Test(
        "--max refuses a run with more eligible sub-orgs, says how many and how to go on, deletes nothing",
        arguments: TestBackend.available)
    func maxExceeded(backend: TestBackend) async throws {
        let fixture = try await CleanupFixture(orphanCount: 7, backend: backend)
        defer { Task { await fixture.stop() } }
        let service = fixture.service()
        do {
            _ = try await service.run(
                session: fixture.session, options: CleanupRunOptions(execute: true, max: 3, graceSeconds: 0))
            Issue.record("the run should have been refused")
        } catch {
            #expect(error.code == "max_exceeded")
            #expect(error.message.contains("7 sub-orgs"))
            #expect(error.message.contains("--max 3"))
            #expect(error.message.contains("--max 7"))
            #expect(error.message.contains("nothing was deleted"))
        }
        #expect(await fixture.sandbox.deleteBodies.isEmpty)
        // A dry run honours --max too, so it predicts what --execute will do.
        let dryError = await #expect(throws: ConsoleError.self) {
            _ = try await service.run(
                session: fixture.session, options: CleanupRunOptions(execute: false, max: 3, graceSeconds: 0))
        }
        #expect(dryError?.code == "max_exceeded")
        // Exactly --max eligible is allowed.
        let dry = try await service.run(
            session: fixture.session, options: CleanupRunOptions(execute: false, max: 7, graceSeconds: 0))
        #expect(dry.items.count == 7)
        let report = try await service.run(
            session: fixture.session, options: CleanupRunOptions(execute: true, max: 7, graceSeconds: 0))
        #expect(report.deleted == 7)
    }
}

extension TurnkeySandbox {
    /// Drops every activity record: a resend is then judged on the org alone (404 once it is gone).
    func forgetActivities() {
        activities = [:]
        fingerprintsById = [:]
    }
}

/// Counts requests per path.
final class RequestCounter: @unchecked Sendable {
    private let lock = NSLock()
    private var counts: [String: Int] = [:]
    func add(_ path: String) { lock.withLock { counts[path, default: 0] += 1 } }
    func count(_ path: String) -> Int { lock.withLock { counts[path] ?? 0 } }
}

struct CountingTransport: TurnkeyTransport {
    let inner: any TurnkeyTransport
    let counter: RequestCounter

    func send(_ request: TurnkeyHTTPRequest) async throws(TurnkeyError) -> TurnkeyHTTPResponse {
        counter.add(request.path)
        return try await inner.send(request)
    }
}

/// Sends, then runs a hook that may replace the answer with a failure (a lost response).
struct AfterSendTransport: TurnkeyTransport {
    let inner: any TurnkeyTransport
    let hook: @Sendable (TurnkeyHTTPRequest) async throws(TurnkeyError) -> Void

    func send(_ request: TurnkeyHTTPRequest) async throws(TurnkeyError) -> TurnkeyHTTPResponse {
        let response = try await inner.send(request)
        try await hook(request)
        return response
    }
}
