import BackupCrypto
import BackupModel
import Foundation
import SandboxIdentity

/// BF-2 (retrieval on a new device), BF-4 (sync), BF-5 (remote-update detection), BF-6
/// (several devices).
extension SimulationEngine {
    /// What a retrieval with a main factor gave the client.
    struct Retrieved {
        var manifest: String
        var syncFactorToken: String
        /// A root credential for Turnkey steps: the OIDC session after `oauth_login`, or the passkey.
        var stamper: TurnkeyStamper?
    }

    /// `/v1/retrieve/from-challenge` with the user's best main factor (passkey, then OIDC, then
    /// the keychain key); an OIDC retrieval also logs in at Turnkey to reach the factor secret.
    func retrieve(_ user: SimUser) async -> Retrieved? {
        guard let backup = user.backup else { return nil }
        let authorization: JSONValue
        let token: String
        var oidc: (OIDCProvider, String, SimKey)?
        if let passkey = user.passkey, backup.passkeyFactor != nil {
            guard
                let (challenge, challengeToken) = await service.passkeyChallenge(
                    "/v1/retrieve/challenge/passkey", body: nil, faults: challengeFaults(user)),
                let assertion = try? SandboxWebAuthn.assert(
                    challenge: challenge, credentialId: passkey.credentialId, privateKey: passkey.key)
            else { return nil }
            authorization = Authorizations.passkey(assertion)
            token = challengeToken
        } else if let factor = backup.oidc.first {
            let session = SimKey(user.random)
            guard
                let (challenge, challengeToken) = await service.keypairChallenge(
                    "/v1/retrieve/challenge/keypair", faults: challengeFaults(user))
            else { return nil }
            let idToken = self.idToken(user, factor.provider, session: session)
            authorization = Authorizations.oidc(factor.provider, token: idToken, session: session, challenge: challenge)
            token = challengeToken
            oidc = (factor.provider, idToken, session)
        } else if let keychain = user.keychain, backup.keychainFactor != nil {
            guard
                let (challenge, challengeToken) = await service.keypairChallenge(
                    "/v1/retrieve/challenge/keypair", faults: challengeFaults(user))
            else { return nil }
            authorization = Authorizations.ecKeypair(keychain, challenge: challenge)
            token = challengeToken
        } else {
            return nil
        }
        count("service.requests")
        let outcome = await service.post(
            "/v1/retrieve/from-challenge",
            body: .object(["authorization": authorization, "challengeToken": .string(token)]),
            attest: true, fault: serviceFault(user))
        guard case .ok(let json) = outcome, let manifest = json["metadata"]?["manifestHash"]?.stringValue,
            let syncToken = json["syncFactorToken"]?.stringValue
        else {
            count("bf2.retrieve_failed")
            return nil
        }
        var retrieved = Retrieved(manifest: manifest, syncFactorToken: syncToken)
        if let (_, idToken, session) = oidc {
            // The factor secret lives in Turnkey: an OIDC login there, or the backup cannot be opened.
            guard let subOrg = user.subOrg, subOrg.exists else { return nil }
            let login = await submit(
                user, Self.oauthLoginPath, type: "ACTIVITY_TYPE_OAUTH_LOGIN", org: subOrg.id,
                .object([
                    "oidcToken": .string(idToken), "publicKey": .string(session.turnkeyForm),
                    "expirationSeconds": .string("300"),
                ]), .p256(turnkey.parentKey))
            guard case .completed = login else {
                count("bf2.turnkey_login_failed")
                return nil
            }
            retrieved.stamper = .p256(session.secret)
        } else if let passkey = user.passkey, user.subOrg?.passkeyRegistered == true {
            retrieved.stamper = .passkey(credentialId: passkey.credentialId, key: passkey.key)
        }
        return retrieved
    }

