import BackupModel
import ConsoleStore
import Foundation
import GRDB

/// The hot single-row reads, overriding the shared rules' statements: one cached statement on
/// the writer connection through the C API (``RawCursor``), no row decoding.
extension SQLiteConsoleStore {
    public func backupExists(tenant: TenantName, id: String) async throws(ConsoleError) -> Bool {
        try await readOne("checking backup \(id)") { db in
            let cursor = try RawCursor(
                db, sql: "SELECT 1 FROM backups WHERE tenant = ? AND backup_id = ?", texts: [tenant.rawValue, id])
            defer { cursor.finish() }
            return try cursor.step()
        }
    }

    public func lookup(tenant: TenantName, pk: String) async throws(ConsoleError) -> LookupRow? {
        let backupId = try await readOne("looking up a factor") { db in
            let cursor = try RawCursor(
                db, sql: "SELECT backup_id FROM factor_lookup WHERE tenant = ? AND pk = ?",
                texts: [tenant.rawValue, pk])
            defer { cursor.finish() }
            return try cursor.step() ? cursor.string(0) : nil
        }
        return backupId.map { LookupRow(pk: pk, backupId: $0) }
    }

    /// Read before every operation (``ConsoleStore/accessVersion()``): the same one-row read
    /// as the shared rule's, without a reader's pool checkout and schema check around it.
    public func accessVersion() async throws(ConsoleError) -> Int64 {
        try await readOne("reading the access version") { db in
            let cursor = try RawCursor(db, sql: "SELECT version FROM access_version WHERE id = 1", texts: [])
            defer { cursor.finish() }
            return try cursor.step() ? cursor.int(0) : 0
        }
    }
}
