import BackupCrypto
import BackupModel
import Foundation
import Testing
import Turnkey

@testable import TurnkeySandbox

@Suite("the Turnkey sandbox over loopback HTTP: stamps, users, paging, fingerprints")
struct SandboxProtocolTests {
    enum Scheme: String, CaseIterable { case p256, secp256k1 }

    @Test("a stamp verifies over the exact body bytes; one byte more or changed is 401", arguments: Scheme.allCases)
    func stampOverExactBytes(scheme: Scheme) async throws {
        let h = try await SandboxHarness()
        defer { Task { await h.stop() } }
        // The cleanup key (P-256) is a user of every sub-org but breakGlassOrg; the break-glass key
        // (secp256k1) of breakGlassOrg only.
        let org = scheme == .p256 ? h.subOrgs[1] : h.breakGlassOrg
        let body = TurnkeyWire.encode(TurnkeyWire.OrganizationQuery(organizationId: org))
        func send(_ bytes: [UInt8], stamped: [UInt8]) async throws -> TurnkeyHTTPResponse {
            switch scheme {
            case .p256: try await h.post(TurnkeyWire.whoamiPath, bytes, signer: h.cleanup, stampedBytes: stamped)
            case .secp256k1:
                try await h.post(TurnkeyWire.whoamiPath, bytes, signer: h.breakGlass, stampedBytes: stamped)
            }
        }
        let ok = try await send(body, stamped: body)
        #expect(ok.status == 200)
        let who = try #require(TurnkeyWire.decode(TurnkeyWire.WhoamiResponse.self, ok.body))
        #expect(who.organizationId == org)
        #expect(
            who.username
                == (scheme == .p256 ? "sync_factor_user_cleanup" : "break_glass_user_\(try breakGlassSuffix(h))"))

        var changed = body
        changed[changed.count - 3] ^= 0x01  // one byte of the org id, still valid JSON
        let tampered = try await send(changed, stamped: body)
        #expect(tampered.status == 401)
        #expect(tampered.classified.kind == .unauthenticated)

