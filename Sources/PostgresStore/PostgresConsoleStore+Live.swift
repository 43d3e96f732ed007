import BackupModel
import ConsoleStore
import Foundation
import PostgresNIO

/// What acting on a live tenant needs (``LiveTenantStore``): snapshots, resets through the
/// Backup Service, the sandbox service's own state and the cleanup run lease. Where several
/// servers may race (a reset token, the lease), one guarded statement decides.
extension PostgresConsoleStore: LiveTenantStore {
    public func setBackupServiceURL(tenant: TenantName, url: String?, audit: AuditDraft) async throws(ConsoleError) {
        try await write("setting the Backup Service URL of \(tenant)") { connection in
            guard
                try await exists(
                    "UPDATE tenants SET backup_service_url = \(url) WHERE name = \(tenant.rawValue) RETURNING name",
                    connection)
            else { throw ConsoleError.notFound("Tenant \(tenant) does not exist.") }
            _ = try await insertAudit(audit, connection)
        }
    }

    @discardableResult
    public func updateTenantPolicy(
        tenant: TenantName, audit: AuditDraft, _ change: @escaping @Sendable (inout TenantPolicy) -> Void
    ) async throws(ConsoleError) -> TenantPolicy {
        try await write("updating the policy of \(tenant)") { connection in
            // The row stays locked to the commit: a concurrent update waits and then reads this one's.
            let text = try await first(
                "SELECT policy FROM tenants WHERE name = \(tenant.rawValue) FOR UPDATE", connection,
                { try $0[0].decode(String.self) })
            let policy = try TenantPolicy.changing(text, tenant: tenant, change)
            try await execute(
                "UPDATE tenants SET policy = \(policy.storedText) WHERE name = \(tenant.rawValue)", connection)
            _ = try await insertAudit(audit, connection)
            return policy
        }
    }

    public func setTurnkeyCredentials(
        tenant: TenantName, url: String, apiKeyFile: String, cleanupKeyFile: String?, audit: AuditDraft
    ) async throws(ConsoleError) {
        try await write("setting the Turnkey credentials of \(tenant)") { connection in
            guard
                try await exists(
                    """
                    UPDATE tenants SET turnkey_url = \(url), turnkey_api_key_file = \(apiKeyFile),
                    cleanup_key_file = \(cleanupKeyFile) WHERE name = \(tenant.rawValue) AND NOT is_sandbox
                    RETURNING name
                    """, connection)
            else { throw ConsoleError.notFound("No live tenant \(tenant).") }
            _ = try await insertAudit(audit, connection)
        }
    }

    // MARK: Snapshots

    private static let snapshotColumns = "seq, snapshot_at, complete, imported_at, backups, retired"

    private static func snapshot(_ row: PostgresRandomAccessRow) throws -> SnapshotRecord {
        SnapshotRecord(
            seq: try row["seq"].decode(Int64.self), snapshotAt: try row["snapshot_at"].decode(Int64?.self),
            complete: try row["complete"].decode(Bool.self), importedAt: try row["imported_at"].decode(Int64.self),
            backups: try row["backups"].decode(Int.self), retired: try row["retired"].decode(Int.self))
    }

    @discardableResult
    public func recordSnapshot(tenant: TenantName, _ snapshot: SnapshotRecord, audit: AuditDraft?)
        async throws(ConsoleError) -> SnapshotRecord
    {
        try await write("recording a snapshot of \(tenant)") { connection in
            // The tenant's row orders concurrent recorders, so each takes the next number (an
            // unknown tenant fails on the foreign key, as on SQLite).
            try await execute("SELECT 1 FROM tenants WHERE name = \(tenant.rawValue) FOR UPDATE", connection)
            let seq =
                try await first(
                    "SELECT COALESCE(max(seq), 0) + 1 FROM snapshots WHERE tenant = \(tenant.rawValue)", connection
                ) { try $0[0].decode(Int64.self) } ?? 1
            try await execute(
                """
                INSERT INTO snapshots (tenant, \(unescaped: Self.snapshotColumns))
                VALUES (\(tenant.rawValue), \(seq), \(snapshot.snapshotAt), \(snapshot.complete),
                    \(snapshot.importedAt), \(snapshot.backups), \(snapshot.retired))
                """, connection)
            if let audit { _ = try await insertAudit(audit, connection) }
            var recorded = snapshot
            recorded.seq = seq
            return recorded
        }
    }

