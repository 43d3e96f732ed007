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

    @discardableResult
    public func putSandboxSubOrgStates(
        tenant: TenantName, _ states: [String: String], createdAt: Int64, audit: AuditDraft?
    ) async throws(ConsoleError) -> Int {
        try await write("recording \(states.count) sandbox sub-orgs with their state") { db in
            let exists = try db.cachedStatement(sql: "SELECT 1 FROM sandbox_suborgs WHERE tenant = ? AND suborg_id = ?")
            let upsert = try db.cachedStatement(
                sql: """
                    INSERT INTO sandbox_suborgs (tenant, suborg_id, created_at, state) VALUES (?, ?, ?, ?)
                    ON CONFLICT (tenant, suborg_id) DO UPDATE SET state = excluded.state
                    """)
            var new = 0
            for (id, state) in states.sorted(by: { $0.key < $1.key }) {
                if try Bool.fetchOne(exists, arguments: [tenant.rawValue, id]) == nil { new += 1 }
                try upsert.execute(arguments: [tenant.rawValue, id, createdAt, state])
            }
            if let audit { _ = try self.insertAudit(audit, db) }
            return new
        }
    }

    public func sandboxSubOrgState(tenant: TenantName, subOrgId: String) async throws(ConsoleError) -> String? {
        try await read("reading the state of sandbox sub-org \(subOrgId)") { db in
            try String.fetchOne(
                db.cachedStatement(sql: "SELECT state FROM sandbox_suborgs WHERE tenant = ? AND suborg_id = ?"),
                arguments: [tenant.rawValue, subOrgId])
        }
    }
}
