import BackupModel
import Foundation
import GRDB

extension SQLiteConsoleStore {
    // MARK: Tenants

    public func createTenant(_ tenant: TenantRecord, audit: AuditDraft) async throws(ConsoleError) {
        try await write("creating tenant \(tenant.name)") { db in
            try self.insertTenant(tenant, db)
            _ = try self.insertAudit(audit, db)
        }
    }

    private func insertTenant(_ tenant: TenantRecord, _ db: Database) throws {
        if try Bool.fetchOne(db, sql: "SELECT 1 FROM tenants WHERE name = ?", arguments: [tenant.name.rawValue])
            != nil
        {
            throw ConsoleError(.conflict, code: "tenant_exists", "Tenant \(tenant.name) already exists.")
        }
        let policy = tenant.policy.storedText
        try db.execute(
            sql: """
                INSERT INTO tenants (name, is_sandbox, turnkey_url, turnkey_org_id, turnkey_api_key_file,
                    cleanup_key_file, policy, created_at, backup_service_url) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
                """,
            arguments: [
                tenant.name.rawValue, tenant.isSandbox, tenant.turnkeyURL, tenant.turnkeyOrgId,
                tenant.turnkeyAPIKeyFile, tenant.cleanupKeyFile, policy, tenant.createdAt, tenant.backupServiceURL,
            ])
    }

    private static let tenantColumns =
        "name, is_sandbox, turnkey_url, turnkey_org_id, turnkey_api_key_file, cleanup_key_file, policy, created_at, backup_service_url"

    private static func tenantRecord(_ row: Row) throws -> TenantRecord {
        let name: String = row["name"]
        let policy = try TenantPolicy.stored(row["policy"], tenant: name)
        return TenantRecord(
            name: try TenantName(name), isSandbox: row["is_sandbox"], turnkeyURL: row["turnkey_url"],
            turnkeyOrgId: row["turnkey_org_id"], turnkeyAPIKeyFile: row["turnkey_api_key_file"],
            cleanupKeyFile: row["cleanup_key_file"], backupServiceURL: row["backup_service_url"], policy: policy,
            createdAt: row["created_at"])
    }

    public func tenant(_ name: TenantName) async throws(ConsoleError) -> TenantRecord? {
        try await read("reading tenant \(name)") { db in
            try Row.fetchOne(
                db, sql: "SELECT \(Self.tenantColumns) FROM tenants WHERE name = ?", arguments: [name.rawValue]
            ).map(Self.tenantRecord)
        }
    }

    public func tenants() async throws(ConsoleError) -> [TenantRecord] {
        try await read("listing tenants") { db in
            try Row.fetchAll(db, sql: "SELECT \(Self.tenantColumns) FROM tenants ORDER BY name").map(Self.tenantRecord)
        }
    }

    // MARK: Operators

