import BackupCrypto
import BackupModel
import Foundation
import SandboxIdentity

/// BF-1: creating the backup (and, for OIDC, the Turnkey sub-org first).
extension SimulationEngine {
    func create(_ user: SimUser) async {
        count("bf1.attempts")
        let manifest = user.newManifest()
        let device = user.activeDevices.first ?? user.newDevice(manifest: manifest)
        user.devices[device].localManifest = manifest
        var main: JSONValue = .null
        var mainToken = ""
        var key: EncryptionKey
        var providerId: String?
        var session: SimKey?
        var idToken = ""
        let random = user.random
        // A passkey is registered first (the service's creation challenge).
        if user.profile == .passkey || user.profile == .passkeyAndOIDC {
            let body = JSONValue.object([
                "name": .string(user.email), "displayName": .string("User \(user.index)"),
                "platform": .string(user.platformIOS ? "IOS" : "ANDROID"),
            ])
            guard
                let (challenge, token) = await service.passkeyChallenge(
                    "/v1/create/challenge/passkey", body: body, faults: challengeFaults(user))
            else { return createFailed(user, "create/challenge/passkey failed", orphan: nil) }
            let credentialId = random.bytes(16)
            let secret = P256.generatePrivateKey(using: random)
            guard
                let credential = try? SandboxWebAuthn.register(
                    challenge: challenge, credentialId: credentialId, privateKey: secret)
            else { return createFailed(user, "passkey registration failed", orphan: nil) }
            user.passkey = .init(
                credentialId: credentialId, key: secret, registration: credential, registrationChallenge: challenge)
            main = Authorizations.passkey(
                credential, label: user.platformIOS ? "iCloud Keychain" : "Google Password Manager")
            mainToken = token
            key = .prf(encryptedKey: Hex.encode(random.bytes(48)))
        } else {
            key = .icloud(encryptedKey: "")
        }
        // OIDC: the app backend makes the sub-org, the client adds the provider and its users.
        if user.profile == .oidc || user.profile == .passkeyAndOIDC {
            let sessionKey = SimKey(random)
            session = sessionKey
            guard let subOrg = await createSubOrg(user, session: sessionKey) else {
                return createFailed(user, "BF-1 create_sub_organization failed", orphan: nil)
            }
            user.subOrg = subOrg
            idToken = self.idToken(user, user.primaryProvider, session: sessionKey)
            guard
                let provider = await addProvider(
                    user, user.primaryProvider, token: idToken, stamper: .p256(sessionKey.secret))
            else { return createFailed(user, "BF-1 create_oauth_providers failed", orphan: subOrg.id) }
            providerId = provider
            await addSyncUser(user, device: device, stamper: .p256(sessionKey.secret))
            await addBreakGlass(user, stamper: .p256(sessionKey.secret))
        }
        if user.profile == .oidc, let session, let subOrg = user.subOrg {
            guard
                let (challenge, token) = await service.keypairChallenge(
                    "/v1/create/challenge/keypair", faults: challengeFaults(user))
            else { return createFailed(user, "BF-1 create/challenge/keypair failed", orphan: subOrg.id) }
            main = Authorizations.oidc(user.primaryProvider, token: idToken, session: session, challenge: challenge)
            mainToken = token
            key = .turnkey(
                TurnkeyKey(
                    encryptedKey: Hex.encode(random.bytes(48)), turnkeyAccountId: subOrg.id,
                    turnkeyUserId: subOrg.authUserId, turnkeyPrivateKeyId: random.uuid()))
        }
        if user.profile == .keychain {
            let keychain = SimKey(random)
            user.keychain = keychain
            guard
                let (challenge, token) = await service.keypairChallenge(
                    "/v1/create/challenge/keypair", faults: challengeFaults(user))
            else { return createFailed(user, "BF-1 create/challenge/keypair failed", orphan: nil) }
            main = Authorizations.ecKeypair(keychain, challenge: challenge)
            mainToken = token
            key = .icloud(encryptedKey: Hex.encode(random.bytes(48)))
        }
        guard
            let (syncChallenge, syncToken) = await service.keypairChallenge(
                "/v1/create/challenge/keypair", faults: challengeFaults(user))
        else { return createFailed(user, "BF-1 create/challenge/keypair failed", orphan: user.subOrg?.id) }
        var payload: [String: JSONValue] = [
            "authorization": main, "challengeToken": .string(mainToken), "initialEncryptionKey": Self.json(key),
            "initialSyncFactor": Authorizations.ecKeypair(user.devices[device].key, challenge: syncChallenge),
            "initialSyncChallengeToken": .string(syncToken), "manifestHash": .string(manifest),
            "backupAccountId": .string(user.backupId),
        ]
        if let providerId { payload["turnkeyProviderId"] = .string(providerId) }
        count("service.requests")
        let outcome = await service.postForm(
            "/v1/create", payload: .object(payload), blob: random.bytes(256 + Int(random.uniform(1792))),
            boundary: "sim-\(Hex.encode(random.bytes(8)))", fault: serviceFault(user))
        guard case .ok(let json) = outcome, let metadata = json["backupMetadata"] else {
            return createFailed(
                user, "BF-1 /v1/create failed (\(outcome.code ?? "no answer"))", orphan: user.subOrg?.id)
        }
        var backup = SimUser.Backup(manifest: manifest, keys: [key])
        for factor in Self.factors(metadata["factors"]) {
            switch factor.kind {
            case "PASSKEY": backup.passkeyFactor = factor.id
            case "EC_KEYPAIR": backup.keychainFactor = factor.id
            default:
                backup.oidc.append(
                    .init(
                        factorId: factor.id, provider: user.primaryProvider, sub: user.subs[user.primaryProvider] ?? "",
                        providerId: providerId ?? ""))
            }
        }
        for factor in Self.factors(metadata["syncFactors"]) { backup.syncFactors[factor.publicKey] = factor.id }
        user.backup = backup
        user.state = .active
        user.createFailures = 0
        count("bf1.created")
        info(user, "create.backup_created")
        if let id = backup.subOrgId { orphanSteps[id] = nil }
        if user.profile == .passkeyAndOIDC, let session {
            // The one-tap OIDC enrollment: the passkey signs the Turnkey activity that carries
            // the service's challenge (BF-3's pattern, with the sub-org made above).
            await addOIDC(
                user, device: device, provider: user.primaryProvider, session: session, token: idToken, step: "BF-1",
                madeFor: user.subOrg?.id)
        }
    }

