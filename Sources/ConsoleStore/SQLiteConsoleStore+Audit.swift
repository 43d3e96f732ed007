import BackupCrypto
import BackupModel
import Foundation
import GRDB

extension SQLiteConsoleStore {
    /// Appends `draft` as the next chained entry inside the caller's write transaction.
    ///
    /// `seq` is the last one plus one and `prevHash` the last entry's hash (64 zeros for the
    /// first), so the writer's serialisation is what keeps the chain linear.
    func insertAudit(_ given: AuditDraft, _ db: Database) throws -> AuditEntry {
        let draft = given.stamped
        let at = clock()
        let last = try Row.fetchOne(db.cachedStatement(sql: "SELECT seq, hash FROM audit ORDER BY seq DESC LIMIT 1"))
        let seq: Int64 = (last.map { $0["seq"] as Int64 } ?? 0) + 1
        let prevHash: String = last.map { $0["hash"] as String } ?? AuditEntry.genesisHash
        let canonical = AuditEntry.canonicalBytes(
            seq: seq, at: at, operatorName: draft.operatorName, tenant: draft.tenant, action: draft.action,
            target: draft.target, details: draft.details)
        let hash = SHA256.hex(Array(prevHash.utf8) + canonical)
        let entry = AuditEntry(seq: seq, at: at, draft: draft, prevHash: prevHash, hash: hash)
        try db.cachedStatement(
            sql: """
                INSERT INTO audit (seq, at, operator, tenant, action, target, details, prev_hash, hash)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
                """
        ).execute(arguments: [
            seq, at, draft.operatorName, draft.tenant, draft.action, draft.target,
            CanonicalJSON.objectText(draft.details), prevHash, hash,
        ])
        return entry
    }

    static func auditEntry(_ row: Row) throws -> AuditEntry {
        let detailsText: String = row["details"]
        let details: [String: String]
        do {
            details = try JSONDecoder().decode([String: String].self, from: Data(detailsText.utf8))
        } catch {
            throw ConsoleError.internalError("Audit entry \(row["seq"] as Int64) has unreadable details.")
        }
        let draft = AuditDraft(
            operatorName: row["operator"], tenant: row["tenant"], action: row["action"], target: row["target"],
            details: details)
        return AuditEntry(seq: row["seq"], at: row["at"], draft: draft, prevHash: row["prev_hash"], hash: row["hash"])
    }

    static let auditColumns = "seq, at, operator, tenant, action, target, details, prev_hash, hash"

    @discardableResult
    public func appendAudit(_ draft: AuditDraft) async throws(ConsoleError) -> AuditEntry {
        try await write("appending an audit entry") { db in try self.insertAudit(draft, db) }
    }

    public func auditEntries(tenant: TenantName?, afterSeq: Int64, limit: Int) async throws(ConsoleError)
        -> [AuditEntry]
    {
        return try await read("reading the audit log") { db in
            let rows: [Row]
            if let tenant {
                rows = try Row.fetchAll(
                    db, sql: "SELECT \(Self.auditColumns) FROM audit WHERE tenant = ? AND seq > ? ORDER BY seq LIMIT ?",
                    arguments: [tenant.rawValue, afterSeq, max(0, limit)])
            } else {
                rows = try Row.fetchAll(
                    db, sql: "SELECT \(Self.auditColumns) FROM audit WHERE seq > ? ORDER BY seq LIMIT ?",
                    arguments: [afterSeq, max(0, limit)])
            }
            return try rows.map(Self.auditEntry)
        }
    }

    public func latestAuditEntries(tenant: TenantName?, limit: Int) async throws(ConsoleError) -> [AuditEntry] {
        return try await read("reading the audit log") { db in
            let rows: [Row]
            if let tenant {
                rows = try Row.fetchAll(
                    db, sql: "SELECT \(Self.auditColumns) FROM audit WHERE tenant = ? ORDER BY seq DESC LIMIT ?",
                    arguments: [tenant.rawValue, max(0, limit)])
            } else {
                rows = try Row.fetchAll(
                    db, sql: "SELECT \(Self.auditColumns) FROM audit ORDER BY seq DESC LIMIT ?",
                    arguments: [max(0, limit)])
            }
            return try rows.reversed().map(Self.auditEntry)
        }
    }
}
