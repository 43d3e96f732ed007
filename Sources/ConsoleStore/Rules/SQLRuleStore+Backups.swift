import BackupModel
import Foundation

/// Backups, the FactorLookup index and sub-org references (text keys order by bytes on both
/// backends: SQLite's BINARY, PostgreSQL's `COLLATE "C"`).
extension SQLRuleStore {
    public func backup(tenant: TenantName, id: String) async throws(ConsoleError) -> BackupRecord? {
        try await driver.read("reading backup \(id)") { session in
            try await session.first(
                """
                SELECT \(raw: RowMapping.backupColumns) FROM backups
                WHERE tenant = \(tenant.rawValue) AND backup_id = \(id)
                """
            ).map(RowMapping.backup)
        }
    }

    public func backupExists(tenant: TenantName, id: String) async throws(ConsoleError) -> Bool {
        try await driver.read("checking backup \(id)") { session in
            try await session.exists("SELECT 1 FROM backups WHERE tenant = \(tenant.rawValue) AND backup_id = \(id)")
        }
    }

    public func existingBackupIds(tenant: TenantName, among ids: [String]) async throws(ConsoleError) -> Set<String> {
        try await driver.read("checking \(ids.count) backup ids") { session in
            var found: Set<String> = []
            for start in stride(from: 0, to: ids.count, by: 500) {
                let chunk = ids[start..<min(start + 500, ids.count)].map { SQLStatement("\($0)") }
                let rows: [String] = try await session.values(
                    """
                    SELECT backup_id FROM backups
                    WHERE tenant = \(tenant.rawValue) AND backup_id IN (\(SQLStatement.joined(chunk, separator: ", ")))
                    """)
                found.formUnion(rows)
            }
            return found
        }
    }

    public func confirmBackups(tenant: TenantName, ids: [String], seenAt: Int64) async throws(ConsoleError) {
        guard !ids.isEmpty else { return }
        try await driver.transaction("recording \(ids.count) backups an import found unchanged") { session in
            for start in stride(from: 0, to: ids.count, by: 500) {
                let chunk = ids[start..<min(start + 500, ids.count)].map { SQLStatement("\($0)") }
                try await session.execute(
                    """
                    UPDATE backups SET updated_at = \(seenAt)
                    WHERE tenant = \(tenant.rawValue) AND updated_at < \(seenAt)
                        AND backup_id IN (\(SQLStatement.joined(chunk, separator: ", ")))
                    """)
            }
        }
    }

    public func backupCount(tenant: TenantName) async throws(ConsoleError) -> Int {
        try await driver.read("counting backups") { session in
            try await session.value("SELECT count(*) FROM backups WHERE tenant = \(tenant.rawValue)", as: Int.self) ?? 0
        }
    }

    /// Backup ids of the tenant that start with `prefix`, in id order, at most `limit`: a range
    /// scan of the primary key, so a short prefix over a large tenant still reads `limit` rows.
    public func backupIds(tenant: TenantName, prefix: String, limit: Int) async throws(ConsoleError) -> [String] {
        try await driver.read("listing backup ids") { session in
            // Every id is ASCII, so "prefix" ≤ id < "prefix\u{7F}" is exactly the ids starting with it.
            try await session.values(
                """
                SELECT backup_id FROM backups
                WHERE tenant = \(tenant.rawValue) AND backup_id >= \(prefix) AND backup_id < \(prefix + "\u{7F}")
                ORDER BY backup_id LIMIT \(max(0, limit))
                """)
        }
    }

    public func backupIds(tenant: TenantName) async throws(ConsoleError) -> [String] {
        try await driver.read("listing the backups of \(tenant)") { session in
            try await session.values(
                "SELECT backup_id FROM backups WHERE tenant = \(tenant.rawValue) ORDER BY backup_id")
        }
    }

    public func backups(tenant: TenantName, after: String?, limit: Int) async throws(ConsoleError) -> [BackupRecord] {
        try await driver.read("listing backups") { session in
            try await session.query(
                """
                SELECT \(raw: RowMapping.backupColumns) FROM backups
                WHERE tenant = \(tenant.rawValue) AND backup_id > \(after ?? "") ORDER BY backup_id
                LIMIT \(Self.clampBatch(limit))
                """
            ).map(RowMapping.backup)
        }
    }

    public func sealedBlob(tenant: TenantName, backupId: String) async throws(ConsoleError) -> Data? {
        try await driver.read("reading the sealed blob of \(backupId)") { session in
            try await session.value(
                "SELECT bytes FROM sealed_blobs WHERE tenant = \(tenant.rawValue) AND backup_id = \(backupId)",
                as: Data.self)
        }
    }