    public func operatorCount() async throws(ConsoleError) -> Int {
        try await read("counting operators") { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM operators") ?? 0 }
    }

    public func addOperator(_ op: OperatorRecord, tokenHash: String, audit: AuditDraft) async throws(ConsoleError) {
        try await write("adding operator \(op.name)") { db in
            try self.insertOperator(op, tokenHash: tokenHash, db)
            _ = try self.insertAudit(audit, db)
        }
    }

    private func insertOperator(_ op: OperatorRecord, tokenHash: String, _ db: Database) throws {
        if try Bool.fetchOne(db, sql: "SELECT 1 FROM operators WHERE name = ?", arguments: [op.name.rawValue]) != nil {
            throw ConsoleError(.conflict, code: "operator_exists", "Operator \(op.name) already exists.")
        }
        try db.execute(
            sql: "INSERT INTO operators (name, token_hash, can_create_tenants, created_at) VALUES (?, ?, ?, ?)",
            arguments: [op.name.rawValue, tokenHash, op.canCreateTenants, op.createdAt])
    }

    public func bootstrap(
        admin: OperatorRecord, tokenHash: String, tenant: TenantRecord, audit: AuditDraft
    ) async throws(ConsoleError) {
        try await write("initialising the console store") { db in
            if try Int.fetchOne(db, sql: "SELECT count(*) FROM operators") ?? 0 > 0 {
                throw ConsoleError(
                    .conflict, code: "already_initialized", "The console store already has operators; init runs once.")
            }
            try self.insertOperator(admin, tokenHash: tokenHash, db)
            if try Bool.fetchOne(db, sql: "SELECT 1 FROM tenants WHERE name = ?", arguments: [tenant.name.rawValue])
                == nil
            {
                try self.insertTenant(tenant, db)
            }
            try db.execute(
                sql: "INSERT INTO grants (operator, tenant, role) VALUES (?, ?, ?)",
                arguments: [admin.name.rawValue, tenant.name.rawValue, Role.admin.rawValue])
            _ = try self.insertAudit(audit, db)
        }
    }

    private static func operatorRecord(_ row: Row) throws -> OperatorRecord {
        OperatorRecord(
            name: try OperatorName(row["name"] as String), canCreateTenants: row["can_create_tenants"],
            createdAt: row["created_at"])
    }

    public func accessVersion() async throws(ConsoleError) -> Int64 {
        try await read("reading the access version") { db in
            try Int64.fetchOne(db, sql: "SELECT version FROM access_version WHERE id = 1") ?? 0
        }
    }

    public func operatorRecord(tokenHash: String) async throws(ConsoleError) -> OperatorRecord? {
        try await read("authenticating an operator") { db in
            try Row.fetchOne(
                db, sql: "SELECT name, can_create_tenants, created_at FROM operators WHERE token_hash = ?",
                arguments: [tokenHash]
            ).map(Self.operatorRecord)
        }
    }

    public func operatorRecord(named name: OperatorName) async throws(ConsoleError) -> OperatorRecord? {
        try await read("reading operator \(name)") { db in
            try Row.fetchOne(
                db, sql: "SELECT name, can_create_tenants, created_at FROM operators WHERE name = ?",
                arguments: [name.rawValue]
            ).map(Self.operatorRecord)
        }
    }

    public func operators() async throws(ConsoleError) -> [OperatorRecord] {
        try await read("listing operators") { db in
            try Row.fetchAll(db, sql: "SELECT name, can_create_tenants, created_at FROM operators ORDER BY name")
                .map(Self.operatorRecord)
        }
    }

    // MARK: Grants

    public func grant(_ grant: GrantRecord, audit: AuditDraft) async throws(ConsoleError) {
        try await write("granting \(grant.role) on \(grant.tenant) to \(grant.operatorName)") { db in
            try db.execute(
                sql: """
                    INSERT INTO grants (operator, tenant, role) VALUES (?, ?, ?)
                    ON CONFLICT (operator, tenant) DO UPDATE SET role = excluded.role
                    """,
                arguments: [grant.operatorName.rawValue, grant.tenant.rawValue, grant.role.rawValue])
            _ = try self.insertAudit(audit, db)
        }
    }

    public func revoke(operator name: OperatorName, tenant: TenantName, audit: AuditDraft) async throws(ConsoleError)
        -> Bool
    {
        try await write("revoking \(name) on \(tenant)") { db in
            try db.execute(
                sql: "DELETE FROM grants WHERE operator = ? AND tenant = ?",
                arguments: [name.rawValue, tenant.rawValue])
            // Only a grant that was there is audited as revoked.
            let removed = db.changesCount > 0
            if removed { _ = try self.insertAudit(audit, db) }
            return removed
        }
    }

    private static func grantRecord(_ row: Row) throws -> GrantRecord {
        let roleValue: Int = row["role"]
        guard let role = Role(rawValue: roleValue) else {
            throw ConsoleError.internalError("A grant in the store has an unknown role \(roleValue).")
        }
        return GrantRecord(
            operatorName: try OperatorName(row["operator"] as String), tenant: try TenantName(row["tenant"] as String),
            role: role)
    }

    public func grants(operator name: OperatorName) async throws(ConsoleError) -> [GrantRecord] {
        try await read("listing grants of \(name)") { db in
            try Row.fetchAll(
                db, sql: "SELECT operator, tenant, role FROM grants WHERE operator = ? ORDER BY tenant",
                arguments: [name.rawValue]
            ).map(Self.grantRecord)
        }
    }

    public func grants(tenant: TenantName) async throws(ConsoleError) -> [GrantRecord] {
        try await read("listing grants on \(tenant)") { db in
            try Row.fetchAll(
                db, sql: "SELECT operator, tenant, role FROM grants WHERE tenant = ? ORDER BY operator",
                arguments: [tenant.rawValue]
            ).map(Self.grantRecord)
        }
    }
}
