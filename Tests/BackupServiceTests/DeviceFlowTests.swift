import BackupCrypto
import BackupModel
import BackupServiceSandbox
import Foundation
import SandboxIdentity
import Testing

/// BF-2, BF-4, BF-5 over real HTTP: retrieval with the attestation gateway, the sync-factor
/// token, the manifest gate, metadata retrieval, verify-factor, and the backup's deletion.
@Suite struct DeviceFlowTests {
    @Test func aNewDeviceRetrievesAndAddsItsSyncFactor() async throws {
        try await FlowHarness.with { h in
            let user = try FlowUser(h.random)
            #expect(try await h.createWithPasskey(user, blob: [5, 6, 7]).status == 200)
            let retrieved = try await h.retrieveWithPasskey(user)
            #expect(retrieved.status == 200, "\(retrieved.text)")
            #expect(retrieved.json?["backup"]?.stringValue == Base64.encode([5, 6, 7]))
            #expect(retrieved.json?["metadata"]?["id"]?.stringValue == user.backupId)
            let syncToken = try #require(retrieved.json?["syncFactorToken"]?.stringValue)
            let device = FlowUser.Key(h.random)
            func add(_ token: String, key: FlowUser.Key) async throws -> FlowHarness.Reply {
                let (challenge, challengeToken) = try await h.challenge("/v1/add-sync-factor/challenge/keypair")
                return try await h.send(
                    "/v1/add-sync-factor",
                    json: .object([
                        "challengeToken": .string(challengeToken), "syncFactor": try key.authorization(challenge),
                        "syncFactorToken": .string(token),
                    ]))
            }
            var reply = try await add(syncToken, key: device)
            #expect(reply.status == 200 && reply.json?["backupId"]?.stringValue == user.backupId, "\(reply.text)")
            #expect(h.indexFile()["SYNC#EC_KEYPAIR|\(device.base64)"] == user.backupId)
            #expect(h.metadataFile(user.backupId)?.syncFactors.count == 2)
            reply = try await add(syncToken, key: FlowUser.Key(h.random))
            #expect(reply.status == 400 && reply.code == "already_used")
            reply = try await add("not-a-token", key: FlowUser.Key(h.random))
            #expect(reply.status == 400 && reply.code == "token_not_found" && reply.message == "Token not found.")
            // A key already registered: the lookup insert refuses it.
            let fresh = try #require(try await h.retrieveWithPasskey(user).json?["syncFactorToken"]?.stringValue)
            reply = try await add(fresh, key: device)
            #expect(reply.status == 400 && reply.code == "factor_already_exists")
        }
    }

    @Test func theAttestationGateway() async throws {
        try await FlowHarness.with { h in
            let user = try FlowUser(h.random)
            #expect(try await h.createWithPasskey(user).status == 200)
            let (challenge, token) = try await h.passkeyChallenge("/v1/retrieve/challenge/passkey")
            let body = JSONValue.object([
                "authorization": try user.assertion(challenge), "challengeToken": .string(token),
            ])
            var reply = try await h.send("/v1/retrieve/from-challenge", json: body)
            #expect(reply.status == 400 && reply.code == "invalid_attestation_token_header")
            #expect(reply.message == "Attestation token header is invalid or not present.")
            let other = try SandboxAttestation.token(
                method: "POST", path: "/v1/verify-factor", body: SortedJSON.bytes(body),
                now: Int64(Date().timeIntervalSince1970))
            reply = try await h.attested("/v1/retrieve/from-challenge", body, token: other)
            #expect(reply.status == 400 && reply.code == "invalid_attestation_token_claim")
            #expect(reply.message == "Invalid attestation token claim: JTI claim (request hash) is not valid.")
            reply = try await h.attested("/v1/retrieve/from-challenge", body, token: "e30.e30.AAAA")
            #expect(reply.status == 400 && reply.code == "invalid_attestation_token")
            #expect(reply.message == "Invalid attestation token.")
            // The middleware runs first: the token above was never spent.
            reply = try await h.attested("/v1/retrieve/from-challenge", body)
            #expect(reply.status == 200, "\(reply.text)")
        }
    }