    public func backupSummaries(tenant: TenantName, after: String?, limit: Int) async throws(ConsoleError)
        -> [BackupSummary]
    {
        try await driver.read("listing backup summaries") { session in
            try await session.query(
                """
                SELECT \(raw: RowMapping.summaryColumns) FROM backup_summary
                WHERE tenant = \(tenant.rawValue) AND backup_id > \(after ?? "") ORDER BY backup_id
                LIMIT \(Self.clampBatch(limit))
                """
            ).map(RowMapping.summary)
        }
    }

    // MARK: FactorLookup

    public func lookupRows(tenant: TenantName, backupId: String) async throws(ConsoleError) -> [LookupRow] {
        try await driver.read("reading the lookup rows of \(backupId)") { session in
            try await session.values(
                """
                SELECT pk FROM factor_lookup WHERE tenant = \(tenant.rawValue) AND backup_id = \(backupId)
                ORDER BY pk
                """, as: String.self
            ).map { LookupRow(pk: $0, backupId: backupId) }
        }
    }

    public func lookupRows(tenant: TenantName, after: String?, limit: Int) async throws(ConsoleError) -> [LookupRow] {
        try await driver.read("listing the factor index") { session in
            try await session.query(
                """
                SELECT pk, backup_id FROM factor_lookup WHERE tenant = \(tenant.rawValue) AND pk > \(after ?? "")
                ORDER BY pk LIMIT \(Self.clampBatch(limit))
                """
            ).map { LookupRow(pk: try $0.get(0), backupId: try $0.get(1)) }
        }
    }

    @discardableResult
    public func writeLookupRows(tenant: TenantName, _ rows: [LookupRow], audit: AuditDraft) async throws(ConsoleError)
        -> Int
    {
        for row in rows { try BackupWrite.checkKey(row.pk) }
        return try await audited("writing \(rows.count) factor index rows", audit) { session in
            var changed = 0
            for row in rows {
                changed += try await session.changes(
                    """
                    INSERT INTO factor_lookup (tenant, pk, backup_id)
                    VALUES (\(tenant.rawValue), \(row.pk), \(row.backupId))
                    ON CONFLICT (tenant, pk) DO UPDATE SET backup_id = excluded.backup_id
                    WHERE factor_lookup.backup_id <> excluded.backup_id
                    """)
            }
            return changed
        }
    }

    // MARK: Sub-org references

    public func subOrgReference(tenant: TenantName, subOrgId: String) async throws(ConsoleError) -> String? {
        try await driver.read("reading the references of sub-org \(subOrgId)") { session in
            try await session.value(
                """
                SELECT backup_id FROM suborg_refs WHERE tenant = \(tenant.rawValue) AND suborg_id = \(subOrgId)
                ORDER BY backup_id LIMIT 1
                """, as: String.self)
        }
    }

    public func referencedSubOrgs(tenant: TenantName, after: String?, limit: Int) async throws(ConsoleError)
        -> [String]
    {
        try await driver.read("listing referenced sub-orgs") { session in
            try await session.values(
                """
                SELECT DISTINCT suborg_id FROM suborg_refs WHERE tenant = \(tenant.rawValue)
                    AND suborg_id > \(after ?? "")
                ORDER BY suborg_id LIMIT \(Self.clampBatch(limit))
                """)
        }
    }

    /// One range scan of the `suborg_refs` primary key between the page's smallest and largest
    /// id when that range is small (a `list_suborgs` page is a sorted slice of ids, and the store
    /// references most listed sub-orgs), else an indexed `IN` query per 500 ids.
    public func referencedSubOrgs(tenant: TenantName, among ids: [String]) async throws(ConsoleError) -> Set<String> {
        // Bounds in the keys' byte order, not Swift's Unicode order, so no id falls outside.
        let byBytes: (String, String) -> Bool = { $0.utf8.lexicographicallyPrecedes($1.utf8) }
        guard let low = ids.min(by: byBytes), let high = ids.max(by: byBytes) else { return [] }
        let wanted = Set(ids)
        let rangeLimit = 4 * ids.count + 64
        return try await driver.read("checking \(ids.count) sub-org references") { session in
            let inRange: [String] = try await session.values(
                """
                SELECT suborg_id FROM suborg_refs
                WHERE tenant = \(tenant.rawValue) AND suborg_id BETWEEN \(low) AND \(high) LIMIT \(rangeLimit)
                """)
            if inRange.count < rangeLimit { return Set(inRange.lazy.filter { wanted.contains($0) }) }
            var found: Set<String> = []
            for start in stride(from: 0, to: ids.count, by: 500) {
                let chunk = ids[start..<min(start + 500, ids.count)].map { SQLStatement("\($0)") }
                let rows: [String] = try await session.values(
                    """
                    SELECT DISTINCT suborg_id FROM suborg_refs
                    WHERE tenant = \(tenant.rawValue) AND suborg_id IN (\(SQLStatement.joined(chunk, separator: ", ")))
                    """)
                found.formUnion(rows)
            }
            return found
        }
    }
}
