import BackupModel
import Foundation

/// What acting on a live tenant needs (``LiveTenantStore``): snapshots, retirement, resets
/// through the Backup Service, the sandbox service's own state and the cleanup run lease.
/// Where several processes may race (a reset token, the lease), a locked row or one guarded
/// statement decides.
extension SQLRuleStore {
    // MARK: Snapshots

    @discardableResult
    public func recordSnapshot(tenant: TenantName, _ snapshot: SnapshotRecord, audit: AuditDraft?)
        async throws(ConsoleError) -> SnapshotRecord
    {
        try await audited("recording a snapshot of \(tenant)", audit) { session in
            // The tenant's row orders concurrent recorders, so each takes the next number (an
            // unknown tenant fails on the foreign key).
            try await session.execute(
                "SELECT 1 FROM tenants WHERE name = \(tenant.rawValue)\(raw: dialect.lockClause)")
            let seq =
                try await session.value(
                    "SELECT COALESCE(max(seq), 0) + 1 FROM snapshots WHERE tenant = \(tenant.rawValue)",
                    as: Int64.self) ?? 1
            try await session.execute(
                """
                INSERT INTO snapshots (tenant, \(raw: RowMapping.snapshotColumns))
                VALUES (\(tenant.rawValue), \(seq), \(snapshot.snapshotAt), \(snapshot.complete),
                    \(snapshot.importedAt), \(snapshot.backups), \(snapshot.retired))
                """)
            var recorded = snapshot
            recorded.seq = seq
            return recorded
        }
    }

    public func newestSnapshot(tenant: TenantName) async throws(ConsoleError) -> SnapshotRecord? {
        try await newestSnapshot(tenant: tenant, completeOnly: false)
    }

    public func newestCompleteSnapshot(tenant: TenantName) async throws(ConsoleError) -> SnapshotRecord? {
        try await newestSnapshot(tenant: tenant, completeOnly: true)
    }

    private func newestSnapshot(tenant: TenantName, completeOnly: Bool) async throws(ConsoleError) -> SnapshotRecord? {
        let complete: SQLStatement = completeOnly ? "AND complete = \(true)" : ""
        return try await driver.read("reading the newest snapshot of \(tenant)") { session in
            try await session.first(
                """
                SELECT \(raw: RowMapping.snapshotColumns) FROM snapshots
                WHERE tenant = \(tenant.rawValue) AND snapshot_at IS NOT NULL \(complete)
                ORDER BY snapshot_at DESC, seq DESC LIMIT 1
                """
            ).map(RowMapping.snapshot)
        }
    }

    public func newestSnapshotSeq(tenant: TenantName) async throws(ConsoleError) -> Int64 {
        try await driver.read("reading the snapshots of \(tenant)") { session in
            try await session.value(
                "SELECT COALESCE(max(seq), 0) FROM snapshots WHERE tenant = \(tenant.rawValue)", as: Int64.self) ?? 0
        }
    }

    public func backupIdsWritten(tenant: TenantName, since time: Int64) async throws(ConsoleError) -> Set<String> {
        try await driver.read("listing the recent backups of \(tenant)") { session in
            Set(
                try await session.values(
                    "SELECT backup_id FROM backups WHERE tenant = \(tenant.rawValue) AND updated_at >= \(time)",
                    as: String.self))
        }
    }

    public func recordCompleteSnapshot(
        tenant: TenantName, _ snapshot: SnapshotRecord, retiring ids: [String], newestSeqSeen: Int64,
        audits: @escaping @Sendable (_ retired: [String]) -> [AuditDraft]
    ) async throws(ConsoleError) -> (snapshot: SnapshotRecord, retired: [String]) {
        try await driver.transaction("recording a complete snapshot of \(tenant)") { session in
            // The tenant's row orders concurrent imports: the second reads the first's snapshot.
            try await session.execute(
                "SELECT 1 FROM tenants WHERE name = \(tenant.rawValue)\(raw: dialect.lockClause)")
            let newest =
                try await session.value(
                    "SELECT COALESCE(max(seq), 0) FROM snapshots WHERE tenant = \(tenant.rawValue)", as: Int64.self)
                ?? 0
            guard newest == newestSeqSeen else {
                throw ConsoleError(
                    .conflict, code: "snapshot_raced",
                    "Another import recorded a snapshot of \(tenant) while this one ran, so this one retired nothing and was not recorded as a snapshot (its backups were written). Import again once the other has finished."
                )
            }
            var retired: [String] = []
            for id in ids {
                // Written after the copy began (or in its second: times are whole seconds), or
                // found as stored by an import of a copy that new: its absence proves nothing.
                if let written = try await session.value(
                    "SELECT updated_at FROM backups WHERE tenant = \(tenant.rawValue) AND backup_id = \(id)",
                    as: Int64.self),
                    let taken = snapshot.snapshotAt, written >= taken
                {
                    continue
                }
                guard let wipe = try await deleteBackupRows(tenant: tenant.rawValue, backupId: id, session) else {
                    continue
                }
                for subOrg in wipe.turnkeySubOrgIds {
                    try await enqueue(
                        CleanupItemRecord(
                            subOrgId: subOrg, reason: "retired", firstSeenAt: snapshot.importedAt,
                            updatedAt: snapshot.importedAt, lastBackupId: id),
                        tenant: tenant.rawValue, session)
                }
                retired.append(id)
            }
            var recorded = snapshot
            recorded.seq = newest + 1
            recorded.retired = retired.count
            try await session.execute(
                """
                INSERT INTO snapshots (tenant, \(raw: RowMapping.snapshotColumns))
                VALUES (\(tenant.rawValue), \(recorded.seq), \(recorded.snapshotAt), \(recorded.complete),
                    \(recorded.importedAt), \(recorded.backups), \(recorded.retired))
                """)
            for audit in audits(retired) { _ = try await appendChained(audit, session) }
            return (recorded, retired)
        }
    }

