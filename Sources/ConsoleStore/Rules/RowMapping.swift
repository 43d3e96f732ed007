import BackupModel
import Foundation

/// Every record read from a row, mapped once for every backend: the column lists the rules
/// select and the records they make.
public enum RowMapping {
    public static let tenantColumns =
        "name, is_sandbox, turnkey_url, turnkey_org_id, turnkey_api_key_file, cleanup_key_file, policy, created_at, backup_service_url"

    public static func tenant(_ row: SQLRow) throws -> TenantRecord {
        let name: String = try row.get("name")
        let policy = try TenantPolicy.stored(try row.get("policy"), tenant: name)
        return TenantRecord(
            name: try TenantName(name), isSandbox: try row.get("is_sandbox"), turnkeyURL: try row.get("turnkey_url"),
            turnkeyOrgId: try row.get("turnkey_org_id"), turnkeyAPIKeyFile: try row.get("turnkey_api_key_file"),
            cleanupKeyFile: try row.get("cleanup_key_file"), backupServiceURL: try row.get("backup_service_url"),
            policy: policy, createdAt: try row.get("created_at"))
    }

    public static let operatorColumns = "name, can_create_tenants, created_at"

    public static func `operator`(_ row: SQLRow) throws -> OperatorRecord {
        OperatorRecord(
            name: try OperatorName(row.get("name", as: String.self)),
            canCreateTenants: try row.get("can_create_tenants"),
            createdAt: try row.get("created_at"))
    }

    public static func grant(_ row: SQLRow) throws -> GrantRecord {
        let roleValue: Int = try row.get("role")
        guard let role = Role(rawValue: roleValue) else {
            throw ConsoleError.internalError("A grant in the store has an unknown role \(roleValue).")
        }
        return GrantRecord(
            operatorName: try OperatorName(row.get("operator", as: String.self)),
            tenant: try TenantName(row.get("tenant", as: String.self)), role: role)
    }

    public static let auditColumns = "seq, at, operator, tenant, action, target, details, prev_hash, hash"

    public static func auditEntry(_ row: SQLRow) throws -> AuditEntry {
        let seq: Int64 = try row.get("seq")
        let details: [String: String]
        do {
            details = try JSONDecoder().decode(
                [String: String].self, from: Data(row.get("details", as: String.self).utf8))
        } catch {
            throw ConsoleError.internalError("Audit entry \(seq) has unreadable details.")
        }
        let draft = AuditDraft(
            operatorName: try row.get("operator"), tenant: try row.get("tenant"), action: try row.get("action"),
            target: try row.get("target"), details: details)
        return AuditEntry(
            seq: seq, at: try row.get("at"), draft: draft, prevHash: try row.get("prev_hash"), hash: try row.get("hash")
        )
    }

    public static let checkpointColumns = "seq, head_hash, at, prev_checkpoint_hash, signature"

    public static func checkpoint(_ row: SQLRow) throws -> AuditCheckpoint {
        AuditCheckpoint(
            seq: try row.get("seq"), headHash: try row.get("head_hash"), atMillis: try row.get("at"),
            prevCheckpointHash: try row.get("prev_checkpoint_hash"), signature: try row.get("signature"))
    }

    public static let backupColumns = "backup_id, metadata, blob_size, blob_sha256, imported_at, updated_at"

    public static func backup(_ row: SQLRow) throws -> BackupRecord {
        let id: String = try row.get("backup_id")
        let metadata: BackupMetadata
        do {
            metadata = try BackupMetadata.decode(Data(row.get("metadata", as: String.self).utf8))
        } catch {
            throw ConsoleError.internalError("Backup \(id) has unreadable metadata in the store: \(error.message)")
        }
        return BackupRecord(
            backupId: id, metadata: metadata, blobSize: try row.get("blob_size"),
            blobSHA256: try row.get("blob_sha256"),
            importedAt: try row.get("imported_at"), updatedAt: try row.get("updated_at"))
    }

