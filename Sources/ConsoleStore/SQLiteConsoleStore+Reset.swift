import BackupModel
import Foundation
import GRDB

extension SQLiteConsoleStore {
    private static let challengeColumns =
        "token_hash, tenant, backup_id, context, challenge, created_at, expires_at, used_at, sent_at"

    private static func challengeRecord(_ row: Row) throws -> ResetChallengeRecord {
        ResetChallengeRecord(
            tokenHash: row["token_hash"], tenant: try TenantName(row["tenant"] as String), backupId: row["backup_id"],
            context: row["context"], challenge: [UInt8](row["challenge"] as Data), createdAt: row["created_at"],
            expiresAt: row["expires_at"], usedAt: row["used_at"], sentAt: row["sent_at"])
    }

    public func insertResetChallenge(_ challenge: ResetChallengeRecord, audit: AuditDraft) async throws(ConsoleError) {
        try await write("storing a reset challenge for \(challenge.backupId)") { db in
            try db.execute(
                sql: "INSERT INTO reset_challenges (\(Self.challengeColumns)) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                arguments: [
                    challenge.tokenHash, challenge.tenant.rawValue, challenge.backupId, challenge.context,
                    Data(challenge.challenge), challenge.createdAt, challenge.expiresAt, challenge.usedAt,
                    challenge.sentAt,
                ])
            _ = try self.insertAudit(audit, db)
        }
    }

    public func resetChallenge(tokenHash: String) async throws(ConsoleError) -> ResetChallengeRecord? {
        try await readOne("reading a reset challenge") { db in
            try Row.fetchOne(
                db, sql: "SELECT \(Self.challengeColumns) FROM reset_challenges WHERE token_hash = ?",
                arguments: [tokenHash]
            ).map(Self.challengeRecord)
        }
    }
}