    public func newestSnapshot(tenant: TenantName) async throws(ConsoleError) -> SnapshotRecord? {
        try await read("reading the newest snapshot of \(tenant)") { connection in
            try await first(
                """
                SELECT \(unescaped: Self.snapshotColumns) FROM snapshots
                WHERE tenant = \(tenant.rawValue) AND snapshot_at IS NOT NULL
                ORDER BY snapshot_at DESC, seq DESC LIMIT 1
                """, connection, Self.snapshot)
        }
    }

    public func newestCompleteSnapshot(tenant: TenantName) async throws(ConsoleError) -> SnapshotRecord? {
        try await read("reading the newest complete snapshot of \(tenant)") { connection in
            try await first(
                """
                SELECT \(unescaped: Self.snapshotColumns) FROM snapshots
                WHERE tenant = \(tenant.rawValue) AND snapshot_at IS NOT NULL AND complete
                ORDER BY snapshot_at DESC, seq DESC LIMIT 1
                """, connection, Self.snapshot)
        }
    }

    public func retireBackups(tenant: TenantName, ids: [String], now: Int64, audit: AuditDraft)
        async throws(ConsoleError) -> [ResetWipe]
    {
        try await write("retiring \(ids.count) backups of \(tenant)") { connection in
            var wipes: [ResetWipe] = []
            for id in ids {
                guard let wipe = try await deleteBackupRows(tenant: tenant.rawValue, backupId: id, connection) else {
                    continue
                }
                for subOrg in wipe.turnkeySubOrgIds {
                    try await Self.enqueue(
                        CleanupItemRecord(
                            subOrgId: subOrg, reason: "retired", firstSeenAt: now, updatedAt: now, lastBackupId: id),
                        tenant: tenant.rawValue, connection, logger: database.logger)
                }
                wipes.append(wipe)
            }
            _ = try await insertAudit(audit, connection)
            return wipes
        }
    }

    /// Deletes one backup's metadata, blob, lookup rows, sub-org refs and derived rows, inside
    /// the caller's transaction.
    /// - Returns: what was removed, `nil` when the backup was not there.
    func deleteBackupRows(tenant t: String, backupId id: String, _ connection: PostgresConnection) async throws
        -> ResetWipe?
    {
        let metadataText = try await first(
            "SELECT metadata FROM backups WHERE tenant = \(t) AND backup_id = \(id) FOR UPDATE", connection
        ) { try $0[0].decode(String.self) }
        // The sub-orgs come from the metadata and the refs alike, so a ref without its key still counts.
        var subOrgs = metadataText.flatMap { try? BackupMetadata.decode(Data($0.utf8)).turnkeySubOrgIds } ?? []
        let refs = try await all(
            "SELECT suborg_id FROM suborg_refs WHERE tenant = \(t) AND backup_id = \(id) ORDER BY suborg_id",
            connection
        ) { try $0[0].decode(String.self) }
        for ref in refs where !subOrgs.contains(ref) { subOrgs.append(ref) }
        let rowsRemoved =
            try await first(
                """
                WITH removed AS (DELETE FROM factor_lookup WHERE tenant = \(t) AND backup_id = \(id) RETURNING 1)
                SELECT count(*) FROM removed
                """, connection
            ) { try $0[0].decode(Int.self) } ?? 0
        guard metadataText != nil || rowsRemoved > 0 else { return nil }
        // Blob, refs and derived rows go by ON DELETE CASCADE too; deleted explicitly so the intent is here.
        for table in ["sealed_blobs", "suborg_refs", "backup_factors", "backup_summary", "backups"] {
            try await execute("DELETE FROM \(unescaped: table) WHERE tenant = \(t) AND backup_id = \(id)", connection)
        }
        return ResetWipe(backupId: id, lookupRowsRemoved: rowsRemoved, turnkeySubOrgIds: subOrgs)
    }

