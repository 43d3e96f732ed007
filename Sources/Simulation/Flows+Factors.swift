import BackupCrypto
import BackupModel
import Foundation

/// BF-3 (adding a main factor) and BF-7 (deleting one).
extension SimulationEngine {
    /// BF-3: a passkey user adds an OIDC account (a second provider if they have one already).
    func addFactor(_ user: SimUser) async {
        guard let backup = user.backup, user.passkey != nil, backup.passkeyFactor != nil, backup.oidc.count < 2,
            let device = user.activeDevices.first
        else { return }
        count("bf3.attempts")
        let provider: OIDCProvider =
            backup.oidc.first.map { $0.provider == .google ? .apple : .google } ?? user.primaryProvider
        await addOIDC(user, device: device, provider: provider, session: nil, token: nil, step: "BF-3")
    }

    /// BF-7: delete a main factor with the device's sync factor. The user may not remove a
    /// passkey while an OIDC account exists; removing the last main factor deletes the backup.
    func deleteFactor(_ user: SimUser) async {
        guard let backup = user.backup, let device = user.activeDevices.first else { return }
        enum Target { case oidc(SimUser.OIDCFactor), passkey(String), keychain(String) }
        let target: Target
        if let factor = backup.oidc.last {
            target = .oidc(factor)
        } else if let id = backup.passkeyFactor {
            target = .passkey(id)
        } else if let id = backup.keychainFactor {
            target = .keychain(id)
        } else {
            return
        }
        count("bf7.attempts")
        let last = backup.mainFactors == 1
        let sync = TurnkeyStamper.p256(user.devices[device].key.secret)
        var factorId: String
        var key: EncryptionKey?
        var lastOIDC = false
        var providerId: String?
        switch target {
        case .oidc(let factor):
            factorId = factor.factorId
            lastOIDC = backup.oidc.count == 1
            providerId = factor.providerId
            // An older client does not send the TURNKEY key with the last OIDC factor (the key and
            // its sub-org reference stay: `orphan_keys`, inferred like the order below).
            if lastOIDC && !last && !user.oldClient { key = backup.keys.first { $0.tag == "TURNKEY" } }
        case .passkey(let id):
            factorId = id
            if !last { key = backup.keys.first { $0.tag == "PRF" } }
        case .keychain(let id):
            factorId = id
            if !last { key = backup.keys.first { $0.tag == "ICLOUD" } }
        }
        // Every factor change starts from the metadata (it surfaces an unauthorized device first).
        guard await retrieveMetadata(user, device: device) != nil else { return }
        // An older client does the Turnkey part first (the inferred order that leaves a
        // factor without its provider, or a backup without its sub-org, when the service fails).
        if user.oldClient, user.subOrg?.exists == true, let providerId {
            if lastOIDC {
                if case .failed = await deleteSubOrg(user, stamper: sync, passkeyFallback: true) {
                    count("bf7.turnkey_failed")
                }
            } else {
                await deleteProvider(user, providerId, sync: sync)
            }
        }
        guard
            let (challenge, token) = await service.keypairChallenge(
                "/v1/delete-factor/challenge/keypair", body: .object(["factorId": .string(factorId)]),
                faults: challengeFaults(user))
        else { return }
        var body: [String: JSONValue] = [
            "authorization": Authorizations.ecKeypair(user.devices[device].key, challenge: challenge),
            "challengeToken": .string(token), "factorId": .string(factorId), "scope": .string("MAIN"),
        ]
        if let key { body["encryptionKey"] = Self.json(key) }
        let fault = serviceFault(user, deletion: true)
        count("service.requests")
        let outcome = await service.post("/v1/delete-factor", body: .object(body), attest: true, fault: fault)
        let subOrgBefore = user.subOrg?.exists == true ? user.subOrg?.id : nil
        switch outcome {
        case .ok:
            removeFromModel(user, target: factorId, key: key, last: last, staleRow: false)
        case .refused(500, _) where fault == "lookup-delete":
            // The metadata changed; the FactorLookup row (or rows) stayed; the client saw a 500
            // and showed a failure, so it never reached Turnkey.
            count("bf7.lookup_left")
            removeFromModel(user, target: factorId, key: key, last: last, staleRow: true)
            if let subOrgBefore, user.backup?.subOrgId != subOrgBefore {
                orphaned(
                    subOrgBefore, user: user, step: "BF-7 delete-factor answered 500 after the metadata write",
                    logged: false)
            }
            return
        default:
            count("bf7.failed")
            return
        }
        count("bf7.deleted")
        info(user, last ? "remove_factor.backup_deleted" : "remove_factor.factor_deleted")
        if user.oldClient, providerId != nil {
            // The older client tried Turnkey first; a sub-org it could not delete and no backup
            // names any more is orphaned.
            if let subOrg = user.subOrg, subOrg.exists, user.backup?.subOrgId != subOrg.id {
                orphaned(
                    subOrg.id, user: user,
                    step: "BF-7 (older client) delete_sub_organization failed before the service deletion",
                    logged: true)
            }
            return
        }
        // The Turnkey part, with the sync factor: the whole sub-org when its last OIDC factor
        // (or the backup) went, else the one provider.
        guard let subOrg = user.subOrg, subOrg.exists else { return }
        if last || lastOIDC {
            await tearDown(
                user, stamper: sync, passkeyFallback: !last, step: "BF-7 delete_sub_organization",
                noKey: "BF-7 delete_sub_organization: PUBLIC_KEY_NOT_FOUND and no passkey", logged: true)
        } else if let providerId {
            await deleteProvider(user, providerId, sync: sync)
        }
    }

