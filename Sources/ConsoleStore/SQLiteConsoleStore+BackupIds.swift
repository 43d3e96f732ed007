import BackupModel
import Foundation
import GRDB

extension SQLiteConsoleStore {
    /// Backup ids of the tenant that start with `prefix`, in id order, at most `limit`: a range
    /// scan of the primary key, so a short prefix over a large tenant still reads `limit` rows.
    public func backupIds(tenant: TenantName, prefix: String, limit: Int) async throws(ConsoleError) -> [String] {
        try await read("listing backup ids") { db in
            // Every id is ASCII, so "prefix" ≤ id < "prefix\u{7F}" is exactly the ids starting with it.
            try String.fetchAll(
                db.cachedStatement(
                    sql: """
                        SELECT backup_id FROM backups WHERE tenant = ? AND backup_id >= ? AND backup_id < ?
                        ORDER BY backup_id LIMIT ?
                        """),
                arguments: [tenant.rawValue, prefix, prefix + "\u{7F}", max(0, limit)])
        }
    }
}
