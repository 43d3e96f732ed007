import BackupCrypto
import BackupModel
import BackupServiceSandbox
import Foundation
import SandboxIdentity
import Testing

/// The flows' steps as the app runs them.
extension FlowHarness {
    static let manifest = String(repeating: "ab", count: 32)

    /// The `/v1/create` payload around a main authorization.
    func createPayload(
        _ user: FlowUser, main: JSONValue, mainToken: String, key: JSONValue, sync: JSONValue, syncToken: String,
        providerId: String? = nil, manifest: String = manifest
    ) -> JSONValue {
        var payload: [String: JSONValue] = [
            "authorization": main, "challengeToken": .string(mainToken), "initialEncryptionKey": key,
            "initialSyncFactor": sync, "initialSyncChallengeToken": .string(syncToken),
            "manifestHash": .string(manifest),
            "backupAccountId": .string(user.backupId),
        ]
        if let providerId { payload["turnkeyProviderId"] = .string(providerId) }
        return .object(payload)
    }

    static func key(_ kind: String, extra: [String: String] = [:]) -> JSONValue {
        var object: [String: JSONValue] = ["kind": .string(kind), "encryptedKey": .string("c0ffee")]
        for (name, value) in extra { object[name] = .string(value) }
        return .object(object)
    }

    /// A passkey's registration for a creation challenge.
    func registerPasskey(_ user: FlowUser) async throws -> (main: JSONValue, token: String) {
        let (challenge, token) = try await passkeyChallenge(
            "/v1/create/challenge/passkey",
            .object(["name": .string("jane"), "displayName": .string("Jane"), "platform": .string("IOS")]))
        let credential = try SandboxWebAuthn.register(
            challenge: challenge, credentialId: user.passkeyId, privateKey: user.passkeyKey)
        return (
            .object(["kind": .string("PASSKEY"), "credential": credential, "label": .string("iCloud Keychain")]), token
        )
    }

    /// BF-1 with a passkey: the creation challenge, the registration, the sync factor, `/v1/create`.
    func createWithPasskey(_ user: FlowUser, blob: [UInt8] = [1, 2, 3, 4]) async throws -> Reply {
        let (main, token) = try await registerPasskey(user)
        let sync = try await challenge("/v1/create/challenge/keypair")
        return try await form(
            "/v1/create",
            payload: createPayload(
                user, main: main, mainToken: token, key: Self.key("PRF"),
                sync: try user.device.authorization(sync.bytes),
                syncToken: sync.token), blob: blob)
    }

    /// BF-1 with an iCloud Keychain keypair as the main factor.
    func createWithKeychain(_ user: FlowUser, manifest: String = manifest) async throws -> Reply {
        try await form("/v1/create", payload: keychainCreatePayload(user, manifest: manifest), blob: [9, 9, 9])
    }

    /// A `/v1/create` payload with an iCloud Keychain keypair as the main factor, both
    /// challenges fetched and signed.
    func keychainCreatePayload(_ user: FlowUser, manifest: String = manifest) async throws -> JSONValue {
        let main = try await challenge("/v1/create/challenge/keypair")
        let sync = try await challenge("/v1/create/challenge/keypair")
        return createPayload(
            user, main: try user.keychain.authorization(main.bytes), mainToken: main.token, key: Self.key("ICLOUD"),
            sync: try user.device.authorization(sync.bytes), syncToken: sync.token, manifest: manifest)
    }

    /// BF-1 with an OIDC account (the session key signs the challenge; its hash is the nonce).
    func createWithOIDC(_ user: FlowUser, providerId: String = "00000000-0000-4000-8000-00000000aaaa") async throws
        -> Reply
    {
        let session = FlowUser.Key(random)
        let main = try await challenge("/v1/create/challenge/keypair")
        let sync = try await challenge("/v1/create/challenge/keypair")
        let token = try user.idToken(session: session)
        return try await form(
            "/v1/create",
            payload: createPayload(
                user, main: try user.oidc(token, session: session, challenge: main.bytes), mainToken: main.token,
                key: Self.key(
                    "TURNKEY",
                    extra: [
                        "turnkeyAccountId": "11111111-1111-4111-8111-111111111111",
                        "turnkeyUserId": "22222222-2222-4222-8222-222222222222",
                        "turnkeyPrivateKeyId": "33333333-3333-4333-8333-333333333333",
                    ]), sync: try user.device.authorization(sync.bytes), syncToken: sync.token,
                providerId: providerId), blob: [7])
    }

    /// BF-2's first half with the passkey: `/v1/retrieve/from-challenge`.
    func retrieveWithPasskey(_ user: FlowUser) async throws -> Reply {
        let (challenge, token) = try await passkeyChallenge("/v1/retrieve/challenge/passkey")
        return try await attested(
            "/v1/retrieve/from-challenge",
            .object(["authorization": try user.assertion(challenge), "challengeToken": .string(token)]))
    }

    /// `/v1/delete-factor` of `factorId` authorized by `device`.
    func deleteFactor(
        _ factorId: String, by device: FlowUser.Key, scope: String = "MAIN", key: JSONValue? = nil, fault: String? = nil
    ) async throws -> Reply {
        let (challenge, token) = try await self.challenge(
            "/v1/delete-factor/challenge/keypair", .object(["factorId": .string(factorId)]))
        var body: [String: JSONValue] = [
            "authorization": try device.authorization(challenge), "challengeToken": .string(token),
            "factorId": .string(factorId), "scope": .string(scope),
        ]
        if let key { body["encryptionKey"] = key }
        return try await attested("/v1/delete-factor", .object(body), fault: fault)
    }

    /// The ids of a create or add-factor answer's exported metadata: main factors, then sync factors.
    static func factorIds(_ reply: Reply, key: String = "backupMetadata") -> (main: [String], sync: [String]) {
        func ids(_ list: JSONValue?) -> [String] {
            guard case .array(let items)? = list else { return [] }
            return items.compactMap { $0["id"]?.stringValue }
        }
        let metadata = reply.json?[key]
        return (ids(metadata?["factors"]), ids(metadata?["syncFactors"]))
    }
}
