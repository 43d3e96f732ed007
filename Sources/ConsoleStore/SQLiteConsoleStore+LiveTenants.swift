import BackupModel
import Foundation
import GRDB

extension SQLiteConsoleStore: LiveTenantStore {
    public func setBackupServiceURL(tenant: TenantName, url: String?, audit: AuditDraft) async throws(ConsoleError) {
        try await write("setting the Backup Service URL of \(tenant)") { db in
            try db.execute(
                sql: "UPDATE tenants SET backup_service_url = ? WHERE name = ?", arguments: [url, tenant.rawValue])
            guard db.changesCount == 1 else { throw ConsoleError.notFound("Tenant \(tenant) does not exist.") }
            _ = try self.insertAudit(audit, db)
        }
    }

    @discardableResult
    public func updateTenantPolicy(
        tenant: TenantName, audit: AuditDraft, _ change: @escaping @Sendable (inout TenantPolicy) -> Void
    ) async throws(ConsoleError) -> TenantPolicy {
        try await write("updating the policy of \(tenant)") { db in
            let text = try String.fetchOne(
                db, sql: "SELECT policy FROM tenants WHERE name = ?", arguments: [tenant.rawValue])
            let policy = try TenantPolicy.changing(text, tenant: tenant, change)
            try db.execute(
                sql: "UPDATE tenants SET policy = ? WHERE name = ?", arguments: [policy.storedText, tenant.rawValue])
            _ = try self.insertAudit(audit, db)
            return policy
        }
    }

    public func setTurnkeyCredentials(
        tenant: TenantName, url: String, apiKeyFile: String, cleanupKeyFile: String?, audit: AuditDraft
    ) async throws(ConsoleError) {
        try await write("setting the Turnkey credentials of \(tenant)") { db in
            try db.execute(
                sql: """
                    UPDATE tenants SET turnkey_url = ?, turnkey_api_key_file = ?, cleanup_key_file = ?
                    WHERE name = ? AND NOT is_sandbox
                    """,
                arguments: [url, apiKeyFile, cleanupKeyFile, tenant.rawValue])
            guard db.changesCount == 1 else { throw ConsoleError.notFound("No live tenant \(tenant).") }
            _ = try self.insertAudit(audit, db)
        }
    }

    // MARK: Snapshots

    private static let snapshotColumns = "seq, snapshot_at, complete, imported_at, backups, retired"

    private static func snapshot(_ row: Row) -> SnapshotRecord {
        SnapshotRecord(
            seq: row["seq"], snapshotAt: row["snapshot_at"], complete: row["complete"], importedAt: row["imported_at"],
            backups: row["backups"], retired: row["retired"])
    }

    @discardableResult
    public func recordSnapshot(tenant: TenantName, _ snapshot: SnapshotRecord, audit: AuditDraft?)
        async throws(ConsoleError) -> SnapshotRecord
    {
        try await write("recording a snapshot of \(tenant)") { db in
            let seq =
                (try Int64.fetchOne(
                    db, sql: "SELECT max(seq) FROM snapshots WHERE tenant = ?", arguments: [tenant.rawValue]) ?? 0)
                + 1
            try db.execute(
                sql: "INSERT INTO snapshots (tenant, \(Self.snapshotColumns)) VALUES (?, ?, ?, ?, ?, ?, ?)",
                arguments: [
                    tenant.rawValue, seq, snapshot.snapshotAt, snapshot.complete, snapshot.importedAt,
                    snapshot.backups, snapshot.retired,
                ])
            if let audit { _ = try self.insertAudit(audit, db) }
            var recorded = snapshot
            recorded.seq = seq
            return recorded
        }
    }

    public func newestSnapshot(tenant: TenantName) async throws(ConsoleError) -> SnapshotRecord? {
        try await read("reading the newest snapshot of \(tenant)") { db in
            try Row.fetchOne(
                db,
                sql: """
                    SELECT \(Self.snapshotColumns) FROM snapshots WHERE tenant = ? AND snapshot_at IS NOT NULL
                    ORDER BY snapshot_at DESC, seq DESC LIMIT 1
                    """, arguments: [tenant.rawValue]
            ).map(Self.snapshot)
        }
    }

    public func newestCompleteSnapshot(tenant: TenantName) async throws(ConsoleError) -> SnapshotRecord? {
        try await read("reading the newest complete snapshot of \(tenant)") { db in
            try Row.fetchOne(
                db,
                sql: """
                    SELECT \(Self.snapshotColumns) FROM snapshots
                    WHERE tenant = ? AND snapshot_at IS NOT NULL AND complete = 1
                    ORDER BY snapshot_at DESC, seq DESC LIMIT 1
                    """, arguments: [tenant.rawValue]
            ).map(Self.snapshot)
        }
    }