    public func retireBackups(tenant: TenantName, ids: [String], now: Int64, audit: AuditDraft)
        async throws(ConsoleError) -> [ResetWipe]
    {
        try await audited("retiring \(ids.count) backups of \(tenant)", audit) { session in
            var wipes: [ResetWipe] = []
            for id in ids {
                guard let wipe = try await deleteBackupRows(tenant: tenant.rawValue, backupId: id, session) else {
                    continue
                }
                for subOrg in wipe.turnkeySubOrgIds {
                    try await enqueue(
                        CleanupItemRecord(
                            subOrgId: subOrg, reason: "retired", firstSeenAt: now, updatedAt: now, lastBackupId: id),
                        tenant: tenant.rawValue, session)
                }
                wipes.append(wipe)
            }
            return wipes
        }
    }

    // MARK: Reset challenges and resets through the Backup Service

    public func insertResetChallenge(_ challenge: ResetChallengeRecord, audit: AuditDraft) async throws(ConsoleError) {
        try await audited("storing a reset challenge for \(challenge.backupId)", audit) { session in
            try await session.execute(
                """
                INSERT INTO reset_challenges (\(raw: RowMapping.challengeColumns))
                VALUES (\(challenge.tokenHash), \(challenge.tenant.rawValue), \(challenge.backupId),
                    \(challenge.context), \(Data(challenge.challenge)), \(challenge.createdAt), \(challenge.expiresAt),
                    \(challenge.usedAt), \(challenge.sentAt))
                """)
        }
    }

    public func resetChallenge(tokenHash: String) async throws(ConsoleError) -> ResetChallengeRecord? {
        try await driver.read("reading a reset challenge") { session in
            try await session.first(
                "SELECT \(raw: RowMapping.challengeColumns) FROM reset_challenges WHERE token_hash = \(tokenHash)"
            ).map(RowMapping.challenge)
        }
    }

    public func claimResetSend(
        tokenHash: String, subOrgIds: [String], holder: String, now: Int64, until: Int64, takeOver: String?
    ) async throws(ConsoleError) -> ResetSendClaim {
        try await driver.transaction("claiming the send of a reset") { session -> ResetSendClaim in
            // The row lock orders racing servers: the second reads the first's claim.
            guard
                let row = try await session.first(
                    """
                    SELECT sent_at, used_at, sending_by, sending_until, suborg_ids FROM reset_challenges
                    WHERE token_hash = \(tokenHash)\(raw: dialect.lockClause)
                    """)
            else { return .claimed(sentBefore: false) }
            if let other: String = try row.get("sending_by"), other != holder, other != takeOver,
                let until: Int64 = try row.get("sending_until"), until >= now
            {
                return .inFlight(holder: other, until: until)
            }
            // A resend after the backup is gone knows fewer sub-orgs: keep what the first send knew.
            var known = RowMapping.stringList(try row.get("suborg_ids"))
            for id in subOrgIds where !known.contains(id) { known.append(id) }
            try await session.execute(
                """
                UPDATE reset_challenges SET sent_at = \(now), suborg_ids = \(RowMapping.stringListText(known)),
                    sending_by = \(holder), sending_until = \(max(now, until))
                WHERE token_hash = \(tokenHash)
                """)
            let sentAt: Int64? = try row.get("sent_at")
            let usedAt: Int64? = try row.get("used_at")
            return .claimed(sentBefore: sentAt != nil && usedAt == nil)
        }
    }

