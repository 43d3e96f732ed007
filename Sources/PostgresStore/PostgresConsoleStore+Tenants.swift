import BackupModel
import ConsoleStore
import Foundation
import PostgresNIO

extension PostgresConsoleStore {
    // MARK: Tenants

    /// Adds a tenant. Fails with `tenant_exists` (`conflict`) if the name is taken.
    public func createTenant(_ tenant: TenantRecord, audit: AuditDraft) async throws(ConsoleError) {
        try await write("creating tenant \(tenant.name)") { connection in
            guard try await insertTenant(tenant, connection) else {
                throw ConsoleError(.conflict, code: "tenant_exists", "Tenant \(tenant.name) already exists.")
            }
            _ = try await insertAudit(audit, connection)
        }
    }

    /// Inserts `tenant` unless its name is taken; returns whether it did (a concurrent insert of
    /// the same name waits for the other transaction, then finds it taken).
    private func insertTenant(_ tenant: TenantRecord, _ connection: PostgresConnection) async throws -> Bool {
        let policy = tenant.policy.storedText
        return try await exists(
            """
            INSERT INTO tenants (name, is_sandbox, turnkey_url, turnkey_org_id, turnkey_api_key_file,
                cleanup_key_file, policy, created_at, backup_service_url)
            VALUES (\(tenant.name.rawValue), \(tenant.isSandbox), \(tenant.turnkeyURL), \(tenant.turnkeyOrgId),
                \(tenant.turnkeyAPIKeyFile), \(tenant.cleanupKeyFile), \(policy), \(tenant.createdAt),
                \(tenant.backupServiceURL))
            ON CONFLICT (name) DO NOTHING RETURNING name
            """, connection)
    }

    private static let tenantColumns =
        "name, is_sandbox, turnkey_url, turnkey_org_id, turnkey_api_key_file, cleanup_key_file, policy, created_at, backup_service_url"

    private static func tenantRecord(_ row: PostgresRandomAccessRow) throws -> TenantRecord {
        let name = try row["name"].decode(String.self)
        let policy = try TenantPolicy.stored(try row["policy"].decode(String.self), tenant: name)
        return TenantRecord(
            name: try TenantName(name), isSandbox: try row["is_sandbox"].decode(Bool.self),
            turnkeyURL: try row["turnkey_url"].decode(String?.self),
            turnkeyOrgId: try row["turnkey_org_id"].decode(String?.self),
            turnkeyAPIKeyFile: try row["turnkey_api_key_file"].decode(String?.self),
            cleanupKeyFile: try row["cleanup_key_file"].decode(String?.self),
            backupServiceURL: try row["backup_service_url"].decode(String?.self), policy: policy,
            createdAt: try row["created_at"].decode(Int64.self))
    }

    public func tenant(_ name: TenantName) async throws(ConsoleError) -> TenantRecord? {
        try await read("reading tenant \(name)") { connection in
            try await first(
                "SELECT \(unescaped: Self.tenantColumns) FROM tenants WHERE name = \(name.rawValue)", connection,
                Self.tenantRecord)
        }
    }

    /// Every tenant, in name order.
    public func tenants() async throws(ConsoleError) -> [TenantRecord] {
        try await read("listing tenants") { connection in
            try await all(
                "SELECT \(unescaped: Self.tenantColumns) FROM tenants ORDER BY name", connection, Self.tenantRecord)
        }
    }

    // MARK: Operators

    public func operatorCount() async throws(ConsoleError) -> Int {
        try await read("counting operators") { connection in
            try await first("SELECT count(*) FROM operators", connection) { row in try row[0].decode(Int.self) } ?? 0
        }
    }

    /// Adds an operator with the hash of its token. Fails with `operator_exists` (`conflict`) if
    /// the name is taken.
    public func addOperator(_ op: OperatorRecord, tokenHash: String, audit: AuditDraft) async throws(ConsoleError) {
        try await write("adding operator \(op.name)") { connection in
            try await insertOperator(op, tokenHash: tokenHash, connection)
            _ = try await insertAudit(audit, connection)
        }
    }

    private func insertOperator(_ op: OperatorRecord, tokenHash: String, _ connection: PostgresConnection)
        async throws
    {
        let inserted = try await exists(
            """
            INSERT INTO operators (name, token_hash, can_create_tenants, created_at)
            VALUES (\(op.name.rawValue), \(tokenHash), \(op.canCreateTenants), \(op.createdAt))
            ON CONFLICT (name) DO NOTHING RETURNING name
            """, connection)
        guard inserted else {
            throw ConsoleError(.conflict, code: "operator_exists", "Operator \(op.name) already exists.")
        }
    }