    public func backupIds(tenant: TenantName) async throws(ConsoleError) -> [String] {
        try await read("listing the backups of \(tenant)") { db in
            try String.fetchAll(
                db, sql: "SELECT backup_id FROM backups WHERE tenant = ? ORDER BY backup_id",
                arguments: [tenant.rawValue])
        }
    }

    public func retireBackups(tenant: TenantName, ids: [String], now: Int64, audit: AuditDraft)
        async throws(ConsoleError)
        -> [ResetWipe]
    {
        try await write("retiring \(ids.count) backups of \(tenant)") { db in
            var wipes: [ResetWipe] = []
            for id in ids {
                guard let wipe = try Self.deleteBackupRows(tenant: tenant.rawValue, backupId: id, db) else { continue }
                for subOrg in wipe.turnkeySubOrgIds {
                    try Self.enqueue(
                        CleanupItemRecord(
                            subOrgId: subOrg, reason: "retired", firstSeenAt: now, updatedAt: now, lastBackupId: id),
                        tenant: tenant.rawValue, db)
                }
                wipes.append(wipe)
            }
            _ = try self.insertAudit(audit, db)
            return wipes
        }
    }

    /// Deletes one backup's metadata, blob, lookup rows, sub-org refs and derived rows.
    /// - Returns: what was removed, `nil` when the backup was not there.
    static func deleteBackupRows(tenant t: String, backupId id: String, _ db: Database) throws -> ResetWipe? {
        let metadataText = try String.fetchOne(
            db, sql: "SELECT metadata FROM backups WHERE tenant = ? AND backup_id = ?", arguments: [t, id])
        // The sub-orgs come from the metadata and the refs alike, so a ref without its key still counts.
        var subOrgs = metadataText.flatMap { try? BackupMetadata.decode(Data($0.utf8)).turnkeySubOrgIds } ?? []
        for ref in try String.fetchAll(
            db, sql: "SELECT suborg_id FROM suborg_refs WHERE tenant = ? AND backup_id = ? ORDER BY suborg_id",
            arguments: [t, id]) where !subOrgs.contains(ref)
        {
            subOrgs.append(ref)
        }
        try db.execute(sql: "DELETE FROM factor_lookup WHERE tenant = ? AND backup_id = ?", arguments: [t, id])
        let rowsRemoved = db.changesCount
        guard metadataText != nil || rowsRemoved > 0 else { return nil }
        // Blob, refs and derived rows go by ON DELETE CASCADE too; deleted explicitly so the intent is here.
        try db.execute(sql: "DELETE FROM sealed_blobs WHERE tenant = ? AND backup_id = ?", arguments: [t, id])
        try db.execute(sql: "DELETE FROM suborg_refs WHERE tenant = ? AND backup_id = ?", arguments: [t, id])
        try deleteDerived(backupId: id, tenant: t, db)
        try db.execute(sql: "DELETE FROM backups WHERE tenant = ? AND backup_id = ?", arguments: [t, id])
        return ResetWipe(backupId: id, lookupRowsRemoved: rowsRemoved, turnkeySubOrgIds: subOrgs)
    }

    // MARK: Resets through the Backup Service

    public func claimResetSend(
        tokenHash: String, subOrgIds: [String], holder: String, now: Int64, until: Int64, takeOver: String?
    ) async throws(ConsoleError) -> ResetSendClaim {
        try await write("claiming the send of a reset") { db in
            guard
                let row = try Row.fetchOne(
                    db,
                    sql: """
                        SELECT sent_at, used_at, sending_by, sending_until, suborg_ids FROM reset_challenges
                        WHERE token_hash = ?
                        """, arguments: [tokenHash])
            else { return .claimed(sentBefore: false) }
            if let other = row["sending_by"] as String?, other != holder, other != takeOver,
                let until = row["sending_until"] as Int64?, until >= now
            {
                return .inFlight(holder: other, until: until)
            }
            // A resend after the backup is gone knows fewer sub-orgs: keep what the first send knew.
            let text: String? = row["suborg_ids"]
            var known = text.flatMap { try? JSONDecoder().decode([String].self, from: Data($0.utf8)) } ?? []
            for id in subOrgIds where !known.contains(id) { known.append(id) }
            let json = String(decoding: (try? JSONEncoder().encode(known)) ?? Data("[]".utf8), as: UTF8.self)
            try db.execute(
                sql: """
                    UPDATE reset_challenges SET sent_at = ?, suborg_ids = ?, sending_by = ?, sending_until = ?
                    WHERE token_hash = ?
                    """,
                arguments: [now, json, holder, max(now, until), tokenHash])
            let sentAt: Int64? = row["sent_at"]
            let usedAt: Int64? = row["used_at"]
            return .claimed(sentBefore: sentAt != nil && usedAt == nil)
        }
    }

