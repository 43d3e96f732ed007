import BackupModel
import Foundation
import GRDB

extension SQLiteConsoleStore {
    private static let challengeColumns =
        "token_hash, tenant, backup_id, context, challenge, created_at, expires_at, used_at"

    private static func challengeRecord(_ row: Row) throws -> ResetChallengeRecord {
        ResetChallengeRecord(
            tokenHash: row[0], tenant: try TenantName(row[1] as String), backupId: row[2], context: row[3],
            challenge: [UInt8](row[4] as Data), createdAt: row[5], expiresAt: row[6], usedAt: row[7])
    }

    public func insertResetChallenge(_ challenge: ResetChallengeRecord, audit: AuditDraft) throws(ConsoleError) {
        try write("storing a reset challenge for \(challenge.backupId)") { db in
            try db.execute(
                sql: "INSERT INTO reset_challenges (\(Self.challengeColumns)) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                arguments: [
                    challenge.tokenHash, challenge.tenant.rawValue, challenge.backupId, challenge.context,
                    Data(challenge.challenge), challenge.createdAt, challenge.expiresAt, challenge.usedAt,
                ])
            _ = try insertAudit(audit, db)
        }
    }

    public func resetChallenge(tokenHash: String) throws(ConsoleError) -> ResetChallengeRecord? {
        try readOne("reading a reset challenge") { db in
            try Row.fetchOne(
                db, sql: "SELECT \(Self.challengeColumns) FROM reset_challenges WHERE token_hash = ?",
                arguments: [tokenHash]
            ).map(Self.challengeRecord)
        }
    }

    public func completeReset(
        tokenHash: String, now: Int64, verify: (ResetChallengeRecord) throws(ConsoleError) -> Void,
        audit: (ResetWipe) -> AuditDraft
    ) throws(ConsoleError) -> ResetWipe {
        try write("completing a reset") { db in
            guard
                let challenge = try Row.fetchOne(
                    db, sql: "SELECT \(Self.challengeColumns) FROM reset_challenges WHERE token_hash = ?",
                    arguments: [tokenHash]
                ).map(Self.challengeRecord)
            else {
                throw ConsoleError.notFound("No reset challenge matches this token.")
            }
            if challenge.usedAt != nil {
                throw ConsoleError(.verificationFailed, code: "already_used", "This reset token has already been used.")
            }
            if now > challenge.expiresAt {
                throw ConsoleError(
                    .verificationFailed, code: "token_expired", "This reset token has expired; begin the reset again.")
            }
            try verify(challenge)
            let t = challenge.tenant.rawValue
            let id = challenge.backupId
            guard
                let metadataText = try String.fetchOne(
                    db, sql: "SELECT metadata FROM backups WHERE tenant = ? AND backup_id = ?", arguments: [t, id])
            else {
                throw ConsoleError.notFound("Backup \(id) does not exist in tenant \(t).")
            }
            // The sub-orgs come from the metadata and the refs alike, so a ref without its key still gets queued.
            var subOrgs = (try? BackupMetadata.decode(Data(metadataText.utf8)).turnkeySubOrgIds) ?? []
            for ref in try String.fetchAll(
                db, sql: "SELECT suborg_id FROM suborg_refs WHERE tenant = ? AND backup_id = ? ORDER BY suborg_id",
                arguments: [t, id]) where !subOrgs.contains(ref)
            {
                subOrgs.append(ref)
            }
            try db.execute(
                sql: "UPDATE reset_challenges SET used_at = ? WHERE token_hash = ?", arguments: [now, tokenHash])
            try db.execute(sql: "DELETE FROM factor_lookup WHERE tenant = ? AND backup_id = ?", arguments: [t, id])
            let rowsRemoved = db.changesCount
            // Blob, suborg refs and derived rows go by ON DELETE CASCADE; deleted explicitly too,
            // so the intent is in one place.
            try db.execute(sql: "DELETE FROM sealed_blobs WHERE tenant = ? AND backup_id = ?", arguments: [t, id])
            try db.execute(sql: "DELETE FROM suborg_refs WHERE tenant = ? AND backup_id = ?", arguments: [t, id])
            try Self.deleteDerived(backupId: id, tenant: t, db)
            try db.execute(sql: "DELETE FROM backups WHERE tenant = ? AND backup_id = ?", arguments: [t, id])
            for subOrg in subOrgs {
                try Self.enqueue(
                    CleanupItemRecord(subOrgId: subOrg, reason: "reset", firstSeenAt: now, updatedAt: now),
                    tenant: t, db)
            }
            let wipe = ResetWipe(backupId: id, lookupRowsRemoved: rowsRemoved, turnkeySubOrgIds: subOrgs)
            _ = try insertAudit(audit(wipe), db)
            return wipe
        }
    }
}
