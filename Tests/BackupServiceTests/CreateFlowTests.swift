import BackupCrypto
import BackupModel
import BackupServiceSandbox
import Foundation
import SandboxIdentity
import Testing

/// BF-1 over real HTTP: `/v1/create` with each main factor, its storage, and each of its
/// documented refusals, with the service's codes, statuses and messages.
@Suite struct CreateFlowTests {
    @Test func aPasskeyBackupIsStoredAsTheServiceStoresIt() async throws {
        try await FlowHarness.with { h in
            let user = try FlowUser(h.random)
            let reply = try await h.createWithPasskey(user, blob: [1, 2, 3, 4])
            #expect(reply.status == 200, "\(reply.text)")
            #expect(reply.json?["backupId"]?.stringValue == user.backupId)
            let exported = try #require(reply.json?["backupMetadata"])
            #expect(exported["id"]?.stringValue == user.backupId)
            #expect(exported["manifestHash"]?.stringValue == FlowHarness.manifest)
            #expect(exported["factors"]?[0]?["kind"]?["credentialId"]?.stringValue == user.passkeyIdText)
            if case .int = exported["factors"]?[0]?["createdAt"] {
            } else {
                Issue.record("createdAt is not unix seconds")
            }
            // S3: the blob and the stored metadata (webauthnCredential, RFC 3339 times).
            #expect(h.blobFile(user.backupId) == [1, 2, 3, 4])
            let stored = try #require(h.metadataFile(user.backupId))
            guard case .passkey(let passkey) = stored.factors.first?.kind else {
                Issue.record("no passkey")
                return
            }
            #expect(passkey.webauthnCredential?["cred"]?["cred_id"]?.stringValue == user.passkeyIdText)
            #expect(passkey.label == "iCloud Keychain")
            #expect(stored.keys == [.prf(encryptedKey: "c0ffee")])
            let raw = String(
                decoding: try Data(contentsOf: h.directory.appendingPathComponent("\(user.backupId)/metadata")),
                as: UTF8.self)
            #expect(raw.contains("\"webauthnCredential\"") && raw.contains("Z\""))
            // DynamoDB: one MAIN and one SYNC row.
            #expect(
                h.indexFile() == [
                    "MAIN#PK|\(user.passkeyIdText)": user.backupId,
                    "SYNC#EC_KEYPAIR|\(user.device.base64)": user.backupId,
                ])
        }
    }

    @Test func keychainAndOIDCBackups() async throws {
        try await FlowHarness.with { h in
            let keychainUser = try FlowUser(h.random)
            let keychain = try await h.createWithKeychain(
                keychainUser, manifest: "0x" + String(repeating: "CD", count: 32))
            #expect(keychain.status == 200, "\(keychain.text)")
            // normalize_hex_32: 0x trimmed, stored lowercase.
            #expect(h.metadataFile(keychainUser.backupId)?.manifestHash == String(repeating: "cd", count: 32))
            #expect(h.indexFile()["MAIN#EC_KEYPAIR|\(keychainUser.keychain.base64)"] == keychainUser.backupId)

            let oidcUser = try FlowUser(h.random)
            let oidc = try await h.createWithOIDC(oidcUser, providerId: "00000000-0000-4000-8000-00000000abcd")
            #expect(oidc.status == 200, "\(oidc.text)")
            let account = oidc.json?["backupMetadata"]?["factors"]?[0]?["kind"]
            #expect(account?["turnkeyProviderId"]?.stringValue == "00000000-0000-4000-8000-00000000abcd")
            #expect(account?["account"]?["maskedEmail"]?.stringValue == "ja***@example.com")
            #expect(account?["account"]?["sub"] == nil, "the exported form drops the sub")
            let stored = try #require(h.metadataFile(oidcUser.backupId))
            guard case .oidcAccount(let factor) = stored.factors.first?.kind else {
                Issue.record("no OIDC factor")
                return
            }
            #expect(factor.sub == oidcUser.sub)
            #expect(h.indexFile()["MAIN#OIDC|https://accounts.google.com|\(oidcUser.sub)"] == oidcUser.backupId)
            #expect(stored.turnkeySubOrgIds == ["11111111-1111-4111-8111-111111111111"])
        }
    }

    @Test func theFormsRefusals() async throws {
        try await FlowHarness.with { h in
            let user = try FlowUser(h.random)
            var reply = try await h.form("/v1/create", payload: nil, blob: [1])
            #expect(reply.status == 400 && reply.code == "missing_payload_field")
            #expect(reply.message == "Missing payload field in multipart data")
            reply = try await h.form("/v1/create", payload: nil, blob: [1], rawPayload: Array("{".utf8))
            #expect(
                reply.status == 400 && reply.code == "invalid_payload"
                    && reply.message == "Failed to deserialize payload")
            let payload = try await h.keychainCreatePayload(user)
            reply = try await h.form("/v1/create", payload: payload, blob: nil)
            #expect(reply.status == 400 && reply.code == "missing_backup_field")
            #expect(reply.message == "Missing backup field in multipart data")
            reply = try await h.form("/v1/create", payload: payload, blob: [])
            #expect(reply.status == 400 && reply.code == "empty_backup_file" && reply.message == "Empty backup file")
            reply = try await h.form(
                "/v1/create", payload: payload, blob: [UInt8](repeating: 1, count: 15 * 1024 * 1024 + 1))
            #expect(reply.status == 413 && reply.code == "content_too_large")
            #expect(reply.message == "Backup file exceeds maximum allowed size.")
            reply = try await h.send("/v1/create", raw: [1, 2], contentType: "application/octet-stream")
            #expect(reply.status == 400 && reply.code == nil, "the framework's plain refusal")
            // None of these got as far as the tokens: they still work.
            reply = try await h.form("/v1/create", payload: payload, blob: [1])
            #expect(reply.status == 200, "\(reply.text)")
        }
    }

    @Test func tokenAndFactorRefusals() async throws {
        try await FlowHarness.with { h in
            let user = try FlowUser(h.random)
            func attempt(main: JSONValue, mainToken: String, sync: JSONValue? = nil, syncToken: String? = nil)
                async throws
                -> FlowHarness.Reply
            {
                let fresh = try await h.challenge("/v1/create/challenge/keypair")
                return try await h.form(
                    "/v1/create",
                    payload: h.createPayload(
                        user, main: main, mainToken: mainToken, key: FlowHarness.key("ICLOUD"),
                        sync: try sync ?? user.device.authorization(fresh.bytes), syncToken: syncToken ?? fresh.token),
                    blob: [1])
            }
            let main = try await h.challenge("/v1/create/challenge/keypair")
            var reply = try await attempt(main: try user.keychain.authorization(main.bytes), mainToken: "sbx.garbage.x")
            #expect(reply.status == 400 && reply.code == "jwt_error" && reply.message == "Invalid or expired token.")
            let passkeyToken = try await h.passkeyChallenge(
                "/v1/create/challenge/passkey",
                .object(["name": .string("a"), "displayName": .string("A"), "platform": .string("ANDROID")]))
            reply = try await attempt(main: try user.keychain.authorization(main.bytes), mainToken: passkeyToken.token)
            #expect(reply.status == 400 && reply.code == "unexpected_challenge_type")
            #expect(reply.message == "The challenge type does not match the expected type.")
            let syncChallenge = try await h.challenge("/v1/sync/challenge/keypair")
            reply = try await attempt(
                main: try user.keychain.authorization(syncChallenge.bytes), mainToken: syncChallenge.token)
            #expect(reply.status == 400 && reply.code == "invalid_challenge_context")
            #expect(reply.message == "Client-side auth failure: invalid_challenge_context")
            let other = try await h.challenge("/v1/create/challenge/keypair")
            reply = try await attempt(main: try user.keychain.authorization(other.bytes), mainToken: main.token)
            #expect(reply.status == 400 && reply.code == "signature_verification_error")
            #expect(reply.message == "Signature verification failed")
            let passkey = try await h.registerPasskey(user)
            reply = try await attempt(
                main: try user.keychain.authorization(main.bytes), mainToken: main.token, sync: passkey.main,
                syncToken: passkey.token)
            #expect(reply.status == 400 && reply.code == "invalid_sync_factor_type")
            // The main factor was validated first, and its token spent with it.
            reply = try await attempt(main: try user.keychain.authorization(main.bytes), mainToken: main.token)
            #expect(
                reply.status == 400 && reply.code == "already_used" && reply.message == "Token has already been used.")
            let fresh = try await h.challenge("/v1/create/challenge/keypair")
            reply = try await attempt(main: try user.keychain.authorization(fresh.bytes), mainToken: fresh.token)
            #expect(reply.status == 200, "\(reply.text)")
            // The same id again: both tokens are spent before the existence check.
            let again = try await h.challenge("/v1/create/challenge/keypair")
            let syncAgain = try await h.challenge("/v1/create/challenge/keypair")
            let second = try FlowUser(h.random)
            let payload = h.createPayload(
                user, main: try second.keychain.authorization(again.bytes), mainToken: again.token,
                key: FlowHarness.key("ICLOUD"), sync: try second.device.authorization(syncAgain.bytes),
                syncToken: syncAgain.token)
            reply = try await h.form("/v1/create", payload: payload, blob: [1])
            #expect(reply.status == 409 && reply.code == "backup_account_id_already_exists")
            #expect(reply.message == "Backup ID already exists. Please `/sync` instead.")
            reply = try await h.form("/v1/create", payload: payload, blob: [1])
            #expect(reply.code == "already_used")
            // Another backup with the first one's keychain key: the lookup row exists.
            let third = try FlowUser(h.random)
            let m3 = try await h.challenge("/v1/create/challenge/keypair")
            let s3 = try await h.challenge("/v1/create/challenge/keypair")
            reply = try await h.form(
                "/v1/create",
                payload: h.createPayload(
                    third, main: try user.keychain.authorization(m3.bytes), mainToken: m3.token,
                    key: FlowHarness.key("ICLOUD"), sync: try third.device.authorization(s3.bytes), syncToken: s3.token),
                blob: [1])
            #expect(
                reply.status == 400 && reply.code == "factor_already_exists"
                    && reply.message == "This factor already exists.")
            #expect(h.metadataFile(third.backupId) == nil && h.blobFile(third.backupId) == nil)
        }
    }

    @Test func oidcRefusals() async throws {
        try await FlowHarness.with { h in
            let user = try FlowUser(h.random)
            let session = FlowUser.Key(h.random)
            func attempt(_ authorization: (FlowUser.Key, [UInt8]) throws -> JSONValue, providerId: String? = "p")
                async throws -> FlowHarness.Reply
            {
                let main = try await h.challenge("/v1/create/challenge/keypair")
                let sync = try await h.challenge("/v1/create/challenge/keypair")
                return try await h.form(
                    "/v1/create",
                    payload: h.createPayload(
                        user, main: try authorization(session, main.bytes), mainToken: main.token,
                        key: FlowHarness.key("ICLOUD"), sync: try user.device.authorization(sync.bytes),
                        syncToken: sync.token, providerId: providerId), blob: [1])
            }
            var reply = try await attempt(
                { try user.oidc(user.idToken(session: $0), session: $0, challenge: $1) }, providerId: nil)
            #expect(reply.code == "missing_turnkey_provider_id")
            #expect(reply.message == "Client-side auth failure: missing_turnkey_provider_id")
            reply = try await attempt({ try user.oidc("not.a.token", session: $0, challenge: $1) })
            #expect(reply.code == "oidc_token_parse_error" && reply.message == "Failed to parse OIDC token.")
            let stale = Int64(Date().timeIntervalSince1970) - 600
            reply = try await attempt({
                try user.oidc(user.idToken(session: $0, iat: stale), session: $0, challenge: $1)
            })
            #expect(reply.code == "oidc_token_verification_error" && reply.message == "Failed to verify OIDC token.")
            let stranger = FlowUser.Key(h.random)
            reply = try await attempt({ try user.oidc(user.idToken(session: stranger), session: $0, challenge: $1) })
            #expect(reply.code == "oidc_token_invalid_nonce")
            #expect(reply.message?.hasPrefix("Nonce mismatch: expected ") == true)
            reply = try await attempt({ key, challenge in
                var auth = try user.oidc(
                    user.idToken(.apple, session: key, aud: "com.example.other"), session: key, challenge: challenge,
                    provider: .apple)
                if case .object(var object) = auth, case .object(var token)? = object["oidcToken"] {
                    token["aud"] = .string("com.example.other")
                    object["oidcToken"] = .object(token)
                    auth = .object(object)
                }
                return auth
            })
            #expect(reply.code == "oidc_token_invalid_aud" && reply.message == "Invalid aud provided.")
            reply = try await attempt({
                try user.oidc(user.idToken(session: $0, email: nil), session: $0, challenge: $1)
            })
            #expect(reply.code == "missing_email" && reply.message == "Client-side auth failure: missing_email")
            // The nonce is single use (Redis, one year): the missing_email attempt above verified
            // the token and spent this session's nonce; a fresh session's token goes through, once.
            reply = try await attempt({ try user.oidc(user.idToken(session: $0), session: $0, challenge: $1) })
            #expect(reply.code == "already_used")
            let fresh = FlowUser.Key(h.random)
            let token = try user.idToken(session: fresh, iat: Int64(Date().timeIntervalSince1970) - 1)
            reply = try await attempt({ _, challenge in try user.oidc(token, session: fresh, challenge: challenge) })
            #expect(reply.status == 200, "\(reply.text)")
            let other = try FlowUser(h.random)
            let main = try await h.challenge("/v1/create/challenge/keypair")
            let sync = try await h.challenge("/v1/create/challenge/keypair")
            reply = try await h.form(
                "/v1/create",
                payload: h.createPayload(
                    other, main: try user.oidc(token, session: fresh, challenge: main.bytes), mainToken: main.token,
                    key: FlowHarness.key("ICLOUD"), sync: try other.device.authorization(sync.bytes),
                    syncToken: sync.token,
                    providerId: "p"), blob: [1])
            #expect(reply.code == "already_used")
        }
    }
}
