import BackupModel
import ConsoleStore
import PostgresNIO

extension PostgresConsoleStore {
    // MARK: Operator and tenant lifecycle

    /// Replaces the operator's token hash (the old token stops working at once); `false` if
    /// there is no such operator, and then nothing is audited.
    public func setCanCreateTenants(_ name: OperatorName, _ allowed: Bool, audit: AuditDraft)
        async throws(ConsoleError) -> Bool
    {
        try await write("changing the global rights of \(name)") { connection in
            guard
                try await exists(
                    "UPDATE operators SET can_create_tenants = \(allowed) WHERE name = \(name.rawValue) RETURNING name",
                    connection)
            else { return false }
            _ = try await insertAudit(audit, connection)
            return true
        }
    }

    public func replaceOperatorToken(_ name: OperatorName, tokenHash: String, audit: AuditDraft)
        async throws(ConsoleError) -> Bool
    {
        try await write("rotating the token of \(name)") { connection in
            guard
                try await exists(
                    "UPDATE operators SET token_hash = \(tokenHash) WHERE name = \(name.rawValue) RETURNING name",
                    connection)
            else { return false }
            _ = try await insertAudit(audit, connection)
            return true
        }
    }

    /// Removes the operator and its grants; `false` if there is no such operator, and then
    /// nothing is audited.
    public func removeOperator(_ name: OperatorName, audit: AuditDraft) async throws(ConsoleError) -> Bool {
        try await write("removing operator \(name)") { connection in
            // Grants go with it (ON DELETE CASCADE); the audit keeps its name.
            guard try await exists("DELETE FROM operators WHERE name = \(name.rawValue) RETURNING name", connection)
            else { return false }
            _ = try await insertAudit(audit, connection)
            return true
        }
    }

    /// Deletes the tenant and everything in it (backups, index, grants, journal, challenges) in
    /// one transaction; the audit keeps its entries. Returns how many backups went, `nil` when
    /// there is no such tenant (nothing is audited then). The entry is `audit` completed with
    /// that count (``CountedAuditDraft/completed(count:)``).
    public func deleteTenant(_ name: TenantName, audit: CountedAuditDraft) async throws(ConsoleError) -> Int? {
        try await write("deleting tenant \(name)") { connection in
            let backups =
                try await first("SELECT count(*) FROM backups WHERE tenant = \(name.rawValue)", connection) { row in
                    try row[0].decode(Int.self)
                } ?? 0
            // Tables keyed by tenant, then the tenant: its foreign keys cascade to the rest.
            try await execute("DELETE FROM factor_lookup WHERE tenant = \(name.rawValue)", connection)
            try await execute("DELETE FROM backups WHERE tenant = \(name.rawValue)", connection)
            guard try await exists("DELETE FROM tenants WHERE name = \(name.rawValue) RETURNING name", connection)
            else { return nil }
            _ = try await insertAudit(audit.completed(count: backups), connection)
            return backups
        }
    }

    /// The latest `limit` entries matching `query`, oldest first.
    ///
    /// An absent filter is a NULL parameter that its condition lets through; an action family
    /// (`reset.`, `reset.*`) is a bytewise range on the text, no LIKE wildcards to escape.
    public func auditEntries(_ query: AuditQuery, limit: Int) async throws(ConsoleError) -> [AuditEntry] {
        var exact: String?
        var family: (low: String, high: String)?
        if let action = query.action {
            if action.hasSuffix(".") || action.hasSuffix("*") {
                let prefix = action.hasSuffix("*") ? String(action.dropLast()) : action
                family = (prefix, prefix + "\u{7F}")
            } else {
                exact = action
            }
        }
        let sql: PostgresQuery = """
            SELECT \(unescaped: Self.auditColumns) FROM audit
            WHERE tenant = \(query.tenant.rawValue) AND seq > \(query.afterSeq)
                AND (\(query.operatorName)::TEXT IS NULL OR operator = \(query.operatorName))
                AND (\(exact)::TEXT IS NULL OR action = \(exact))
                AND (\(family?.low)::TEXT IS NULL
                    OR (action COLLATE "C" >= \(family?.low) AND action COLLATE "C" < \(family?.high)))
                AND (\(query.sinceMillis)::BIGINT IS NULL OR at >= \(query.sinceMillis))
            ORDER BY seq DESC LIMIT \(max(0, limit))
            """
        return try await read("reading the audit log") { connection in
            try await all(sql, connection, Self.auditEntry).reversed()
        }
    }
}