    public func releaseResetSend(tokenHash: String, holder: String, unsent: Bool) async throws(ConsoleError) {
        let sent: SQLStatement = unsent ? ", sent_at = NULL" : ""
        try await driver.transaction("releasing the send of a reset") { session in
            try await session.execute(
                """
                UPDATE reset_challenges SET sending_by = NULL, sending_until = NULL\(sent)
                WHERE token_hash = \(tokenHash) AND sending_by = \(holder)
                """)
        }
    }

    public func recordServiceReset(
        tenant: TenantName, tokenHash: String?, backupId: String, subOrgIds: [String], now: Int64,
        audit: ResetAuditDraft
    ) async throws(ConsoleError) -> ResetWipe {
        try await driver.transaction("recording the reset of \(backupId)") { session in
            var known = subOrgIds
            if let tokenHash {
                let sent = try await session.first(
                    "SELECT suborg_ids FROM reset_challenges WHERE token_hash = \(tokenHash)\(raw: dialect.lockClause)")
                for id in RowMapping.stringList(try sent?.get("suborg_ids")) where !known.contains(id) {
                    known.append(id)
                }
                try await session.execute(
                    """
                    UPDATE reset_challenges SET used_at = COALESCE(used_at, \(now)), sending_by = NULL,
                        sending_until = NULL
                    WHERE token_hash = \(tokenHash)
                    """)
            }
            let local = try await deleteBackupRows(tenant: tenant.rawValue, backupId: backupId, session)
            for id in local?.turnkeySubOrgIds ?? [] where !known.contains(id) { known.append(id) }
            for subOrg in known {
                try await enqueue(
                    CleanupItemRecord(
                        subOrgId: subOrg, reason: "reset", firstSeenAt: now, updatedAt: now, lastBackupId: backupId),
                    tenant: tenant.rawValue, session)
            }
            let wipe = ResetWipe(
                backupId: backupId, lookupRowsRemoved: local?.lookupRowsRemoved ?? 0, turnkeySubOrgIds: known)
            checkpoints.reach(.resetWiped)
            _ = try await appendChained(audit.completed(wipe), session)
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
        try await driver.transaction("resetting backup \(backupId) in the sandbox service") { session in
            guard
                try await session.changes(
                    """
                    INSERT INTO sandbox_used_tokens (tenant, token_hash, used_at)
                    VALUES (\(tenant.rawValue), \(tokenHash), \(now)) ON CONFLICT DO NOTHING
                    """) == 1
            else { return false }
            _ = try await deleteBackupRows(tenant: tenant.rawValue, backupId: backupId, session)
            return true
        }
    }

    // MARK: The cleanup run lease

    public func acquireCleanupLease(
        tenant: TenantName, holder: String, now: Int64, expiresAt: Int64, takeOver: String?
    ) async throws(ConsoleError) -> (holder: String, expiresAt: Int64)? {
        let current = try await driver.transaction("taking the cleanup lease of \(tenant)") { session -> SQLRow? in
            // One statement decides: free, expired, ours, or held by the one we take over.
            let took = try await session.changes(
                """
                INSERT INTO cleanup_leases (tenant, holder, acquired_at, expires_at)
                VALUES (\(tenant.rawValue), \(holder), \(now), \(max(now, expiresAt)))
                ON CONFLICT (tenant) DO UPDATE SET holder = excluded.holder, acquired_at = excluded.acquired_at,
                    expires_at = excluded.expires_at
                WHERE cleanup_leases.holder = excluded.holder OR cleanup_leases.holder = \(takeOver)
                    OR cleanup_leases.expires_at < \(now)
                """)
            guard took == 0 else { return nil }
            return try await session.first(
                "SELECT holder, expires_at FROM cleanup_leases WHERE tenant = \(tenant.rawValue)")
        }
        guard let current else { return nil }
        return (try current.get("holder"), try current.get("expires_at"))
    }

    public func renewCleanupLease(tenant: TenantName, holder: String, expiresAt: Int64) async throws(ConsoleError)
        -> Bool
    {
        try await driver.transaction("renewing the cleanup lease of \(tenant)") { session in
            try await session.changes(
                """
                UPDATE cleanup_leases SET expires_at = \(raw: dialect.greatest)(acquired_at, \(expiresAt))
                WHERE tenant = \(tenant.rawValue) AND holder = \(holder)
                """) == 1
        }
    }

    public func releaseCleanupLease(tenant: TenantName, holder: String) async throws(ConsoleError) {
        try await driver.transaction("releasing the cleanup lease of \(tenant)") { session in
            try await session.execute(
                "DELETE FROM cleanup_leases WHERE tenant = \(tenant.rawValue) AND holder = \(holder)")
        }
    }
}
