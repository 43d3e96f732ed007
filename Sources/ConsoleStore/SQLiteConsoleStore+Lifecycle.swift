import BackupModel
import Foundation
import GRDB

/// Which audit entries `audit list` shows: the tenant's, narrowed by operator, action and time.
public struct AuditQuery: Sendable, Equatable {
    public var tenant: TenantName
    public var operatorName: String?
    /// An exact action (`backup.show`) or a family with a trailing `.` or `*` (`reset.`, `reset.*`).
    public var action: String?
    /// Unix milliseconds; entries at or after it.
    public var sinceMillis: Int64?
    /// Entries with a higher sequence number only (`--follow` polls with the last one seen).
    public var afterSeq: Int64

    public init(
        tenant: TenantName, operatorName: String? = nil, action: String? = nil, sinceMillis: Int64? = nil,
        afterSeq: Int64 = 0
    ) {
        self.tenant = tenant
        self.operatorName = operatorName
        self.action = action
        self.sinceMillis = sinceMillis
        self.afterSeq = afterSeq
    }
}

extension SQLiteConsoleStore {
    // MARK: Operator and tenant lifecycle

    public func replaceOperatorToken(_ name: OperatorName, tokenHash: String, audit: AuditDraft)
        async throws(ConsoleError)
        -> Bool
    {
        try await write("rotating the token of \(name)") { db in
            try db.execute(
                sql: "UPDATE operators SET token_hash = ? WHERE name = ?", arguments: [tokenHash, name.rawValue])
            guard db.changesCount > 0 else { return false }
            _ = try self.insertAudit(audit, db)
            return true
        }
    }

    public func setCanCreateTenants(_ name: OperatorName, _ allowed: Bool, audit: AuditDraft)
        async throws(ConsoleError) -> Bool
    {
        try await write("changing the global rights of \(name)") { db in
            try db.execute(
                sql: "UPDATE operators SET can_create_tenants = ? WHERE name = ?", arguments: [allowed, name.rawValue])
            guard db.changesCount > 0 else { return false }
            _ = try self.insertAudit(audit, db)
            return true
        }
    }

    public func removeOperator(_ name: OperatorName, audit: AuditDraft) async throws(ConsoleError) -> Bool {
        try await write("removing operator \(name)") { db in
            // Grants go with it (ON DELETE CASCADE); the audit keeps its name.
            try db.execute(sql: "DELETE FROM operators WHERE name = ?", arguments: [name.rawValue])
            guard db.changesCount > 0 else { return false }
            _ = try self.insertAudit(audit, db)
            return true
        }
    }

    public func deleteTenant(_ name: TenantName, audit: CountedAuditDraft) async throws(ConsoleError) -> Int? {
        try await write("deleting tenant \(name)") { db in
            let backups =
                try Int.fetchOne(db, sql: "SELECT count(*) FROM backups WHERE tenant = ?", arguments: [name.rawValue])
                ?? 0
            // Tables keyed by tenant without a foreign key to it (the index keeps drift, derived
            // rows hang off backups), then the tenant: its foreign keys cascade to the rest.
            try db.execute(sql: "DELETE FROM factor_lookup WHERE tenant = ?", arguments: [name.rawValue])
            try db.execute(sql: "DELETE FROM backups WHERE tenant = ?", arguments: [name.rawValue])
            try db.execute(sql: "DELETE FROM tenants WHERE name = ?", arguments: [name.rawValue])
            guard db.changesCount > 0 else { return nil }
            _ = try self.insertAudit(audit.completed(count: backups), db)
            return backups
        }
    }

    /// The latest `limit` entries matching `query`, oldest first.
    public func auditEntries(_ query: AuditQuery, limit: Int) async throws(ConsoleError) -> [AuditEntry] {
        var conditions = ["tenant = ?", "seq > ?"]
        var arguments: [any DatabaseValueConvertible] = [query.tenant.rawValue, query.afterSeq]
        if let op = query.operatorName {
            conditions.append("operator = ?")
            arguments.append(op)
        }
        if let action = query.action {
            if action.hasSuffix(".") || action.hasSuffix("*") {
                let family = action.hasSuffix("*") ? String(action.dropLast()) : action
                // A family prefix: a range on the text, no LIKE wildcards to escape.
                conditions.append("action >= ? AND action < ?")
                arguments += [family, family + "\u{7F}"]
            } else {
                conditions.append("action = ?")
                arguments.append(action)
            }
        }
        if let since = query.sinceMillis {
            conditions.append("at >= ?")
            arguments.append(since)
        }
        arguments.append(max(0, limit))
        let sql = """
            SELECT seq, at, operator, tenant, action, target, details, prev_hash, hash FROM audit
            WHERE \(conditions.joined(separator: " AND ")) ORDER BY seq DESC LIMIT ?
            """
        let statementArguments = StatementArguments(arguments) ?? StatementArguments()
        return try await read("reading the audit log") { db in
            try Row.fetchAll(db, sql: sql, arguments: statementArguments).reversed().map(Self.auditEntry)
        }
    }
}
