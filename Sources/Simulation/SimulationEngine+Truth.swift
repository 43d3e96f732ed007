import BackupCrypto
import BackupModel
import Foundation

extension SimulationEngine {
    /// The ground truth of the world as it ends: the orphans with their steps, each backup's
    /// findings (`check` and the live `check --turnkey` checks), and the index drift.
    func truth() -> GroundTruth {
        var referenced: Set<String> = []
        var backups: [String] = []
        var findings: [GroundTruth.Finding] = []
        var turnkeyFindings: [GroundTruth.Finding] = []
        var drift: [GroundTruth.Drift] = []
        for user in users {
            guard let backup = user.backup else { continue }
            backups.append(user.backupId)
            if let id = backup.subOrgId { referenced.insert(id) }
            func finding(_ check: String, _ status: String) -> GroundTruth.Finding {
                GroundTruth.Finding(backupId: user.backupId, check: check, status: status)
            }
            // `check`, in the order of its checks.
            if !backup.staleRows.isEmpty { findings.append(finding("lookup_rows_unauthorized", "warn")) }
            let tags = backup.keys.map(\.tag)
            let hasPasskey = backup.passkeyFactor != nil
            let unkeyed =
                (hasPasskey && !tags.contains("PRF")) || (backup.keychainFactor != nil && !tags.contains("ICLOUD"))
                || (!backup.oidc.isEmpty && !tags.contains("TURNKEY"))
            if unkeyed { findings.append(finding("factor_keys", "fail")) }
            let spare =
                (tags.contains("PRF") && !hasPasskey) || (tags.contains("ICLOUD") && backup.keychainFactor == nil)
                || (tags.contains("TURNKEY") && backup.oidc.isEmpty)
            if spare { findings.append(finding("orphan_keys", "warn")) }
            if !backup.oidc.isEmpty && !hasPasskey { findings.append(finding("oidc_without_passkey", "warn")) }
            for pk in backup.staleRows.sorted() {
                drift.append(.init(backupId: user.backupId, pk: pk, kind: "unauthorized_factor"))
            }
            // `check --turnkey`.
            guard let subOrgId = backup.subOrgId else { continue }
            guard existingSubOrgs.contains(subOrgId), let subOrg = user.subOrg, subOrg.id == subOrgId else {
                turnkeyFindings.append(finding("turnkey_suborg", "fail"))
                continue
            }
            if backup.oidc.contains(where: { subOrg.providers[$0.providerId] == nil }) {
                turnkeyFindings.append(finding("turnkey_oidc_providers", "fail"))
            }
            let missing = backup.syncFactors.keys.contains { key in
                guard let bytes = Base64.decode(key, alphabet: .standard), let compressed = try? P256.compress(bytes)
                else { return true }
                return !subOrg.syncKeys.contains(Hex.encode(compressed))
            }
            if missing { turnkeyFindings.append(finding("turnkey_sync_keys", hasPasskey ? "warn" : "fail")) }
        }
        for row in leftoverRows { drift.append(.init(backupId: row.backupId, pk: row.pk, kind: "orphan_row")) }
        var orphans: [GroundTruth.Orphan] = []
        for id in existingSubOrgs.subtracting(referenced).sorted() {
            let step = orphanSteps[id] ?? (-1, "unknown", false)
            let backupId = step.user >= 0 ? users[step.user].backupId : ""
            orphans.append(
                .init(
                    subOrgId: id, user: step.user, backupId: backupId, step: step.step,
                    logged: loggedSubOrgs.contains(id)))
        }
        let end = start + Int64(options.days) * 86_400
        return GroundTruth(
            seed: options.seed, users: options.users, days: options.days, start: start, end: end, options: options,
            counts: counts, backups: backups.sorted(), subOrgs: existingSubOrgs.sorted(), orphans: orphans,
            findings: findings.sorted { ($0.backupId, $0.check) < ($1.backupId, $1.check) },
            turnkeyFindings: turnkeyFindings.sorted { ($0.backupId, $0.check) < ($1.backupId, $1.check) },
            drift: drift.sorted { ($0.backupId, $0.pk) < ($1.backupId, $1.pk) }, logged: loggedSubOrgs.sorted())
    }
}