    // MARK: Resets through the Backup Service

    public func claimResetSend(
        tokenHash: String, subOrgIds: [String], holder: String, now: Int64, until: Int64, takeOver: String?
    ) async throws(ConsoleError) -> ResetSendClaim {
        try await write("claiming the send of a reset") { connection -> ResetSendClaim in
            // The row lock orders racing servers: the second reads the first's claim.
            guard
                let row = try await first(
                    """
                    SELECT sent_at, used_at, sending_by, sending_until, suborg_ids FROM reset_challenges
                    WHERE token_hash = \(tokenHash) FOR UPDATE
                    """, connection, { ClaimRow(row: $0) })
            else { return .claimed(sentBefore: false) }
            if let other = try row.row["sending_by"].decode(String?.self), other != holder, other != takeOver,
                let until = try row.row["sending_until"].decode(Int64?.self), until >= now
            {
                return .inFlight(holder: other, until: until)
            }
            // A resend after the backup is gone knows fewer sub-orgs: keep what the first send knew.
            let text = try row.row["suborg_ids"].decode(String?.self)
            var known = text.flatMap { try? JSONDecoder().decode([String].self, from: Data($0.utf8)) } ?? []
            for id in subOrgIds where !known.contains(id) { known.append(id) }
            let json = String(decoding: (try? JSONEncoder().encode(known)) ?? Data("[]".utf8), as: UTF8.self)
            try await execute(
                """
                UPDATE reset_challenges SET sent_at = \(now), suborg_ids = \(json), sending_by = \(holder),
                    sending_until = \(max(now, until))
                WHERE token_hash = \(tokenHash)
                """, connection)
            let sentAt = try row.row["sent_at"].decode(Int64?.self)
            let usedAt = try row.row["used_at"].decode(Int64?.self)
            return .claimed(sentBefore: sentAt != nil && usedAt == nil)
        }
    }

    /// A row kept past its statement, inside one task.
    private struct ClaimRow: @unchecked Sendable {
        var row: PostgresRandomAccessRow
    }

    public func releaseResetSend(tokenHash: String, holder: String) async throws(ConsoleError) {
        try await write("releasing the send of a reset") { connection in
            try await execute(
                """
                UPDATE reset_challenges SET sending_by = NULL, sending_until = NULL
                WHERE token_hash = \(tokenHash) AND sending_by = \(holder)
                """, connection)
        }
    }

    public func recordServiceReset(
        tenant: TenantName, tokenHash: String?, backupId: String, subOrgIds: [String], now: Int64,
        audit: ResetAuditDraft
    ) async throws(ConsoleError) -> ResetWipe {
        try await write("recording the reset of \(backupId)") { connection in
            var known = subOrgIds
            if let tokenHash {
                let sent = try await first(
                    "SELECT suborg_ids FROM reset_challenges WHERE token_hash = \(tokenHash) FOR UPDATE", connection
                ) { try $0[0].decode(String?.self) }
                let ids = sent.flatMap { $0 }.flatMap { try? JSONDecoder().decode([String].self, from: Data($0.utf8)) }
                for id in ids ?? [] where !known.contains(id) { known.append(id) }
                try await execute(
                    """
                    UPDATE reset_challenges SET used_at = COALESCE(used_at, \(now)), sending_by = NULL,
                        sending_until = NULL
                    WHERE token_hash = \(tokenHash)
                    """, connection)
            }
            let local = try await deleteBackupRows(tenant: tenant.rawValue, backupId: backupId, connection)
            for id in local?.turnkeySubOrgIds ?? [] where !known.contains(id) { known.append(id) }
            for subOrg in known {
                try await Self.enqueue(
                    CleanupItemRecord(
                        subOrgId: subOrg, reason: "reset", firstSeenAt: now, updatedAt: now, lastBackupId: backupId),
                    tenant: tenant.rawValue, connection, logger: database.logger)
            }
            let wipe = ResetWipe(
                backupId: backupId, lookupRowsRemoved: local?.lookupRowsRemoved ?? 0, turnkeySubOrgIds: known)
            _ = try await insertAudit(audit.completed(wipe), connection)
            return wipe
        }
    }

