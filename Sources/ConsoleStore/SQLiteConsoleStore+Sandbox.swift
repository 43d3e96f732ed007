import BackupModel
import Foundation
import GRDB

extension SQLiteConsoleStore {
    @discardableResult
    public func addSandboxSubOrgs(tenant: TenantName, _ subOrgIds: [String], createdAt: Int64, audit: AuditDraft?)
        async throws(ConsoleError) -> Int
    {
        try await write("recording \(subOrgIds.count) sandbox sub-orgs") { db in
            let insert = try db.cachedStatement(
                sql: "INSERT OR IGNORE INTO sandbox_suborgs (tenant, suborg_id, created_at) VALUES (?, ?, ?)")
            var new = 0
            for id in subOrgIds {
                try insert.execute(arguments: [tenant.rawValue, id, createdAt])
                new += db.changesCount
            }
            if let audit { _ = try self.insertAudit(audit, db) }
            return new
        }
    }

    public func removeSandboxSubOrg(tenant: TenantName, subOrgId: String, audit: AuditDraft?) async throws(ConsoleError)
        -> Bool
    {
        try await write("removing sandbox sub-org \(subOrgId)") { db in
            try db.execute(
                sql: "DELETE FROM sandbox_suborgs WHERE tenant = ? AND suborg_id = ?",
                arguments: [tenant.rawValue, subOrgId])
            let removed = db.changesCount > 0
            if let audit { _ = try self.insertAudit(audit, db) }
            return removed
        }
    }

}
