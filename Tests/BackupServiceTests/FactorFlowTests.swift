import BackupCrypto
import BackupModel
import BackupServiceSandbox
import Foundation
import SandboxIdentity
import Testing

/// BF-3 and BF-7 over real HTTP: adding an OIDC account with the passkey's merged Turnkey
/// activity, and deleting factors with a sync factor, with their refusals and storage effects.
@Suite struct FactorFlowTests {
    static let org = "44444444-4444-4444-8444-444444444444"

    /// What BF-3 sends: the passkey's assertion over a Turnkey activity that carries the
    /// existing factor's challenge, and the OIDC account over the new one.
    struct AddFactor {
        var body: [String: JSONValue]
        var session: FlowUser.Key
        var token: String
    }

    func addFactorBody(
        _ h: FlowHarness, _ user: FlowUser, type: String = "ACTIVITY_TYPE_CREATE_API_KEYS_V2",
        timestampMs: Int64 = Int64(Date().timeIntervalSince1970 * 1000), challengeOverride: String? = nil
    ) async throws -> AddFactor {
        let session = FlowUser.Key(h.random)
        let token = try user.idToken(.apple, session: session)
        let reply = try await h.send(
            "/v1/add-factor/challenge",
            json: .object(["newFactor": .object(["kind": .string("OIDC_ACCOUNT"), "oidcToken": .string(token)])]))
        let json = try #require(reply.json, "\(reply.text)")
        let existingChallenge = try #require(json["existingFactorChallenge"]?.stringValue)
        let newChallenge = try #require(
            json["newFactorChallenge"]?.stringValue.flatMap { Base64.decode($0, alphabet: .standard) })
        let activity =
            #"{"type":"\#(type)","timestampMs":"\#(timestampMs)","organizationId":"\#(Self.org)","parameters":{"apiKeys":[],"userId":"u"},"metadata":{"challenge":"\#(challengeOverride ?? existingChallenge)"}}"#
        let parts = try SandboxWebAuthn.assertion(
            challenge: Array(SHA256.hex(Array(activity.utf8)).utf8), privateKey: user.passkeyKey)
        let id = Base64.encode(user.passkeyId, alphabet: .url, padding: false)
        let credential = JSONValue.object([
            "id": .string(id), "rawId": .string(id), "type": .string("public-key"),
            "response": .object([
                "authenticatorData": .string(Base64.encode(parts.authenticatorData, alphabet: .url, padding: false)),
                "clientDataJSON": .string(Base64.encode(parts.clientDataJSON, alphabet: .url, padding: false)),
                "signature": .string(Base64.encode(parts.signature, alphabet: .url, padding: false)),
            ]),
        ])
        let body: [String: JSONValue] = [
            "existingFactorAuthorization": .object(["kind": .string("PASSKEY"), "credential": credential]),
            "existingFactorChallengeToken": try #require(json["existingFactorToken"]),
            "existingFactorTurnkeyActivity": .string(activity),
            "newFactorAuthorization": try user.oidc(token, session: session, challenge: newChallenge, provider: .apple),
            "newFactorChallengeToken": try #require(json["newFactorToken"]),
            "encryptedBackupKey": FlowHarness.key(
                "TURNKEY",
                extra: ["turnkeyAccountId": Self.org, "turnkeyUserId": "u", "turnkeyPrivateKeyId": "k"]),
            "turnkeyProviderId": .string("55555555-5555-4555-8555-555555555555"),
        ]
        return AddFactor(body: body, session: session, token: token)
    }

    @Test func anOIDCAccountJoinsAPasskeyBackup() async throws {
        try await FlowHarness.with { h in
            let user = try FlowUser(h.random)
            #expect(try await h.createWithPasskey(user).status == 200)
            let add = try await addFactorBody(h, user)
            let reply = try await h.send("/v1/add-factor", json: .object(add.body))
            #expect(reply.status == 200, "\(reply.text)")
            let factorId = try #require(reply.json?["factorId"]?.stringValue)
            let stored = try #require(h.metadataFile(user.backupId))
            #expect(stored.factors.map(\.id).contains(factorId))
            #expect(stored.turnkeySubOrgIds == [Self.org])
            #expect(h.indexFile()["MAIN#OIDC|https://appleid.apple.com|\(user.sub)"] == user.backupId)
            // The existing factor's token is not spent (the service's TODO); the new one is.
            let replay = try await h.send("/v1/add-factor", json: .object(add.body))
            #expect(replay.status == 400 && replay.code == "already_used")
        }
    }

    @Test func addFactorRefusals() async throws {
        try await FlowHarness.with { h in
            let user = try FlowUser(h.random)
            #expect(try await h.createWithPasskey(user).status == 200)
            func expect(_ body: [String: JSONValue], _ code: String, _ message: String, line: Int = #line) async throws
            {
                let reply = try await h.send("/v1/add-factor", json: .object(body))
                #expect(
                    reply.status == 400 && reply.code == code && reply.message == message, "line \(line): \(reply.text)"
                )
            }
            var add = try await addFactorBody(h, user)
            var body = add.body
            body["existingFactorTurnkeyActivity"] = nil
            try await expect(body, "missing_turnkey_activity", "Turnkey activity is missing")
            body = add.body
            body["existingFactorAuthorization"] = try user.keychain.authorization([1])
            try await expect(body, "not_supported", "Not supported")
            add = try await addFactorBody(h, user, type: "ACTIVITY_TYPE_CREATE_USERS_V3")
            try await expect(add.body, "turnkey_activity_error", "Activity type does not match expected type")
            add = try await addFactorBody(h, user, timestampMs: Int64(Date().timeIntervalSince1970 * 1000) - 6 * 60_000)
            try await expect(add.body, "turnkey_activity_error", "Activity has expired based on TTL")
            add = try await addFactorBody(h, user, challengeOverride: Base64.encode([UInt8](repeating: 1, count: 32)))
            try await expect(add.body, "invalid_challenge", "Challenge mismatch with Turnkey activity")
            add = try await addFactorBody(h, user)
            body = add.body
            body["existingFactorTurnkeyActivity"] = .string("{}")
            try await expect(
                body, "turnkey_activity_error",
                "Mismatch between challenge in the assertion and the hash of activity JSON")
            body = add.body
            let other = try user.idToken(.apple, session: add.session, iat: Int64(Date().timeIntervalSince1970) - 2)
            body["newFactorAuthorization"] = try user.oidc(
                other, session: add.session, challenge: [1], provider: .apple)
            try await expect(body, "oidc_token_mismatch", "OIDC Token mismatch")
            body = add.body
            body["newFactorAuthorization"] = try user.keychain.authorization([1])
            try await expect(body, "invalid_new_factor_authorization_type", "Invalid new factor authorization type")
            // The account added once; a second attempt finds its row.
            let first = try await h.send("/v1/add-factor", json: .object(add.body))
            #expect(first.status == 200, "\(first.text)")
            let again = try await addFactorBody(h, user)
            try await expect(again.body, "factor_already_exists", "This factor already exists.")
        }
    }

    @Test func deletingFactors() async throws {
        try await FlowHarness.with { h in
            let user = try FlowUser(h.random)
            let created = try await h.createWithPasskey(user)
            #expect(created.status == 200)
            let passkeyId = try #require(FlowHarness.factorIds(created).main.first)
            let add = try await addFactorBody(h, user)
            let added = try await h.send("/v1/add-factor", json: .object(add.body))
            let oidcId = try #require(added.json?["factorId"]?.stringValue)
            let turnkeyKey = FlowHarness.key(
                "TURNKEY", extra: ["turnkeyAccountId": Self.org, "turnkeyUserId": "u", "turnkeyPrivateKeyId": "k"])
            var reply = try await h.deleteFactor(oidcId, by: user.device, scope: "SYNC", key: turnkeyKey)
            #expect(reply.status == 400 && reply.code == "encryption_key_not_allowed")
            #expect(reply.message == "Removing an encryption key is not allowed when removing sync factors")
            reply = try await h.deleteFactor("no-such-factor", by: user.device)
            #expect(
                reply.status == 400 && reply.code == "factor_not_found" && reply.message == "Factor not found in backup"
            )
            reply = try await h.deleteFactor(oidcId, by: user.device, key: FlowHarness.key("ICLOUD"))
            #expect(
                reply.status == 400 && reply.code == "encryption_key_not_found"
                    && reply.message == "Encryption key not found.")
            // The PRF key with the OIDC factor: the passkey would be left without its key.
            reply = try await h.deleteFactor(oidcId, by: user.device, key: FlowHarness.key("PRF"))
            #expect(reply.status == 400 && reply.code == "factor_orphaned_from_encryption_key", "\(reply.text)")
            #expect(reply.message == "Cannot remove encryption key as it would orphan an existing factor.")
            // The OIDC account goes with its key: metadata first, then its row.
            reply = try await h.deleteFactor(oidcId, by: user.device, key: turnkeyKey)
            #expect(reply.status == 200 && reply.json?["backupDeleted"] == .bool(false), "\(reply.text)")
            #expect(h.metadataFile(user.backupId)?.turnkeySubOrgIds == [])
            #expect(h.indexFile()["MAIN#OIDC|https://appleid.apple.com|\(user.sub)"] == nil)
            // The last main factor takes the backup with it.
            reply = try await h.deleteFactor(passkeyId, by: user.device)
            #expect(reply.status == 200 && reply.text == #"{"backupDeleted":true,"backupMetadata":null}"#)
            #expect(h.metadataFile(user.backupId) == nil && h.blobFile(user.backupId) == nil && h.indexFile().isEmpty)
        }
    }

    @Test func aFailedRowDeletionLeavesAStaleRow() async throws {
        try await FlowHarness.with { h in
            let user = try FlowUser(h.random)
            let created = try await h.createWithPasskey(user)
            let passkeyId = try #require(FlowHarness.factorIds(created).main.first)
            let add = try await addFactorBody(h, user)
            let oidcId = try #require(
                try await h.send("/v1/add-factor", json: .object(add.body)).json?["factorId"]?.stringValue)
            let reply = try await h.deleteFactor(oidcId, by: user.device, fault: "lookup-delete")
            #expect(reply.status == 500 && reply.code == "internal_server_error")
            #expect(h.metadataFile(user.backupId)?.factors.map(\.id) == [passkeyId], "the metadata changed")
            let pk = "MAIN#OIDC|https://appleid.apple.com|\(user.sub)"
            #expect(h.indexFile()[pk] == user.backupId, "its row stayed: unauthorized_factor from now on")
        }
    }
}