    public static let cleanupColumns =
        "suborg_id, reason, first_seen_at, state, body, attempts, last_error, updated_at, last_backup_id, version"

    public static func cleanupItem(_ row: SQLRow) throws -> CleanupItemRecord {
        let stateText: String = try row.get("state")
        guard let state = CleanupItemRecord.State(rawValue: stateText) else {
            throw ConsoleError.internalError("A cleanup item has an unknown state \(stateText.prefix(40)).")
        }
        return CleanupItemRecord(
            subOrgId: try row.get("suborg_id"), reason: try row.get("reason"),
            firstSeenAt: try row.get("first_seen_at"),
            state: state, body: try row.get("body"), attempts: try row.get("attempts"),
            lastError: try row.get("last_error"), updatedAt: try row.get("updated_at"),
            lastBackupId: try row.get("last_backup_id"), version: try row.get("version"))
    }

    public static let snapshotColumns = "seq, snapshot_at, complete, imported_at, backups, retired"

    public static func snapshot(_ row: SQLRow) throws -> SnapshotRecord {
        SnapshotRecord(
            seq: try row.get("seq"), snapshotAt: try row.get("snapshot_at"), complete: try row.get("complete"),
            importedAt: try row.get("imported_at"), backups: try row.get("backups"), retired: try row.get("retired"))
    }

    public static let challengeColumns =
        "token_hash, tenant, backup_id, context, challenge, created_at, expires_at, used_at, sent_at"

    public static func challenge(_ row: SQLRow) throws -> ResetChallengeRecord {
        ResetChallengeRecord(
            tokenHash: try row.get("token_hash"), tenant: try TenantName(row.get("tenant", as: String.self)),
            backupId: try row.get("backup_id"), context: try row.get("context"),
            challenge: [UInt8](try row.get("challenge", as: Data.self)), createdAt: try row.get("created_at"),
            expiresAt: try row.get("expires_at"), usedAt: try row.get("used_at"), sentAt: try row.get("sent_at"))
    }

    public static let summaryColumns = """
        backup_id, main_factors, sync_factors, passkeys, oidc_factors, keychain_factors, prf_keys, icloud_keys, \
        turnkey_keys, unindexed_factors, bad_sync_factors, bad_sync_factor_id, bad_sync_problem, \
        malformed_manifest_hash, blob_size
        """

    public static func summary(_ row: SQLRow) throws -> BackupSummary {
        var bad: BackupSummary.BadSyncFactor?
        if let id: String = try row.get("bad_sync_factor_id"), let code: String = try row.get("bad_sync_problem"),
            let problem = SyncFactorProblem(code: code)
        {
            bad = BackupSummary.BadSyncFactor(factorId: id, problem: problem)
        }
        return BackupSummary(
            backupId: try row.get("backup_id"), mainFactors: try row.get("main_factors"),
            syncFactors: try row.get("sync_factors"), passkeys: try row.get("passkeys"),
            oidcFactors: try row.get("oidc_factors"), keychainFactors: try row.get("keychain_factors"),
            prfKeys: try row.get("prf_keys"), icloudKeys: try row.get("icloud_keys"),
            turnkeyKeys: try row.get("turnkey_keys"), unindexedFactors: try row.get("unindexed_factors"),
            badSyncFactors: try row.get("bad_sync_factors"), firstBadSyncFactor: bad,
            malformedManifestHash: try row.get("malformed_manifest_hash"), blobSize: try row.get("blob_size"))
    }

    /// A JSON array of strings as stored (`reset_challenges.suborg_ids`); unreadable is empty.
    public static func stringList(_ text: String?) -> [String] {
        text.flatMap { try? JSONDecoder().decode([String].self, from: Data($0.utf8)) } ?? []
    }

    public static func stringListText(_ list: [String]) -> String {
        String(decoding: (try? JSONEncoder().encode(list)) ?? Data("[]".utf8), as: UTF8.self)
    }
}
