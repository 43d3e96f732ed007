import BackupCrypto
import BackupModel
import Foundation

/// BF-8 (deleting the account's backup) and the `/reset` of a user who lost every factor.
extension SimulationEngine {
    /// BF-8: `/v1/delete-backup` with the sync factor (authoritative), then the sub-org, best effort.
    func deleteAccount(_ user: SimUser) async {
        guard user.backup != nil, let device = user.activeDevices.first else { return }
        count("bf8.attempts")
        guard
            let (challenge, token) = await service.keypairChallenge(
                "/v1/delete-backup/challenge/keypair", faults: challengeFaults(user))
        else { return retryDeletion(user) }
        let fault = serviceFault(user, deletion: true)
        count("service.requests")
        let outcome = await service.post(
            "/v1/delete-backup",
            body: .object([
                "authorization": Authorizations.ecKeypair(user.devices[device].key, challenge: challenge),
                "challengeToken": .string(token),
            ]), fault: fault)
        let subOrg = user.subOrg?.exists == true ? user.subOrg?.id : nil
        switch outcome {
        case .ok:
            count("bf8.deleted")
            info(user, "delete_backup.backup_deleted")
            user.backup = nil
            user.state = .gone
            guard subOrg != nil else { return }
            if case .failed(let code) = await deleteSubOrg(
                user, stamper: .p256(user.devices[device].key.secret), passkeyFallback: false), let subOrg
            {
                orphaned(
                    subOrg, user: user,
                    step: "BF-8 delete_sub_organization failed after retries (\(code ?? "transient"))", logged: false)
            }
        case .refused(500, _) where fault == "lookup-delete":
            // S3 is gone, the rows stayed, the client saw a failure and stopped.
            count("bf8.lookup_left")
            if let backup = user.backup {
                for pk in lookupKeys(user, backup) { leftoverRows.append((user.backupId, pk)) }
            }
            user.backup = nil
            user.state = .gone
            if let subOrg {
                orphaned(
                    subOrg, user: user, step: "BF-8 delete-backup answered 500 after deleting the backup", logged: false
                )
            }
        default:
            retryDeletion(user)
        }
    }

    func retryDeletion(_ user: SimUser) {
        count("bf8.failed")
        user.pendingDeletion += 1
        if user.pendingDeletion > 3 { user.pendingDeletion = 0 }
    }

    /// Lost every factor and device, kept the Root Key: `/v1/reset` signed with the Backup
    /// Account Key, then the sub-org's teardown stamped by it as the break-glass user; then a
    /// fresh backup on a later day.
    func loseEverything(_ user: SimUser) async {
        count("users.lost_everything")
        for index in user.devices.indices { user.devices[index].lost = true }
        user.passkey = nil
        user.keychain = nil
        user.lockedOut = true
        await reset(user)
    }

    func reset(_ user: SimUser) async {
        count("reset.attempts")
        guard
            let (challenge, token) = await service.keypairChallenge(
                "/v1/reset/challenge/keypair", body: .object(["backupAccountId": .string(user.backupId)]),
                faults: challengeFaults(user)),
            let signature = try? BackupAccountKey.signChallenge(challenge, rootKey: user.rootKey)
        else { return }
        count("service.requests")
        let outcome = await service.post(
            "/v1/reset",
            body: .object([
                "backupAccountId": .string(user.backupId), "signature": .string(Base64.encode(signature)),
                "challengeToken": .string(token),
            ]), fault: serviceFault(user))
        guard case .ok = outcome else {
            // The user is locked out until a reset goes through; they try again another day.
            count("reset.failed")
            return
        }
        count("reset.done")
        info(user, "reset.backup_reset")
        user.backup = nil
        if user.subOrg?.exists == true {
            if await tearDown(
                user, stamper: .secp256k1(user.accountKey), passkeyFallback: false, step: "reset teardown",
                noKey: "reset teardown: no break-glass user (PUBLIC_KEY_NOT_FOUND)", logged: false)
            {
                count("reset.teardown")
            }
        }
        user.subOrg = nil
        user.state = .waiting
        user.lockedOut = false
        user.joinDay = day + 1
        user.createFailures = 0
    }
}