    // MARK: The sandbox Backup Service

    /// Marks the token used and deletes the backup in one transaction; the insert of the token
    /// decides between racing servers: the second waits for the first to commit, then finds the
    /// token used and changes nothing.
    public func sandboxServiceReset(tenant: TenantName, tokenHash: String, backupId: String, now: Int64)
        async throws(ConsoleError) -> Bool
    {
        try await write("resetting backup \(backupId) in the sandbox service") { connection in
            guard
                try await exists(
                    """
                    INSERT INTO sandbox_used_tokens (tenant, token_hash, used_at)
                    VALUES (\(tenant.rawValue), \(tokenHash), \(now))
                    ON CONFLICT DO NOTHING RETURNING token_hash
                    """, connection)
            else { return false }
            _ = try await deleteBackupRows(tenant: tenant.rawValue, backupId: backupId, connection)
            return true
        }
    }

    // MARK: The cleanup run lease

    public func acquireCleanupLease(
        tenant: TenantName, holder: String, now: Int64, expiresAt: Int64, takeOver: String?
    ) async throws(ConsoleError) -> (holder: String, expiresAt: Int64)? {
        let current = try await write("taking the cleanup lease of \(tenant)") { connection -> LeaseRow? in
            // One statement decides: free, expired, ours, or held by the one we take over.
            let took = try await exists(
                """
                INSERT INTO cleanup_leases (tenant, holder, acquired_at, expires_at)
                VALUES (\(tenant.rawValue), \(holder), \(now), \(max(now, expiresAt)))
                ON CONFLICT (tenant) DO UPDATE SET holder = excluded.holder, acquired_at = excluded.acquired_at,
                    expires_at = excluded.expires_at
                WHERE cleanup_leases.holder = excluded.holder OR cleanup_leases.holder = \(takeOver)
                    OR cleanup_leases.expires_at < \(now)
                RETURNING holder
                """, connection)
            guard !took else { return nil }
            return try await first(
                "SELECT holder, expires_at FROM cleanup_leases WHERE tenant = \(tenant.rawValue)", connection
            ) { LeaseRow(holder: try $0[0].decode(String.self), expiresAt: try $0[1].decode(Int64.self)) }
        }
        return current.map { ($0.holder, $0.expiresAt) }
    }

    private struct LeaseRow: Sendable {
        var holder: String
        var expiresAt: Int64
    }

    public func renewCleanupLease(tenant: TenantName, holder: String, expiresAt: Int64) async throws(ConsoleError)
        -> Bool
    {
        try await write("renewing the cleanup lease of \(tenant)") { connection in
            try await exists(
                """
                UPDATE cleanup_leases SET expires_at = GREATEST(acquired_at, \(expiresAt))
                WHERE tenant = \(tenant.rawValue) AND holder = \(holder) RETURNING holder
                """, connection)
        }
    }

    public func releaseCleanupLease(tenant: TenantName, holder: String) async throws(ConsoleError) {
        try await write("releasing the cleanup lease of \(tenant)") { connection in
            try await execute(
                "DELETE FROM cleanup_leases WHERE tenant = \(tenant.rawValue) AND holder = \(holder)", connection)
        }
    }
}

extension PostgresConsoleStore: ConsoleStore, CleanupJournalStore, AuditCheckpointStore {}
