import BackupCrypto
import BackupModel
import ConsoleStore
import Foundation
import PostgresNIO

extension PostgresConsoleStore {
    /// Takes the audit chain's transaction-level advisory lock; the commit or rollback releases it.
    func lockAudit(_ connection: PostgresConnection) async throws {
        try await execute("SELECT pg_advisory_xact_lock(\(Self.auditLockKey))", connection)
    }

    /// Appends `draft` as the next chained entry inside the caller's transaction, at the clock's time.
    ///
    /// Under the chain's lock it reads the head (committed by whoever held the lock before) and
    /// writes `seq` the head's plus one and `prevHash` its hash (64 zeros for the first), hashed
    /// exactly as ``SQLiteConsoleStore`` does, so the two stores' chains are the same bytes.
    func insertAudit(_ given: AuditDraft, _ connection: PostgresConnection) async throws -> AuditEntry {
        let draft = given.stamped
        try await lockAudit(connection)
        let head = try await first("SELECT seq, hash FROM audit ORDER BY seq DESC LIMIT 1", connection) { row in
            (try row[0].decode(Int64.self), try row[1].decode(String.self))
        }
        let seq = (head?.0 ?? 0) + 1
        let prevHash = head?.1 ?? AuditEntry.genesisHash
        let at = clock()
        let canonical = AuditEntry.canonicalBytes(
            seq: seq, at: at, operatorName: draft.operatorName, tenant: draft.tenant, action: draft.action,
            target: draft.target, details: draft.details)
        let hash = SHA256.hex(Array(prevHash.utf8) + canonical)
        try await execute(
            """
            INSERT INTO audit (seq, at, operator, tenant, action, target, details, prev_hash, hash)
            VALUES (\(seq), \(at), \(draft.operatorName), \(draft.tenant), \(draft.action), \(draft.target),
                \(CanonicalJSON.objectText(draft.details)), \(prevHash), \(hash))
            """, connection)
        return AuditEntry(seq: seq, at: at, draft: draft, prevHash: prevHash, hash: hash)
    }

    static let auditColumns = "seq, at, operator, tenant, action, target, details, prev_hash, hash"

    static func auditEntry(_ row: PostgresRandomAccessRow) throws -> AuditEntry {
        let seq = try row["seq"].decode(Int64.self)
        let details: [String: String]
        do {
            details = try JSONDecoder().decode(
                [String: String].self, from: Data(row["details"].decode(String.self).utf8))
        } catch {
            throw ConsoleError.internalError("Audit entry \(seq) has unreadable details.")
        }
        let draft = AuditDraft(
            operatorName: try row["operator"].decode(String.self), tenant: try row["tenant"].decode(String?.self),
            action: try row["action"].decode(String.self), target: try row["target"].decode(String?.self),
            details: details)
        return AuditEntry(
            seq: seq, at: try row["at"].decode(Int64.self), draft: draft,
            prevHash: try row["prev_hash"].decode(String.self), hash: try row["hash"].decode(String.self))
    }

    /// Appends an entry for an action that changed nothing else (a read of a backup).
    @discardableResult
    public func appendAudit(_ draft: AuditDraft) async throws(ConsoleError) -> AuditEntry {
        try await write("appending an audit entry") { connection in try await insertAudit(draft, connection) }
    }

    /// Entries in sequence order after `afterSeq`, at most `limit`; `tenant` filters, `nil` returns all.
    public func auditEntries(tenant: TenantName?, afterSeq: Int64, limit: Int) async throws(ConsoleError)
        -> [AuditEntry]
    {
        try await read("reading the audit log") { connection in
            try await all(
                """
                SELECT \(unescaped: Self.auditColumns) FROM audit
                WHERE (\(tenant?.rawValue)::TEXT IS NULL OR tenant = \(tenant?.rawValue)) AND seq > \(afterSeq)
                ORDER BY seq LIMIT \(max(0, limit))
                """, connection, Self.auditEntry)
        }
    }

    /// The most recent entries (for `audit list --limit N`), oldest first.
    public func latestAuditEntries(tenant: TenantName?, limit: Int) async throws(ConsoleError) -> [AuditEntry] {
        try await read("reading the audit log") { connection in
            try await all(
                """
                SELECT \(unescaped: Self.auditColumns) FROM audit
                WHERE \(tenant?.rawValue)::TEXT IS NULL OR tenant = \(tenant?.rawValue)
                ORDER BY seq DESC LIMIT \(max(0, limit))
                """, connection, Self.auditEntry
            ).reversed()
        }
    }
}