    @Test func whoTheFactorResolvesTo() async throws {
        try await FlowHarness.with { h in
            let user = try FlowUser(h.random)
            let created = try await h.createWithKeychain(user)
            #expect(created.status == 200)
            // verify-factor with the keychain key.
            var (challenge, token) = try await h.challenge("/v1/verify-factor/challenge/keypair")
            var reply = try await h.attested(
                "/v1/verify-factor",
                .object(["authorization": try user.keychain.authorization(challenge), "challengeToken": .string(token)])
            )
            #expect(reply.status == 200 && reply.json?["backupId"]?.stringValue == user.backupId, "\(reply.text)")
            // An unknown key: untraceable.
            (challenge, token) = try await h.challenge("/v1/retrieve/challenge/keypair")
            reply = try await h.attested(
                "/v1/retrieve/from-challenge",
                .object([
                    "authorization": try FlowUser.Key(h.random).authorization(challenge),
                    "challengeToken": .string(token),
                ]))
            #expect(reply.status == 400 && reply.code == "backup_untraceable")
            #expect(reply.message == "Client-side auth failure: backup_untraceable")
            // retrieve-metadata: the bare exported metadata, SYNC scope only.
            (challenge, token) = try await h.challenge("/v1/retrieve-metadata/challenge/keypair")
            reply = try await h.send(
                "/v1/retrieve-metadata",
                json: .object([
                    "authorization": try user.device.authorization(challenge), "challengeToken": .string(token),
                    "backupId": .string(user.backupId),
                ]))
            #expect(reply.status == 200 && reply.json?["id"]?.stringValue == user.backupId, "\(reply.text)")
            (challenge, token) = try await h.challenge("/v1/retrieve-metadata/challenge/keypair")
            reply = try await h.send(
                "/v1/retrieve-metadata",
                json: .object([
                    "authorization": try user.keychain.authorization(challenge), "challengeToken": .string(token),
                    "backupId": .string(user.backupId),
                ]))
            #expect(
                reply.status == 400 && reply.code == "unauthorized_factor",
                "a main key is untraceable in SYNC scope; the backup exists")
            #expect(reply.message == "The provided factor is not authorized for this backup.")
            (challenge, token) = try await h.passkeyChallenge("/v1/retrieve/challenge/passkey")
            reply = try await h.send(
                "/v1/retrieve-metadata",
                json: .object(["authorization": try user.assertion(challenge), "challengeToken": .string(token)]))
            #expect(reply.status == 400 && reply.code == "invalid_authorization_type")
            let other = try FlowUser(h.random)
            (challenge, token) = try await h.challenge("/v1/retrieve-metadata/challenge/keypair")
            reply = try await h.send(
                "/v1/retrieve-metadata",
                json: .object([
                    "authorization": try user.device.authorization(challenge), "challengeToken": .string(token),
                    "backupId": .string(other.backupId),
                ]))
            #expect(reply.status == 400 && reply.code == "backup_id_mismatch")
            (challenge, token) = try await h.challenge("/v1/retrieve-metadata/challenge/keypair")
            reply = try await h.send(
                "/v1/retrieve-metadata",
                json: .object([
                    "authorization": try other.device.authorization(challenge), "challengeToken": .string(token),
                    "backupId": .string(other.backupId),
                ]))
            #expect(reply.status == 400 && reply.code == "backup_does_not_exist")
        }
    }

    @Test func syncBehindTheManifestGate() async throws {
        try await FlowHarness.with { h in
            let user = try FlowUser(h.random)
            #expect(try await h.createWithKeychain(user).status == 200)
            func sync(current: String, next: String, blob: [UInt8], token given: (bytes: [UInt8], token: String)? = nil)
                async throws -> FlowHarness.Reply
            {
                var challenge = given
                if challenge == nil { challenge = try await h.challenge("/v1/sync/challenge/keypair") }
                guard let challenge else { throw CancellationError() }
                return try await h.form(
                    "/v1/sync",
                    payload: .object([
                        "authorization": try user.device.authorization(challenge.bytes),
                        "challengeToken": .string(challenge.token), "currentManifestHash": .string(current),
                        "newManifestHash": .string(next),
                    ]), blob: blob)
            }
            let next = String(repeating: "01", count: 32)
            var reply = try await sync(current: "0x" + FlowHarness.manifest.uppercased(), next: next, blob: [4, 4])
            #expect(reply.status == 200 && reply.json?["backupId"]?.stringValue == user.backupId, "\(reply.text)")
            #expect(h.metadataFile(user.backupId)?.manifestHash == next && h.blobFile(user.backupId) == [4, 4])
            // A stale device: 412, and the token is spent anyway (auth burns it first).
            let challenge = try await h.challenge("/v1/sync/challenge/keypair")
            reply = try await sync(
                current: FlowHarness.manifest, next: String(repeating: "02", count: 32), blob: [5], token: challenge)
            #expect(reply.status == 412 && reply.code == "manifest_hash_mismatch")
            #expect(reply.message == "The manifest hash does not match the expected value.")
            #expect(h.blobFile(user.backupId) == [4, 4], "nothing written on a mismatch")
            reply = try await sync(current: next, next: String(repeating: "02", count: 32), blob: [5], token: challenge)
            #expect(reply.status == 400 && reply.code == "already_used")
            reply = try await sync(current: next, next: "xyz", blob: [5])
            #expect(reply.status == 400 && reply.code == "invalid_payload")
        }
    }

    /// The service's Redis lock: a sync while another holds `sync_backup_lock:` answers 423
    /// after its token burned (auth comes first); the lock lapses after 120 s.
    @Test func aSyncWhileTheLockIsHeldIsConflictingLock() async throws {
        try await FlowHarness.with { h in
            let user = try FlowUser(h.random)
            #expect(try await h.createWithKeychain(user).status == 200)
            let locks = h.server.emulator.locks
            let now = Int64(Date().timeIntervalSince1970)
            #expect(locks.acquire(ServiceLocks.syncPrefix, user.backupId, now: now))
            func sync(_ challenge: (bytes: [UInt8], token: String)) async throws -> FlowHarness.Reply {
                try await h.form(
                    "/v1/sync",
                    payload: .object([
                        "authorization": try user.device.authorization(challenge.bytes),
                        "challengeToken": .string(challenge.token),
                        "currentManifestHash": .string(FlowHarness.manifest),
                        "newManifestHash": .string(String(repeating: "01", count: 32)),
                    ]), blob: [4])
            }
            let challenge = try await h.challenge("/v1/sync/challenge/keypair")
            var reply = try await sync(challenge)
            #expect(reply.status == 423 && reply.code == "conflicting_lock", "\(reply.text)")
            #expect(h.blobFile(user.backupId) != [4], "nothing written under another's lock")
            locks.release(ServiceLocks.syncPrefix, user.backupId)
            reply = try await sync(challenge)
            #expect(reply.status == 400 && reply.code == "already_used", "the token burned before the lock")
            reply = try await sync(try await h.challenge("/v1/sync/challenge/keypair"))
            #expect(reply.status == 200, "\(reply.text)")
            // A holder that died: its lock lapses with the TTL.
            #expect(locks.acquire(ServiceLocks.createPrefix, user.backupId, now: now))
            #expect(!locks.acquire(ServiceLocks.createPrefix, user.backupId, now: now + 119))
            #expect(locks.acquire(ServiceLocks.createPrefix, user.backupId, now: now + 120))
        }
    }

    @Test func deletingTheBackupAndWhatAFailureLeaves() async throws {
        try await FlowHarness.with { h in
            let user = try FlowUser(h.random)
            #expect(try await h.createWithKeychain(user).status == 200)
            var (challenge, token) = try await h.challenge("/v1/delete-backup/challenge/keypair")
            var reply = try await h.send(
                "/v1/delete-backup",
                json: .object([
                    "authorization": try user.keychain.authorization(challenge), "challengeToken": .string(token),
                ]))
            #expect(reply.status == 400 && reply.code == "backup_untraceable", "a main key has no SYNC row")
            (challenge, token) = try await h.challenge("/v1/delete-backup/challenge/keypair")
            reply = try await h.send(
                "/v1/delete-backup",
                json: .object(["authorization": try user.assertion(challenge), "challengeToken": .string(token)]))
            #expect(reply.status == 400 && reply.code == "invalid_authorization_type")
            #expect(reply.message == "Client-side auth failure: invalid_authorization_type")
            (challenge, token) = try await h.challenge("/v1/delete-backup/challenge/keypair")
            reply = try await h.send(
                "/v1/delete-backup",
                json: .object([
                    "authorization": try user.device.authorization(challenge), "challengeToken": .string(token),
                ]))
            #expect(reply.status == 204 && reply.body.isEmpty)
            #expect(h.metadataFile(user.backupId) == nil && h.blobFile(user.backupId) == nil && h.indexFile().isEmpty)

            // The FactorLookup step fails: S3 is gone, the rows stay (500), and the device then
            // resolves to a backup that is missing.
            let second = try FlowUser(h.random)
            #expect(try await h.createWithKeychain(second).status == 200)
            (challenge, token) = try await h.challenge("/v1/delete-backup/challenge/keypair")
            let body = SortedJSON.bytes(
                .object(["authorization": try second.device.authorization(challenge), "challengeToken": .string(token)])
            )
            reply = try await h.send(
                "/v1/delete-backup", raw: body, headers: [BackupServiceEmulator.faultHeader: "lookup-delete"])
            #expect(
                reply.status == 500 && reply.code == "internal_server_error" && reply.message == "Internal server error"
            )
            #expect(h.metadataFile(second.backupId) == nil && h.blobFile(second.backupId) == nil)
            #expect(h.indexFile().count == 2)
            (challenge, token) = try await h.challenge("/v1/delete-backup/challenge/keypair")
            reply = try await h.send(
                "/v1/delete-backup",
                json: .object([
                    "authorization": try second.device.authorization(challenge), "challengeToken": .string(token),
                ]))
            #expect(reply.status == 400 && reply.code == "backup_missing" && reply.message == "backup_missing")
        }
    }
}