    /// `delete_oauth_providers` with the sync factor; on `PUBLIC_KEY_NOT_FOUND` a new sync user is
    /// made with the passkey and the deletion tried with it. Failures are logged and left.
    func deleteProvider(_ user: SimUser, _ providerId: String, sync: TurnkeyStamper) async {
        guard let subOrg = user.subOrg, subOrg.exists, subOrg.providers[providerId] != nil else { return }
        let parameters = JSONValue.object([
            "userId": .string(subOrg.authUserId), "providerIds": .array([.string(providerId)]),
        ])
        var outcome = await submit(
            user, Self.deleteProvidersPath, type: "ACTIVITY_TYPE_DELETE_OAUTH_PROVIDERS", org: subOrg.id, parameters,
            sync)
        if outcome.errorCode == "PUBLIC_KEY_NOT_FOUND", let passkey = user.passkey, subOrg.passkeyRegistered,
            case .p256 = sync, let device = user.activeDevices.first
        {
            count("bf7.new_sync_user")
            await addSyncUser(
                user, device: device, stamper: .passkey(credentialId: passkey.credentialId, key: passkey.key))
            outcome = await submit(
                user, Self.deleteProvidersPath, type: "ACTIVITY_TYPE_DELETE_OAUTH_PROVIDERS", org: subOrg.id,
                parameters,
                sync)
        }
        if case .completed = outcome { user.subOrg?.providers[providerId] = nil }
    }

    /// The model after the service removed a factor (and with it `key`; all of it when it was
    /// the last main factor). With `staleRow`, the FactorLookup row stayed behind.
    func removeFromModel(_ user: SimUser, target factorId: String, key: EncryptionKey?, last: Bool, staleRow: Bool) {
        guard var backup = user.backup else { return }
        if last {
            if staleRow {
                for pk in lookupKeys(user, backup) { leftoverRows.append((user.backupId, pk)) }
            }
            user.backup = nil
            user.state = .gone
            return
        }
        var pk: String?
        if let index = backup.oidc.firstIndex(where: { $0.factorId == factorId }) {
            let factor = backup.oidc.remove(at: index)
            pk = FactorLookupKey(scope: .main, factor: .oidc(issuer: factor.provider.issuer, sub: factor.sub)).rawValue
        } else if backup.passkeyFactor == factorId, let passkey = user.passkey {
            backup.passkeyFactor = nil
            pk =
                FactorLookupKey(
                    scope: .main,
                    factor: .passkey(credentialId: Base64.encode(passkey.credentialId, alphabet: .url, padding: false))
                ).rawValue
        } else if backup.keychainFactor == factorId, let keychain = user.keychain {
            backup.keychainFactor = nil
            pk = FactorLookupKey(scope: .main, factor: .ecKeypair(publicKey: keychain.serviceForm)).rawValue
        }
        if let key, let index = backup.keys.firstIndex(of: key) { backup.keys.remove(at: index) }
        if staleRow, let pk { backup.staleRows.insert(pk) }
        user.backup = backup
    }

    /// Every FactorLookup key the service holds for the backup (the metadata's and the stale ones).
    func lookupKeys(_ user: SimUser, _ backup: SimUser.Backup) -> [String] {
        var keys = Array(backup.staleRows)
        if let passkey = user.passkey, backup.passkeyFactor != nil {
            keys.append(
                FactorLookupKey(
                    scope: .main,
                    factor: .passkey(credentialId: Base64.encode(passkey.credentialId, alphabet: .url, padding: false))
                ).rawValue)
        }
        if let keychain = user.keychain, backup.keychainFactor != nil {
            keys.append(FactorLookupKey(scope: .main, factor: .ecKeypair(publicKey: keychain.serviceForm)).rawValue)
        }
        for factor in backup.oidc {
            keys.append(
                FactorLookupKey(scope: .main, factor: .oidc(issuer: factor.provider.issuer, sub: factor.sub)).rawValue)
        }
        for key in backup.syncFactors.keys {
            keys.append(FactorLookupKey(scope: .sync, factor: .ecKeypair(publicKey: key)).rawValue)
        }
        return keys
    }
}
