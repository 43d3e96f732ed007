import BackupModel
import Foundation
import GRDB

extension SQLiteConsoleStore {
    @discardableResult
    public func addSandboxSubOrgs(tenant: TenantName, _ subOrgIds: [String], createdAt: Int64, audit: AuditDraft?)
        throws(ConsoleError) -> Int
    {
        try write("recording \(subOrgIds.count) sandbox sub-orgs") { db in
            let insert = try db.cachedStatement(
                sql: "INSERT OR IGNORE INTO sandbox_suborgs (tenant, suborg_id, created_at) VALUES (?, ?, ?)")
            var new = 0
            for id in subOrgIds {
                try insert.execute(arguments: [tenant.rawValue, id, createdAt])
                new += db.changesCount
            }
            if let audit { _ = try insertAudit(audit, db) }
            return new
        }
    }

    public func removeSandboxSubOrg(tenant: TenantName, subOrgId: String, audit: AuditDraft?) throws(ConsoleError)
        -> Bool
    {
        try write("removing sandbox sub-org \(subOrgId)") { db in
            try db.execute(
                sql: "DELETE FROM sandbox_suborgs WHERE tenant = ? AND suborg_id = ?",
                arguments: [tenant.rawValue, subOrgId])
            let removed = db.changesCount > 0
            if let audit { _ = try insertAudit(audit, db) }
            return removed
        }
    }

    public func forEachSandboxSubOrg(
        tenant: TenantName, batchSize: Int, _ body: ([String]) throws(ConsoleError) -> Void
    ) throws(ConsoleError) {
        try paginate(after: "") { (last: String) throws(ConsoleError) -> ([String], String?) in
            let page = try read("listing sandbox sub-orgs") { db in
                try String.fetchAll(
                    db.cachedStatement(
                        sql: """
                            SELECT suborg_id FROM sandbox_suborgs WHERE tenant = ? AND suborg_id > ?
                            ORDER BY suborg_id LIMIT ?
                            """),
                    arguments: [tenant.rawValue, last, Self.clampBatch(batchSize)])
            }
            if !page.isEmpty { try body(page) }
            return (page, page.last)
        }
    }
}
