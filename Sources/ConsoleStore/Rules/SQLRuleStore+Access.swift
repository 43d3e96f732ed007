import BackupModel
import Foundation

/// Tenants, operators and grants: who may act, and on what.
extension SQLRuleStore {
    // MARK: Tenants

    public func createTenant(_ tenant: TenantRecord, audit: AuditDraft) async throws(ConsoleError) {
        try await audited("creating tenant \(tenant.name)", audit) { session in
            guard try await insertTenant(tenant, session) else {
                throw ConsoleError(.conflict, code: "tenant_exists", "Tenant \(tenant.name) already exists.")
            }
        }
    }

    /// Inserts `tenant` unless its name is taken; returns whether it did (a concurrent insert of
    /// the same name waits for the other transaction, then finds it taken).
    private func insertTenant(_ tenant: TenantRecord, _ session: Driver.Session) async throws -> Bool {
        try await session.changes(
            """
            INSERT INTO tenants (\(raw: RowMapping.tenantColumns))
            VALUES (\(tenant.name.rawValue), \(tenant.isSandbox), \(tenant.turnkeyURL), \(tenant.turnkeyOrgId),
                \(tenant.turnkeyAPIKeyFile), \(tenant.cleanupKeyFile), \(tenant.policy.storedText),
                \(tenant.createdAt), \(tenant.backupServiceURL))
            ON CONFLICT (name) DO NOTHING
            """) == 1
    }

    public func tenant(_ name: TenantName) async throws(ConsoleError) -> TenantRecord? {
        try await driver.read("reading tenant \(name)") { session in
            try await session.first(
                "SELECT \(raw: RowMapping.tenantColumns) FROM tenants WHERE name = \(name.rawValue)"
            ).map(RowMapping.tenant)
        }
    }

    public func tenants() async throws(ConsoleError) -> [TenantRecord] {
        try await driver.read("listing tenants") { session in
            try await session.query("SELECT \(raw: RowMapping.tenantColumns) FROM tenants ORDER BY name")
                .map(RowMapping.tenant)
        }
    }

    public func setBackupServiceURL(tenant: TenantName, url: String?, audit: AuditDraft) async throws(ConsoleError) {
        try await audited("setting the Backup Service URL of \(tenant)", audit) { session in
            guard
                try await session.changes(
                    "UPDATE tenants SET backup_service_url = \(url) WHERE name = \(tenant.rawValue)") == 1
            else { throw ConsoleError.notFound("Tenant \(tenant) does not exist.") }
        }
    }

    public func setTurnkeyCredentials(
        tenant: TenantName, url: String, apiKeyFile: String, cleanupKeyFile: String?, audit: AuditDraft
    ) async throws(ConsoleError) {
        try await audited("setting the Turnkey credentials of \(tenant)", audit) { session in
            guard
                try await session.changes(
                    """
                    UPDATE tenants SET turnkey_url = \(url), turnkey_api_key_file = \(apiKeyFile),
                        cleanup_key_file = \(cleanupKeyFile)
                    WHERE name = \(tenant.rawValue) AND NOT is_sandbox
                    """) == 1
            else { throw ConsoleError.notFound("No live tenant \(tenant).") }
        }
    }

    /// The policy is read under the row's lock (where the backend locks rows) and written back in
    /// the same transaction, so a concurrent change of another knob waits and is kept.
    @discardableResult
    public func updateTenantPolicy(
        tenant: TenantName, audit: AuditDraft, _ change: @escaping @Sendable (inout TenantPolicy) -> Void
    ) async throws(ConsoleError) -> TenantPolicy {
        try await audited("updating the policy of \(tenant)", audit) { session in
            let text = try await session.value(
                "SELECT policy FROM tenants WHERE name = \(tenant.rawValue)\(raw: dialect.lockClause)", as: String.self)
            let policy = try TenantPolicy.changing(text, tenant: tenant, change)
            try await session.execute(
                "UPDATE tenants SET policy = \(policy.storedText) WHERE name = \(tenant.rawValue)")
            return policy
        }
    }

    public func deleteTenant(_ name: TenantName, audit: CountedAuditDraft) async throws(ConsoleError) -> Int? {
        try await driver.transaction("deleting tenant \(name)") { session in
            let backups =
                try await session.value("SELECT count(*) FROM backups WHERE tenant = \(name.rawValue)", as: Int.self)
                ?? 0
            // Tables keyed by tenant without a foreign key to it (the index keeps drift, derived
            // rows hang off backups), then the tenant: its foreign keys cascade to the rest.
            try await session.execute("DELETE FROM factor_lookup WHERE tenant = \(name.rawValue)")
            try await session.execute("DELETE FROM backups WHERE tenant = \(name.rawValue)")
            guard try await session.changes("DELETE FROM tenants WHERE name = \(name.rawValue)") > 0 else {
                return nil
            }
            _ = try await appendChained(audit.completed(count: backups), session)
            return backups
        }
    }

    // MARK: Operators

    public func operatorCount() async throws(ConsoleError) -> Int {
        try await driver.read("counting operators") { session in
            try await session.value("SELECT count(*) FROM operators", as: Int.self) ?? 0
        }
    }

    public func addOperator(_ op: OperatorRecord, tokenHash: String, audit: AuditDraft) async throws(ConsoleError) {
        try await audited("adding operator \(op.name)", audit) { session in
            try await insertOperator(op, tokenHash: tokenHash, session)
        }
    }

