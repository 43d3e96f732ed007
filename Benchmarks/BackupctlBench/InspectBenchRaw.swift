import BackupModel
import GRDBSQLite
import SQLiteStore

/// The reference: the store's own indexed queries on a separate read-only connection through
/// the SQLite C API, each prepared once and reused with bind/step/reset. The connection gets
/// the page cache the store's connection has (64 MiB), so the comparison is of code paths,
/// not of cache sizes.
final class RawLookup {
    private var db: OpaquePointer?
    private var lookupStatement: OpaquePointer?
    private var backupStatement: OpaquePointer?
    private var resolveStatement: OpaquePointer?

    /// The statement of `SQLiteConsoleStore.resolveLookup`, the store's own text.
    static let resolveSQL = SQLiteConsoleStore.resolveSQL

    init(path: String) throws {
        guard sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, nil) == SQLITE_OK,
            sqlite3_exec(db, "PRAGMA cache_size = -65536", nil, nil, nil) == SQLITE_OK,
            sqlite3_prepare_v2(
                db, "SELECT backup_id FROM factor_lookup WHERE tenant = ? AND pk = ?", -1, &lookupStatement, nil)
                == SQLITE_OK,
            sqlite3_prepare_v2(
                db, "SELECT 1 FROM backups WHERE tenant = ? AND backup_id = ?", -1, &backupStatement, nil) == SQLITE_OK,
            sqlite3_prepare_v2(db, Self.resolveSQL, -1, &resolveStatement, nil) == SQLITE_OK
        else { throw ConsoleError.internalError("inspect bench: cannot open the raw SQLite connection") }
    }

    deinit {
        sqlite3_finalize(lookupStatement)
        sqlite3_finalize(backupStatement)
        sqlite3_finalize(resolveStatement)
        sqlite3_close_v2(db)
    }

    func lookup(tenant: String, pk: String) -> Bool { query(lookupStatement, tenant, pk, readText: true) }
    func backupExists(tenant: String, id: String) -> Bool { query(backupStatement, tenant, id, readText: false) }

    /// A hit of the resolve statement: the row exists and the metadata implies its key.
    func resolve(tenant: String, pk: String) -> Bool {
        defer {
            sqlite3_reset(resolveStatement)
            sqlite3_clear_bindings(resolveStatement)
        }
        return tenant.withCString { t in
            pk.withCString { k in
                sqlite3_bind_text(resolveStatement, 1, t, -1, nil)
                sqlite3_bind_text(resolveStatement, 2, k, -1, nil)
                guard sqlite3_step(resolveStatement) == SQLITE_ROW, let id = sqlite3_column_text(resolveStatement, 0),
                    let factor = sqlite3_column_text(resolveStatement, 1)
                else { return false }
                return !String(cString: id).isEmpty && !String(cString: factor).isEmpty
                    && sqlite3_column_int(resolveStatement, 2) == 1
            }
        }
    }

    private func query(_ statement: OpaquePointer?, _ tenant: String, _ key: String, readText: Bool) -> Bool {
        defer {
            sqlite3_reset(statement)
            sqlite3_clear_bindings(statement)
        }
        return tenant.withCString { t in
            key.withCString { k in
                sqlite3_bind_text(statement, 1, t, -1, nil)
                sqlite3_bind_text(statement, 2, k, -1, nil)
                guard sqlite3_step(statement) == SQLITE_ROW else { return false }
                if readText, let text = sqlite3_column_text(statement, 0) {
                    return !String(cString: text).isEmpty
                }
                return true
            }
        }
    }
}
