import BackupModel
import ConsoleStore
import Foundation
import GRDBSQLite

/// The reference writer of ``SeedBench`` and ``SQLiteImportBench``: the rows the store writes for
/// a backup (backup, blob, index, sub-org refs, derived keys and summary; a seed's sandbox
/// sub-orgs too) as prepared INSERTs through the C API, no check, no audit, no store.
enum PlainSQLiteInserts {
    /// Writes the `count` backups of seed 7 into tenant `plain` of the migrated store at `path`;
    /// backups/s.
    static func rate(path: String, count: Int) async throws -> Double {
        try withWriter(path: path) { writer in
            let start = nowNanos()
            try writer.exec("BEGIN IMMEDIATE")
            for from in stride(from: 0, to: count, by: 1000) {
                let batch = try SyntheticBackups.writes(
                    seed: 7, indices: from..<min(count, from + 1000), now: 1_760_000_000)
                for write in batch { try writer.insert(write, tenant: "plain", sandbox: true) }
            }
            try writer.exec("COMMIT")
            return Double(count) / (Double(nowNanos() - start) / 1e9)
        }
    }

    /// Writes `writes` into each of `tenants` of the migrated store at `path`, one transaction of
    /// `batch` backups at a time (an import's batches); the seconds it took.
    static func seconds(path: String, tenants: [String], writes: [BackupWrite], batch: Int) throws -> Double {
        try withWriter(path: path) { writer in
            let start = nowNanos()
            for tenant in tenants {
                for from in stride(from: 0, to: writes.count, by: batch) {
                    try writer.exec("BEGIN IMMEDIATE")
                    for write in writes[from..<min(writes.count, from + batch)] {
                        try writer.insert(write, tenant: tenant, sandbox: false)
                    }
                    try writer.exec("COMMIT")
                }
            }
            return Double(nowNanos() - start) / 1e9
        }
    }

    /// `body` with a writer on the store at `path`, closed after.
    private static func withWriter<T>(path: String, _ body: (Writer) throws -> T) throws -> T {
        var db: OpaquePointer?
        guard sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, nil) == SQLITE_OK else {
            throw ConsoleError.internalError("plain inserts: cannot open \(path)")
        }
        defer { sqlite3_close_v2(db) }
        return try body(try Writer(db))
    }

    private final class Writer {
        let db: OpaquePointer?
        var statements: [String: OpaquePointer] = [:]

        init(_ db: OpaquePointer?) throws { self.db = db }

        deinit { for statement in statements.values { sqlite3_finalize(statement) } }

        func exec(_ sql: String) throws {
            guard sqlite3_exec(db, sql, nil, nil, nil) == SQLITE_OK else {
                throw ConsoleError.internalError("plain inserts: \(String(cString: sqlite3_errmsg(db)))")
            }
        }

        /// Binds `values` (text, integer, blob or NULL) to the cached statement of `sql` and runs it.
        func run(_ sql: String, _ values: [Any?]) throws {
            let statement: OpaquePointer
            if let cached = statements[sql] {
                statement = cached
            } else {
                var made: OpaquePointer?
                guard sqlite3_prepare_v2(db, sql, -1, &made, nil) == SQLITE_OK, let made else {
                    throw ConsoleError.internalError("plain inserts: \(String(cString: sqlite3_errmsg(db)))")
                }
                statements[sql] = made
                statement = made
            }
            defer { sqlite3_reset(statement) }
            let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)
            for (offset, value) in values.enumerated() {
                let index = Int32(offset + 1)
                switch value {
                case let text as String: sqlite3_bind_text(statement, index, text, -1, transient)
                case let number as Int: sqlite3_bind_int64(statement, index, Int64(number))
                case let number as Int64: sqlite3_bind_int64(statement, index, number)
                case let data as Data:
                    _ = data.withUnsafeBytes {
                        sqlite3_bind_blob(statement, index, $0.baseAddress, Int32(data.count), transient)
                    }
                default: sqlite3_bind_null(statement, index)
                }
            }
            guard sqlite3_step(statement) == SQLITE_DONE else {
                throw ConsoleError.internalError("plain inserts: \(String(cString: sqlite3_errmsg(db)))")
            }
        }

        /// The rows of `write` in `t`; a seed's (`sandbox`) also registers its sub-orgs.
        func insert(_ write: BackupWrite, tenant t: String, sandbox: Bool) throws {
            let record = write.record
            let id = record.backupId
            let metadata = record.metadata
            try run(
                """
                INSERT INTO backups (tenant, backup_id, metadata, manifest_hash, blob_size, blob_sha256, imported_at,
                    updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                """,
                [
                    t, id, String(decoding: metadata.encoded(.stored), as: UTF8.self), record.manifestHash,
                    write.blob == nil ? nil : record.blobSize, write.blob == nil ? nil : record.blobSHA256,
                    record.importedAt, record.updatedAt,
                ])
            if let blob = write.blob {
                try run("INSERT INTO sealed_blobs (tenant, backup_id, bytes) VALUES (?, ?, ?)", [t, id, blob])
            }
            for row in write.lookupRows {
                try run(
                    "INSERT OR IGNORE INTO factor_lookup (tenant, pk, backup_id) VALUES (?, ?, ?)", [t, row.pk, id])
            }
            for subOrg in Set(metadata.turnkeySubOrgIds) {
                try run("INSERT INTO suborg_refs (tenant, suborg_id, backup_id) VALUES (?, ?, ?)", [t, subOrg, id])
                guard sandbox else { continue }
                try run(
                    "INSERT OR IGNORE INTO sandbox_suborgs (tenant, suborg_id, created_at) VALUES (?, ?, 0)",
                    [t, subOrg])
            }
            for key in ImpliedKey.of(metadata) {
                try run(
                    "INSERT INTO backup_factors (tenant, backup_id, pk, position, copies, factor_id) VALUES (?, ?, ?, ?, ?, ?)",
                    [t, id, key.pk, key.position, key.copies, key.factorId])
            }
            let s = BackupSummary(metadata: metadata, blobSize: write.blob == nil ? nil : record.blobSize)
            try run(
                "INSERT INTO backup_summary VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    t, id, s.mainFactors, s.syncFactors, s.passkeys, s.oidcFactors, s.keychainFactors, s.prfKeys,
                    s.icloudKeys, s.turnkeyKeys, s.unindexedFactors, s.badSyncFactors, s.firstBadSyncFactor?.factorId,
                    s.firstBadSyncFactor?.problem.code, s.malformedManifestHash, s.blobSize,
                ])
        }
    }
}