    /// BF-2 / BF-6: a new device retrieves the backup, registers its sync factor with the
    /// service (with the retrieval's `syncFactorToken`), then with Turnkey.
    func addDevice(_ user: SimUser) async {
        count("bf2.attempts")
        guard let retrieved = await retrieve(user) else { return }
        let device = user.newDevice(manifest: retrieved.manifest)
        guard
            let (challenge, token) = await service.keypairChallenge(
                "/v1/add-sync-factor/challenge/keypair", faults: challengeFaults(user))
        else { return dropDevice(user, device) }
        count("service.requests")
        let outcome = await service.post(
            "/v1/add-sync-factor",
            body: .object([
                "challengeToken": .string(token),
                "syncFactor": Authorizations.ecKeypair(user.devices[device].key, challenge: challenge),
                "syncFactorToken": .string(retrieved.syncFactorToken),
            ]), fault: serviceFault(user))
        guard case .ok = outcome else { return dropDevice(user, device) }
        user.backup?.syncFactors[user.devices[device].key.serviceForm] = ""
        count("bf2.devices_added")
        info(user, "add_sync_factor.added")
        if user.backup?.subOrgId != nil, let stamper = retrieved.stamper {
            await addSyncUser(user, device: device, stamper: stamper)
        } else if user.backup?.subOrgId != nil {
            count("turnkey.sync_user_missing")
        }
    }

    func dropDevice(_ user: SimUser, _ device: Int) {
        user.devices[device].lost = true
        count("bf2.failed")
    }

    /// BF-4: a silent sync from `device`, behind the manifest gate; a stale device (412) runs
    /// BF-5 (a retrieval with a main factor) and syncs again.
    func sync(_ user: SimUser, device: Int, again: Bool = false) async {
        count("bf4.attempts")
        let random = user.random
        guard
            let (challenge, token) = await service.keypairChallenge(
                "/v1/sync/challenge/keypair", faults: challengeFaults(user))
        else { return }
        let next = user.newManifest()
        let payload = JSONValue.object([
            "authorization": Authorizations.ecKeypair(user.devices[device].key, challenge: challenge),
            "challengeToken": .string(token), "currentManifestHash": .string(user.devices[device].localManifest),
            "newManifestHash": .string(next),
        ])
        count("service.requests")
        let outcome = await service.postForm(
            "/v1/sync", payload: payload, blob: random.bytes(256 + Int(random.uniform(1792))),
            boundary: "sim-\(Hex.encode(random.bytes(8)))", fault: serviceFault(user))
        switch outcome {
        case .ok:
            user.backup?.manifest = next
            user.devices[device].localManifest = next
            count("bf4.synced")
        case .refused(412, _) where !again:
            count("bf5.stale")
            guard let retrieved = await retrieve(user) else { return }
            user.devices[device].localManifest = retrieved.manifest
            await sync(user, device: device, again: true)
        default:
            count("bf4.failed")
        }
    }

    /// BF-5 at launch: `/v1/retrieve-metadata` with the sync factor; a remote manifest newer than
    /// the local one sends the user through a retrieval.
    func checkRemote(_ user: SimUser, device: Int) async {
        guard let metadata = await retrieveMetadata(user, device: device) else { return }
        if metadata["manifestHash"]?.stringValue != user.devices[device].localManifest {
            count("bf5.remote_ahead")
            guard let retrieved = await retrieve(user) else { return }
            user.devices[device].localManifest = retrieved.manifest
        }
    }

    func retrieveMetadata(_ user: SimUser, device: Int) async -> JSONValue? {
        guard
            let (challenge, token) = await service.keypairChallenge(
                "/v1/retrieve-metadata/challenge/keypair", faults: challengeFaults(user))
        else { return nil }
        count("service.requests")
        let outcome = await service.post(
            "/v1/retrieve-metadata",
            body: .object([
                "authorization": Authorizations.ecKeypair(user.devices[device].key, challenge: challenge),
                "challengeToken": .string(token), "backupId": .string(user.backupId),
            ]), fault: serviceFault(user))
        guard case .ok(let json) = outcome else { return nil }
        return json
    }
}