    public func releaseResetSend(tokenHash: String, holder: String) async throws(ConsoleError) {
        try await write("releasing the send of a reset") { db in
            try db.execute(
                sql: """
                    UPDATE reset_challenges SET sending_by = NULL, sending_until = NULL
                    WHERE token_hash = ? AND sending_by = ?
                    """, arguments: [tokenHash, holder])
        }
    }

    public func recordServiceReset(
        tenant: TenantName, tokenHash: String?, backupId: String, subOrgIds: [String], now: Int64,
        audit: ResetAuditDraft
    ) async throws(ConsoleError) -> ResetWipe {
        try await write("recording the reset of \(backupId)") { db in
            var known = subOrgIds
            if let tokenHash {
                if let text = try String.fetchOne(
                    db, sql: "SELECT suborg_ids FROM reset_challenges WHERE token_hash = ?", arguments: [tokenHash]),
                    let sent = try? JSONDecoder().decode([String].self, from: Data(text.utf8))
                {
                    for id in sent where !known.contains(id) { known.append(id) }
                }
                try db.execute(
                    sql: """
                        UPDATE reset_challenges SET used_at = coalesce(used_at, ?), sending_by = NULL,
                            sending_until = NULL
                        WHERE token_hash = ?
                        """,
                    arguments: [now, tokenHash])
            }
            let local = try Self.deleteBackupRows(tenant: tenant.rawValue, backupId: backupId, db)
            for id in local?.turnkeySubOrgIds ?? [] where !known.contains(id) { known.append(id) }
            for subOrg in known {
                try Self.enqueue(
                    CleanupItemRecord(
                        subOrgId: subOrg, reason: "reset", firstSeenAt: now, updatedAt: now, lastBackupId: backupId),
                    tenant: tenant.rawValue, db)
            }
            let wipe = ResetWipe(
                backupId: backupId, lookupRowsRemoved: local?.lookupRowsRemoved ?? 0, turnkeySubOrgIds: known)
            self.crashAt(.resetWiped)
            _ = try self.insertAudit(audit.completed(wipe), db)
            return wipe
        }
    }

    // MARK: The sandbox Backup Service

    public func sandboxServiceReset(tenant: TenantName, tokenHash: String, backupId: String, now: Int64)
        async throws(ConsoleError) -> Bool
    {
        try await write("resetting backup \(backupId) in the sandbox service") { db in
            try db.execute(
                sql:
                    "INSERT INTO sandbox_used_tokens (tenant, token_hash, used_at) VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
                arguments: [tenant.rawValue, tokenHash, now])
            guard db.changesCount == 1 else { return false }
            _ = try Self.deleteBackupRows(tenant: tenant.rawValue, backupId: backupId, db)
            return true
        }
    }

    // MARK: The cleanup run lease

    public func acquireCleanupLease(
        tenant: TenantName, holder: String, now: Int64, expiresAt: Int64, takeOver: String?
    ) async throws(ConsoleError) -> (holder: String, expiresAt: Int64)? {
        try await write("taking the cleanup lease of \(tenant)") { db in
            if let row = try Row.fetchOne(
                db, sql: "SELECT holder, expires_at FROM cleanup_leases WHERE tenant = ?", arguments: [tenant.rawValue]),
                (row["holder"] as String) != holder, (row["holder"] as String) != takeOver,
                (row["expires_at"] as Int64) >= now
            {
                return (row["holder"], row["expires_at"])
            }
            try db.execute(
                sql: """
                    INSERT INTO cleanup_leases (tenant, holder, acquired_at, expires_at) VALUES (?, ?, ?, ?)
                    ON CONFLICT (tenant) DO UPDATE SET holder = excluded.holder, acquired_at = excluded.acquired_at,
                        expires_at = excluded.expires_at
                    """, arguments: [tenant.rawValue, holder, now, max(now, expiresAt)])
            return nil
        }
    }

    public func renewCleanupLease(tenant: TenantName, holder: String, expiresAt: Int64) async throws(ConsoleError)
        -> Bool
    {
        try await write("renewing the cleanup lease of \(tenant)") { db in
            try db.execute(
                sql: "UPDATE cleanup_leases SET expires_at = max(acquired_at, ?) WHERE tenant = ? AND holder = ?",
                arguments: [expiresAt, tenant.rawValue, holder])
            return db.changesCount == 1
        }
    }

    public func releaseCleanupLease(tenant: TenantName, holder: String) async throws(ConsoleError) {
        try await write("releasing the cleanup lease of \(tenant)") { db in
            try db.execute(
                sql: "DELETE FROM cleanup_leases WHERE tenant = ? AND holder = ?", arguments: [tenant.rawValue, holder])
        }
    }
}
