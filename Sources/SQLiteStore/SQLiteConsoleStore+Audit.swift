import BackupModel
import ConsoleStore
import GRDB
import GRDBSQLite

/// The audit group commit on SQLite: the shared chain (``AuditLink``) written with one cached
/// `INSERT` bound through the C API, the whole transaction in one synchronous call on the
/// writer. Through the shared rule, a lone append took four turns of GRDB's queue and a
/// statement text rendered and hashed per entry, twice the cost of the same rows written
/// directly (the server bench's raw reference).
extension SQLiteConsoleStore {
    static let auditHeadSQL = "SELECT seq, hash FROM audit ORDER BY seq DESC LIMIT 1"
    static let auditInsertSQL =
        "INSERT INTO audit (\(RowMapping.auditColumns)) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"

    public func commitAuditGroup(_ drafts: [AuditDraft]) async throws(ConsoleError) -> [AuditEntry] {
        try await driver.synchronousTransaction(
            drafts.count == 1 ? "appending an audit entry" : "appending \(drafts.count) audit entries"
        ) { db in
            let (afterSeq, prevHash) = try Self.auditHead(db)
            let links = try AuditLink.chain(drafts, afterSeq: afterSeq, prevHash: prevHash, clock: clock)
            let insert = try RawStatement(db, sql: Self.auditInsertSQL)
            for link in links {
                let entry = link.entry
                try insert.run(
                    .integer(entry.seq), .integer(entry.at), .text(entry.operatorName), .optionalText(entry.tenant),
                    .text(entry.action), .optionalText(entry.target), .text(link.detailsText),
                    .text(entry.prevHash), .text(entry.hash))
            }
            checkpoints.reach(.auditGroup)
            return links.map(\.entry)
        }
    }

    /// The newest entry's `seq` and hash: 0 and 64 zeros for an empty log.
    private static func auditHead(_ db: Database) throws -> (seq: Int64, hash: String) {
        let head = try RawCursor(db, sql: auditHeadSQL, texts: [])
        defer { head.finish() }
        return try head.step() ? (head.int(0), head.string(1)) : (0, AuditEntry.genesisHash)
    }
}
