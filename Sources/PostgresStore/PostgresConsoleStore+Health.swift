import BackupModel
import ConsoleStore
import PostgresNIO

/// The tenant-wide health page, PostgreSQL's way (overriding the shared rules): the drift of a
/// page found by two anti-joins on the server, in one snapshot, no metadata decoded.
extension PostgresConsoleStore {
    /// One page of summaries and the page's drift: index rows of these backups their metadata
    /// does not imply (in key order), and implied keys the index does not map to them, with the
    /// backup it maps them to instead (in metadata order).
    public func backupHealth(tenant: TenantName, after: String?, limit: Int) async throws(ConsoleError)
        -> [BackupHealthRow]
    {
        let t = tenant.rawValue
        let from = after ?? ""
        return try await driver.snapshot("checking backups") { session in
            var rows = try await session.query(
                """
                SELECT \(raw: RowMapping.summaryColumns) FROM backup_summary
                WHERE tenant = \(t) AND backup_id > \(from) ORDER BY backup_id LIMIT \(Self.clampBatch(limit))
                """
            ).map { BackupHealthRow(summary: try RowMapping.summary($0)) }
            guard let upTo = rows.last?.summary.backupId else { return [] }
            let slots = Dictionary(
                rows.enumerated().map { ($1.summary.backupId, $0) }, uniquingKeysWith: { first, _ in first })
            // Rows of backups outside the page (dangling ones) are not this page's concern.
            let unauthorized = try await session.connection.query(
                """
                SELECT fl.backup_id, fl.pk FROM factor_lookup fl
                WHERE fl.tenant = \(t) AND fl.backup_id > \(from) AND fl.backup_id <= \(upTo)
                    AND NOT EXISTS (SELECT 1 FROM backup_factors bf
                        WHERE bf.tenant = fl.tenant AND bf.backup_id = fl.backup_id AND bf.pk = fl.pk)
                ORDER BY fl.backup_id, fl.pk
                """, logger: database.logger)
            for try await (backupId, pk) in unauthorized.decode((String, String).self) {
                if let slot = slots[backupId] { rows[slot].unauthorizedKeys.append(pk) }
            }
            let unindexed = try await session.connection.query(
                """
                SELECT bf.backup_id, bf.pk, bf.copies, bf.position,
                    (SELECT o.backup_id FROM factor_lookup o WHERE o.tenant = bf.tenant AND o.pk = bf.pk)
                FROM backup_factors bf
                WHERE bf.tenant = \(t) AND bf.backup_id > \(from) AND bf.backup_id <= \(upTo)
                    AND NOT EXISTS (SELECT 1 FROM factor_lookup fl
                        WHERE fl.tenant = bf.tenant AND fl.pk = bf.pk AND fl.backup_id = bf.backup_id)
                ORDER BY bf.backup_id, bf.position
                """, logger: database.logger)
            for try await (backupId, pk, copies, _, owner) in unindexed.decode(
                (String, String, Int, Int, String?).self)
            {
                if let slot = slots[backupId] {
                    rows[slot].unindexedKeys.append(UnindexedKey(pk: pk, copies: copies, owner: owner))
                }
            }
            return rows
        }
    }
}