    private func insertOperator(_ op: OperatorRecord, tokenHash: String, _ session: Driver.Session) async throws {
        let inserted = try await session.changes(
            """
            INSERT INTO operators (name, token_hash, can_create_tenants, created_at)
            VALUES (\(op.name.rawValue), \(tokenHash), \(op.canCreateTenants), \(op.createdAt))
            ON CONFLICT (name) DO NOTHING
            """)
        guard inserted == 1 else {
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
        try await audited("initialising the console store", audit) { session in
            try await lockChain(session)
            if try await session.exists("SELECT 1 FROM operators LIMIT 1") {
                throw ConsoleError(
                    .conflict, code: "already_initialized", "The console store already has operators; init runs once.")
            }
            try await insertOperator(admin, tokenHash: tokenHash, session)
            _ = try await insertTenant(tenant, session)
            try await session.execute(
                """
                INSERT INTO grants (operator, tenant, role)
                VALUES (\(admin.name.rawValue), \(tenant.name.rawValue), \(Role.admin.rawValue))
                """)
        }
    }

    /// A number that changes whenever tenants, operators or grants change, by any process (the
    /// schema's triggers move it in the changing transaction).
    public func accessVersion() async throws(ConsoleError) -> Int64 {
        try await driver.read("reading the access version") { session in
            try await session.value("SELECT version FROM access_version WHERE id = 1", as: Int64.self) ?? 0
        }
    }

    public func operatorRecord(tokenHash: String) async throws(ConsoleError) -> OperatorRecord? {
        try await driver.read("authenticating an operator") { session in
            try await session.first(
                "SELECT \(raw: RowMapping.operatorColumns) FROM operators WHERE token_hash = \(tokenHash)"
            ).map(RowMapping.operator)
        }
    }

    public func operatorRecord(named name: OperatorName) async throws(ConsoleError) -> OperatorRecord? {
        try await driver.read("reading operator \(name)") { session in
            try await session.first(
                "SELECT \(raw: RowMapping.operatorColumns) FROM operators WHERE name = \(name.rawValue)"
            ).map(RowMapping.operator)
        }
    }

    public func operators() async throws(ConsoleError) -> [OperatorRecord] {
        try await driver.read("listing operators") { session in
            try await session.query("SELECT \(raw: RowMapping.operatorColumns) FROM operators ORDER BY name")
                .map(RowMapping.operator)
        }
    }

    public func replaceOperatorToken(_ name: OperatorName, tokenHash: String, audit: AuditDraft)
        async throws(ConsoleError) -> Bool
    {
        try await driver.transaction("rotating the token of \(name)") { session in
            guard
                try await session.changes(
                    "UPDATE operators SET token_hash = \(tokenHash) WHERE name = \(name.rawValue)") > 0
            else { return false }
            _ = try await appendChained(audit, session)
            return true
        }
    }

    public func setCanCreateTenants(_ name: OperatorName, _ allowed: Bool, audit: AuditDraft)
        async throws(ConsoleError) -> Bool
    {
        try await driver.transaction("changing the global rights of \(name)") { session in
            guard
                try await session.changes(
                    "UPDATE operators SET can_create_tenants = \(allowed) WHERE name = \(name.rawValue)") > 0
            else { return false }
            _ = try await appendChained(audit, session)
            return true
        }
    }

    public func removeOperator(_ name: OperatorName, audit: AuditDraft) async throws(ConsoleError) -> Bool {
        try await driver.transaction("removing operator \(name)") { session in
            // Grants go with it (ON DELETE CASCADE); the audit keeps its name.
            guard try await session.changes("DELETE FROM operators WHERE name = \(name.rawValue)") > 0 else {
                return false
            }
            _ = try await appendChained(audit, session)
            return true
        }
    }

    // MARK: Grants

    public func grant(_ grant: GrantRecord, audit: AuditDraft) async throws(ConsoleError) {
        try await audited("granting \(grant.role) on \(grant.tenant) to \(grant.operatorName)", audit) { session in
            try await session.execute(
                """
                INSERT INTO grants (operator, tenant, role)
                VALUES (\(grant.operatorName.rawValue), \(grant.tenant.rawValue), \(grant.role.rawValue))
                ON CONFLICT (operator, tenant) DO UPDATE SET role = excluded.role
                """)
        }
    }

    public func revoke(operator name: OperatorName, tenant: TenantName, audit: AuditDraft) async throws(ConsoleError)
        -> Bool
    {
        try await driver.transaction("revoking \(name) on \(tenant)") { session in
            let removed =
                try await session.changes(
                    "DELETE FROM grants WHERE operator = \(name.rawValue) AND tenant = \(tenant.rawValue)") > 0
            // Only a grant that was there is audited as revoked.
            if removed { _ = try await appendChained(audit, session) }
            return removed
        }
    }

    public func grants(operator name: OperatorName) async throws(ConsoleError) -> [GrantRecord] {
        try await driver.read("listing grants of \(name)") { session in
            try await session.query(
                "SELECT operator, tenant, role FROM grants WHERE operator = \(name.rawValue) ORDER BY tenant"
            ).map(RowMapping.grant)
        }
    }

    public func grants(tenant: TenantName) async throws(ConsoleError) -> [GrantRecord] {
        try await driver.read("listing grants on \(tenant)") { session in
            try await session.query(
                "SELECT operator, tenant, role FROM grants WHERE tenant = \(tenant.rawValue) ORDER BY operator"
            ).map(RowMapping.grant)
        }
    }
}