    /// Runs `init` atomically: fails with `already_initialized` (`conflict`) if any operator exists.
    ///
    /// The audit chain's lock is taken first, so two processes initialising at once run one after
    /// the other and the second finds the first's operator.
    public func bootstrap(
        admin: OperatorRecord, tokenHash: String, tenant: TenantRecord, audit: AuditDraft
    ) async throws(ConsoleError) {
        try await write("initialising the console store") { connection in
            try await lockAudit(connection)
            if try await exists("SELECT 1 FROM operators LIMIT 1", connection) {
                throw ConsoleError(
                    .conflict, code: "already_initialized", "The console store already has operators; init runs once.")
            }
            try await insertOperator(admin, tokenHash: tokenHash, connection)
            _ = try await insertTenant(tenant, connection)
            try await execute(
                """
                INSERT INTO grants (operator, tenant, role)
                VALUES (\(admin.name.rawValue), \(tenant.name.rawValue), \(Role.admin.rawValue))
                """, connection)
            _ = try await insertAudit(audit, connection)
        }
    }

    private static func operatorRecord(_ row: PostgresRandomAccessRow) throws -> OperatorRecord {
        OperatorRecord(
            name: try OperatorName(row["name"].decode(String.self)),
            canCreateTenants: try row["can_create_tenants"].decode(Bool.self),
            createdAt: try row["created_at"].decode(Int64.self))
    }

    /// A number that changes whenever tenants, operators or grants change, by any process (the
    /// schema's triggers move it in the changing transaction).
    public func accessVersion() async throws(ConsoleError) -> Int64 {
        try await read("reading the access version") { connection in
            try await first("SELECT version FROM access_version WHERE id = 1", connection) { row in
                try row[0].decode(Int64.self)
            } ?? 0
        }
    }

    public func operatorRecord(tokenHash: String) async throws(ConsoleError) -> OperatorRecord? {
        try await read("authenticating an operator") { connection in
            try await first(
                "SELECT name, can_create_tenants, created_at FROM operators WHERE token_hash = \(tokenHash)",
                connection, Self.operatorRecord)
        }
    }

    public func operatorRecord(named name: OperatorName) async throws(ConsoleError) -> OperatorRecord? {
        try await read("reading operator \(name)") { connection in
            try await first(
                "SELECT name, can_create_tenants, created_at FROM operators WHERE name = \(name.rawValue)",
                connection, Self.operatorRecord)
        }
    }

    /// Every operator, in name order.
    public func operators() async throws(ConsoleError) -> [OperatorRecord] {
        try await read("listing operators") { connection in
            try await all(
                "SELECT name, can_create_tenants, created_at FROM operators ORDER BY name", connection,
                Self.operatorRecord)
        }
    }

    // MARK: Grants

    /// Sets the role (insert or replace).
    public func grant(_ grant: GrantRecord, audit: AuditDraft) async throws(ConsoleError) {
        try await write("granting \(grant.role) on \(grant.tenant) to \(grant.operatorName)") { connection in
            try await execute(
                """
                INSERT INTO grants (operator, tenant, role)
                VALUES (\(grant.operatorName.rawValue), \(grant.tenant.rawValue), \(grant.role.rawValue))
                ON CONFLICT (operator, tenant) DO UPDATE SET role = excluded.role
                """, connection)
            _ = try await insertAudit(audit, connection)
        }
    }

    /// Removes the grant; returns whether there was one. The audit entry is written only then.
    public func revoke(operator name: OperatorName, tenant: TenantName, audit: AuditDraft) async throws(ConsoleError)
        -> Bool
    {
        try await write("revoking \(name) on \(tenant)") { connection in
            let removed = try await exists(
                """
                DELETE FROM grants WHERE operator = \(name.rawValue) AND tenant = \(tenant.rawValue)
                RETURNING operator
                """, connection)
            // Only a grant that was there is audited as revoked.
            if removed { _ = try await insertAudit(audit, connection) }
            return removed
        }
    }

    private static func grantRecord(_ row: PostgresRandomAccessRow) throws -> GrantRecord {
        let roleValue = try row["role"].decode(Int.self)
        guard let role = Role(rawValue: roleValue) else {
            throw ConsoleError.internalError("A grant in the store has an unknown role \(roleValue).")
        }
        return GrantRecord(
            operatorName: try OperatorName(row["operator"].decode(String.self)),
            tenant: try TenantName(row["tenant"].decode(String.self)), role: role)
    }

    /// The operator's grants, in tenant order.
    public func grants(operator name: OperatorName) async throws(ConsoleError) -> [GrantRecord] {
        try await read("listing grants of \(name)") { connection in
            try await all(
                "SELECT operator, tenant, role FROM grants WHERE operator = \(name.rawValue) ORDER BY tenant",
                connection, Self.grantRecord)
        }
    }

    /// The tenant's grants, in operator order.
    public func grants(tenant: TenantName) async throws(ConsoleError) -> [GrantRecord] {
        try await read("listing grants on \(tenant)") { connection in
            try await all(
                "SELECT operator, tenant, role FROM grants WHERE tenant = \(tenant.rawValue) ORDER BY operator",
                connection, Self.grantRecord)
        }
    }
}