        let longer = try await send(body + [0x20], stamped: body)
        #expect(longer.status == 401)
    }

    func breakGlassSuffix(_ h: SandboxHarness) throws -> String {
        String(Hex.encode(try h.breakGlass.compressedPublicKey()).suffix(6))
    }

    @Test("an unknown key gets 401 PUBLIC_KEY_NOT_FOUND with Turnkey's message")
    func unknownKey() async throws {
        let h = try await SandboxHarness()
        defer { Task { await h.stop() } }
        let stranger = P256StampSigner(privateKey: P256.generatePrivateKey(using: SeededRandom(seed: 999)))
        for org in [h.subOrgs[2], SandboxHarness.parent] {
            let answer = try await h.whoami(org, signer: stranger)
            #expect(answer.status == 401)
            #expect(answer.errorCode == "PUBLIC_KEY_NOT_FOUND")
            #expect(answer.payload?.message == "could not find public key in organization or its parent organization")
            #expect(answer.classified.kind == .publicKeyNotFound)
        }
        let strangerK1 = Secp256k1StampSigner(secretKey: SecretBytes(Array(repeating: 7, count: 32)))
        let k1 = try await h.delete(h.subOrgs[2], signer: strangerK1)
        #expect(k1.status == 401)
        #expect(k1.errorCode == "PUBLIC_KEY_NOT_FOUND")
    }

    @Test("only a user inside a sub-org may delete it; the parent's API key gets 403")
    func onlyInsideUsersDelete() async throws {
        let h = try await SandboxHarness()
        defer { Task { await h.stop() } }
        let target = h.subOrgs[3]
        // The parent key can read the sub-org…
        #expect(try await h.whoami(target, signer: h.api).status == 200)
        // …but not delete it.
        let parent = try await h.delete(target, signer: h.api)
        #expect(parent.status == 403)
        #expect(parent.errorCode == "PERMISSION_DENIED")
        #expect(parent.classified.kind == .forbidden)
        // The break-glass key is a user of its own sub-org only.
        let elsewhere = try await h.delete(target, signer: h.breakGlass)
        #expect(elsewhere.classified.kind == .publicKeyNotFound)
        // The cleanup key is not a user of the break-glass-only sub-org.
        let noCleanupUser = try await h.delete(h.breakGlassOrg, signer: h.cleanup)
        #expect(noCleanupUser.status == 401)
        #expect(noCleanupUser.errorCode == "PUBLIC_KEY_NOT_FOUND")
        // Users inside may.
        let own = try await h.delete(target, signer: h.cleanup)
        #expect(own.activity?.status == TurnkeyActivityStatus.completed)
        let breakGlass = try await h.delete(h.breakGlassOrg, signer: h.breakGlass)
        #expect(breakGlass.activity?.status == TurnkeyActivityStatus.completed)
        let left = try await h.listPage(limit: "100", after: nil)
        #expect(!left.contains(target) && !left.contains(h.breakGlassOrg))
        #expect(left.count == h.subOrgs.count - 2)
    }

    @Test("list_suborgs pages by limit and the after cursor")
    func paging() async throws {
        let h = try await SandboxHarness(subOrgCount: 250)
        defer { Task { await h.stop() } }
        let first = try await h.listPage(limit: "100", after: nil)
        let second = try await h.listPage(limit: "100", after: first.last)
        let third = try await h.listPage(limit: "100", after: second.last)
        let end = try await h.listPage(limit: "100", after: third.last)
        #expect(first.count == 100 && second.count == 100 && third.count == 50 && end.isEmpty)
        #expect(first + second + third == h.subOrgs)
        #expect(try await h.listPage(limit: "7", after: nil) == Array(h.subOrgs.prefix(7)))
        #expect(try await h.listPage(limit: "1000", after: nil).count == 100)  // Turnkey's maximum
        // A cursor that is not an id resumes after it in id order.
        let between = String(h.subOrgs[41].dropLast()) + "~"
        #expect(try await h.listPage(limit: "3", after: between) == Array(h.subOrgs[42..<45]))
        // The client's stream yields every id once, in order, one page at a time.
        var streamed: [String] = []
        var pages = 0
        for try await page in h.client().subOrganizations(of: SandboxHarness.parent, signer: .apiKey(h.apiKey)) {
            streamed += page
            pages += 1
        }
        #expect(streamed == h.subOrgs)
        #expect(pages == 3)
    }

    @Test("an identical body is the same activity; another timestampMs is a new one")
    func fingerprintDedup() async throws {
        let h = try await SandboxHarness()
        defer { Task { await h.stop() } }
        let held = h.subOrgs[4]
        await h.sandbox.setFaults(SandboxFaults(consensusSubOrgs: [held]))
        let a = try #require(try await h.delete(held, timestampMs: 1000, signer: h.cleanup).activity)
        let again = try #require(try await h.delete(held, timestampMs: 1000, signer: h.cleanup).activity)
        let other = try #require(try await h.delete(held, timestampMs: 1001, signer: h.cleanup).activity)
        #expect(a.status == TurnkeyActivityStatus.consensusNeeded)
        #expect(again.id == a.id && again.fingerprint == a.fingerprint)
        #expect(other.id != a.id && other.fingerprint != a.fingerprint)
        // A completed deletion: the same body answers the same activity even though the org is gone.
        let gone = h.subOrgs[5]
        let done = try #require(try await h.delete(gone, timestampMs: 2000, signer: h.cleanup).activity)
        let replay = try #require(try await h.delete(gone, timestampMs: 2000, signer: h.cleanup).activity)
        #expect(done.status == TurnkeyActivityStatus.completed && replay.id == done.id)
        let bodies = await h.sandbox.deleteBodies
        #expect(bodies[held]?.count == 3 && bodies[gone]?.count == 2)
    }

    @Test("a deleted sub-org answers 404 ORGANIZATION_NOT_FOUND")
    func notFoundAfterDeletion() async throws {
        let h = try await SandboxHarness()
        defer { Task { await h.stop() } }
        let target = h.subOrgs[6]
        #expect(
            try await h.delete(target, timestampMs: 3000, signer: h.cleanup).activity?.status
                == TurnkeyActivityStatus.completed)
        let fresh = try await h.delete(target, timestampMs: 3001, signer: h.cleanup)
        #expect(fresh.status == 404)
        #expect(fresh.errorCode == "ORGANIZATION_NOT_FOUND")
        #expect(fresh.classified.kind == .organizationNotFound)
        let who = try await h.whoami(target, signer: h.api)
        #expect(who.status == 404 && who.errorCode == "ORGANIZATION_NOT_FOUND")
        let users = try await h.post(
            TurnkeyWire.listUsersPath, TurnkeyWire.encode(TurnkeyWire.OrganizationQuery(organizationId: target)),
            signer: h.api)
        #expect(users.status == 404)
        #expect(!(try await h.listPage(limit: "100", after: nil)).contains(target))
    }

    @Test("PENDING deletions complete after the configured get_activity polls")
    func pendingActivity() async throws {
        let h = try await SandboxHarness(faults: SandboxFaults(pendingRate: 1, pendingPolls: 2))
        defer { Task { await h.stop() } }
        let target = h.subOrgs[7]
        let submitted = try #require(try await h.delete(target, signer: h.cleanup).activity)
        #expect(submitted.status == TurnkeyActivityStatus.pending)
        func poll() async throws -> TurnkeyWire.Activity? {
            try await h.post(
                TurnkeyWire.getActivityPath,
                TurnkeyWire.encode(TurnkeyWire.GetActivityRequest(organizationId: target, activityId: submitted.id)),
                signer: h.api
            ).activity
        }
        #expect(try await poll()?.status == TurnkeyActivityStatus.pending)
        #expect(try await h.listPage(limit: "100", after: nil).contains(target))
        #expect(try await poll()?.status == TurnkeyActivityStatus.completed)
        #expect(!(try await h.listPage(limit: "100", after: nil)).contains(target))
    }
}