    /// A failed creation: the user tries again another day (three times), then gives up.
    func createFailed(_ user: SimUser, _ step: String, orphan subOrg: String?) {
        count("bf1.failed")
        if let subOrg { orphaned(subOrg, user: user, step: step, logged: false) }
        user.subOrg = nil
        user.createFailures += 1
        if user.createFailures >= 3 {
            user.state = .gone
            count("users.gave_up")
        }
    }

    /// BF-3 (and BF-1's one-tap enrollment): add an OIDC account to a passkey backup. A sub-org
    /// made here and left unused when a later step fails is orphaned.
    func addOIDC(
        _ user: SimUser, device: Int, provider: OIDCProvider, session givenSession: SimKey?, token givenToken: String?,
        step: String, madeFor: String? = nil
    ) async {
        guard let passkey = user.passkey, user.backup != nil else { return }
        let random = user.random
        var session = givenSession ?? SimKey(random)
        var createdHere = madeFor
        if user.subOrg?.exists != true {
            session = SimKey(random)
            guard let subOrg = await createSubOrg(user, session: session) else { return }
            user.subOrg = subOrg
            createdHere = subOrg.id
            await addSyncUser(user, device: device, stamper: .p256(session.secret))
            await addBreakGlass(user, stamper: .p256(session.secret))
        }
        guard let subOrg = user.subOrg else { return }
        let token = givenToken ?? idToken(user, provider, session: session)
        let providerId: String
        if givenSession != nil, let existing = subOrg.providers.first(where: { $0.value == provider })?.key {
            providerId = existing
        } else {
            let stamper: TurnkeyStamper =
                createdHere != nil
                ? .p256(session.secret) : .passkey(credentialId: passkey.credentialId, key: passkey.key)
            guard let made = await addProvider(user, provider, token: token, stamper: stamper) else {
                abandon(user, createdHere, "\(step) create_oauth_providers failed")
                return
            }
            providerId = made
        }
        // The service's two challenges; the passkey signs a Turnkey activity carrying the first.
        let challengeBody = JSONValue.object([
            "newFactor": .object(["kind": .string("OIDC_ACCOUNT"), "oidcToken": .string(token)])
        ])
        var challenges: JSONValue?
        for fault in challengeFaults(user) {
            if case .ok(let json) = await service.post("/v1/add-factor/challenge", body: challengeBody, fault: fault) {
                challenges = json
                break
            }
        }
        guard let challenges, let existingChallenge = challenges["existingFactorChallenge"]?.stringValue,
            let existingToken = challenges["existingFactorToken"]?.stringValue,
            let newChallenge = challenges["newFactorChallenge"]?.stringValue.flatMap({
                Base64.decode($0, alphabet: .standard)
            }),
            let newToken = challenges["newFactorToken"]?.stringValue
        else {
            abandon(user, createdHere, "\(step) add-factor/challenge failed")
            return
        }
        let sessionKey = SimKey(random)
        wait()
        let activity = TurnkeyCaller.body(
            type: "ACTIVITY_TYPE_CREATE_API_KEYS_V2", timestampMs: nowMillis, organizationId: subOrg.id,
            parameters: .object([
                "apiKeys": .array([Self.apiKey("passkey_session", sessionKey.turnkeyForm, expires: "300")]),
                "userId": .string(subOrg.authUserId),
            ]), metadata: .object(["challenge": .string(existingChallenge)]))
        count("turnkey.activities")
        let submitted = await turnkey.send(
            Self.createAPIKeysPath, body: activity,
            stamper: .passkey(credentialId: passkey.credentialId, key: passkey.key),
            faults: turnkeyFaults(user), random: random)
        guard case .completed = submitted,
            let parts = try? SandboxWebAuthn.assertion(
                challenge: Array(SHA256.hex(activity).utf8), privateKey: passkey.key)
        else {
            count("turnkey.failed")
            abandon(user, createdHere, "\(step) passkey session failed")
            return
        }
        let id = Base64.encode(passkey.credentialId, alphabet: .url, padding: false)
        let assertion = JSONValue.object([
            "id": .string(id), "rawId": .string(id), "type": .string("public-key"),
            "response": .object([
                "authenticatorData": .string(Base64.encode(parts.authenticatorData, alphabet: .url, padding: false)),
                "clientDataJSON": .string(Base64.encode(parts.clientDataJSON, alphabet: .url, padding: false)),
                "signature": .string(Base64.encode(parts.signature, alphabet: .url, padding: false)),
            ]),
            "clientExtensionResults": .object([:]),
        ])
        let hasTurnkeyKey = user.backup?.subOrgId != nil
        var payload: [String: JSONValue] = [
            "existingFactorAuthorization": Authorizations.passkey(assertion),
            "existingFactorChallengeToken": .string(existingToken),
            "existingFactorTurnkeyActivity": .string(String(decoding: activity, as: UTF8.self)),
            "newFactorAuthorization": Authorizations.oidc(
                provider, token: token, session: session, challenge: newChallenge),
            "newFactorChallengeToken": .string(newToken), "turnkeyProviderId": .string(providerId),
        ]
        let turnkeyKey = EncryptionKey.turnkey(
            TurnkeyKey(
                encryptedKey: Hex.encode(random.bytes(48)), turnkeyAccountId: subOrg.id,
                turnkeyUserId: subOrg.authUserId, turnkeyPrivateKeyId: random.uuid()))
        if !hasTurnkeyKey { payload["encryptedBackupKey"] = Self.json(turnkeyKey) }
        count("service.requests")
        let outcome = await service.post("/v1/add-factor", body: .object(payload), fault: serviceFault(user))
        guard case .ok(let json) = outcome, let factorId = json["factorId"]?.stringValue else {
            count("bf3.failed")
            abandon(user, createdHere, "\(step) /v1/add-factor failed (\(outcome.code ?? "no answer"))")
            return
        }
        user.backup?.oidc.append(
            .init(factorId: factorId, provider: provider, sub: user.subs[provider] ?? "", providerId: providerId))
        if !hasTurnkeyKey { user.backup?.keys.append(turnkeyKey) }
        orphanSteps[subOrg.id] = nil
        count("bf3.added")
        info(user, "add_factor.factor_added")
    }

    /// The sub-org this flow made is left unused: orphaned, and no longer the user's.
    func abandon(_ user: SimUser, _ subOrg: String?, _ step: String) {
        guard let subOrg else { return }
        orphaned(subOrg, user: user, step: step, logged: false)
        if user.subOrg?.id == subOrg { user.subOrg = nil }
    }

    /// A few milliseconds pass (on the simulated clock).
    func wait() { time?.advance(byMillis: 3) }

    /// A factor of an answer's exported metadata.
    struct ExportedFactor {
        var id: String
        var kind: String
        var publicKey: String
    }

    static func factors(_ list: JSONValue?) -> [ExportedFactor] {
        guard case .array(let items)? = list else { return [] }
        return items.compactMap { item in
            guard let id = item["id"]?.stringValue, let kind = item["kind"]?["kind"]?.stringValue else { return nil }
            return ExportedFactor(id: id, kind: kind, publicKey: item["kind"]?["publicKey"]?.stringValue ?? "")
        }
    }

    /// A Codable value as JSON.
    static func json(_ value: some Encodable) -> JSONValue {
        (try? JSONEncoder().encode(value)).flatMap { FastJSON.parse(Array($0)) } ?? .null
    }
}
