import BackupModel
import ConsoleStore
import Foundation
import PostgresNIO
import Synchronization

/// Writes many backups into PostgreSQL with `COPY … FROM STDIN` instead of row-by-row inserts
/// (an import of a million backups), under the same rules as the SQLite store's `writeBackups`.
/// A batch of new backups is copied straight into its tables; any other (one that replaces a
/// backup, takes a factor over or conflicts) goes into temporary staging tables, then one
/// statement per table merges them.
///
/// A backup's metadata, blob, lookup rows, sub-org references and what reads derive from its
/// metadata (implied keys, summary) are replaced as a whole. A lookup row owned by another
/// backup, or claimed by two backups of the batch, is a `factor_conflict` and nothing is
/// written. It runs inside the caller's transaction, which also appends the audit entry.
public enum PostgresBackupCopy {
    /// Copies `writes` into `tenant` on `connection`, which must be in a transaction.
    /// - Throws: ``ConsoleError`` `backup_id_mismatch`, `blob_too_large`, `blob_mismatch`,
    ///   `lookup_row_mismatch`, `invalid_lookup_key` before anything is sent; `factor_conflict`
    ///   after staging, before anything is merged.
    public static func write(
        tenant: TenantName, _ writes: [BackupWrite], on connection: PostgresConnection, logger: Logger
    ) async throws {
        try await write(try prepare(tenant: tenant, writes), on: connection, logger: logger)
    }

    /// The rows of one batch in COPY's text format, one stream per staged table.
    public struct Prepared: Sendable {
        var tables: [CopyText]
        var tenant: String
        /// The rows the batch takes over (``BackupWrite/takesOver``): pk and its owner until now.
        var takeovers: [LookupRow]
        public var isEmpty: Bool { tables.allSatisfy(\.isEmpty) }
    }

    /// Checks `writes` and renders their rows (metadata, derived keys and summary, on every
    /// core): the part of a write that needs no database, so an import can prepare the next
    /// batch while the server merges this one.
    public static func prepare(tenant: TenantName, _ writes: [BackupWrite]) throws(ConsoleError) -> Prepared {
        for write in writes { try write.validate() }
        // The last write of a backup in the batch wins, as in consecutive writes.
        var seen = Set<String>()
        let last = Array(writes.reversed().filter { seen.insert($0.record.backupId).inserted }.reversed())
        let workers = last.count < 256 ? 1 : max(1, ProcessInfo.processInfo.activeProcessorCount)
        let parts = Mutex<[Int: [CopyText]]>([:])
        DispatchQueue.concurrentPerform(iterations: workers) { worker in
            let range = (last.count * worker / workers)..<(last.count * (worker + 1) / workers)
            let rendered = render(tenant: tenant.rawValue, last[range])
            parts.withLock { $0[worker] = rendered }
        }
        let rendered = parts.withLock { parts in (0..<workers).map { parts[$0] ?? [] } }
        return Prepared(
            tables: stagingTables.indices.map { table in
                var joined = CopyText()
                for part in rendered where table < part.count { joined.append(part[table]) }
                return joined
            }, tenant: tenant.rawValue, takeovers: last.flatMap(\.takesOver))
    }

    private static func render(tenant t: String, _ writes: ArraySlice<BackupWrite>) -> [CopyText] {
        var backups = CopyText()
        var blobs = CopyText()
        var lookups = CopyText()
        var refs = CopyText()
        var factors = CopyText()
        var summaries = CopyText()
        for write in writes {
            let record = write.record
            let id = record.backupId
            let metadata = record.metadata
            let hasBlob = write.blob != nil
            backups.row([
                t, id, String(decoding: metadata.encoded(.stored), as: UTF8.self), record.manifestHash,
                hasBlob ? record.blobSize.map(String.init) : nil, hasBlob ? record.blobSHA256 : nil,
                String(record.importedAt), String(record.updatedAt),
            ])
            if let blob = write.blob { blobs.row([t, id], bytea: blob) }
            for row in write.lookupRows { lookups.row([t, row.pk, id]) }
            for subOrg in Set(metadata.turnkeySubOrgIds).sorted() { refs.row([t, subOrg, id]) }
            for key in ImpliedKey.of(metadata) {
                factors.row([t, id, key.pk, String(key.position), String(key.copies), key.factorId])
            }
            let s = BackupSummary(metadata: metadata, blobSize: hasBlob ? record.blobSize : nil)
            let counts: [Int] = [
                s.mainFactors, s.syncFactors, s.passkeys, s.oidcFactors, s.keychainFactors, s.prfKeys, s.icloudKeys,
                s.turnkeyKeys, s.unindexedFactors, s.badSyncFactors,
            ]
            var summary: [String?] = [t, id]
            summary += counts.map { String($0) }
            summary.append(s.firstBadSyncFactor?.factorId)
            summary.append(s.firstBadSyncFactor?.problem.code)
            summary.append(s.malformedManifestHash)
            summary.append(s.blobSize.map(String.init))
            summaries.row(summary)
        }
        return [backups, blobs, lookups, refs, factors, summaries]
    }

    /// Stages and merges a prepared batch on `connection`, which must be in a transaction; the
    /// rows it takes over change hands in the same transaction.
    /// - Throws: ``ConsoleError`` `factor_conflict` before anything is merged.
    public static func write(_ prepared: Prepared, on connection: PostgresConnection, logger: Logger) async throws {
        guard !prepared.isEmpty else { return }
        if prepared.takeovers.isEmpty, try await copyDirectly(prepared, on: connection, logger: logger) { return }
        try await stageAndMerge(prepared, on: connection, logger: logger)
    }

    /// A batch of new backups (an import's first pass, a seed) copied straight into its tables,
    /// under a savepoint: the tables' own keys refuse what the staged path would have to handle,
    /// a backup that exists (to be replaced), a factor another backup holds or one claimed twice.
    /// On such a unique violation the savepoint is rolled back and `false` returned; the batch
    /// then takes the staged path, which replaces, collapses and names the conflict.
    private static func copyDirectly(_ prepared: Prepared, on connection: PostgresConnection, logger: Logger)
        async throws -> Bool
    {
        _ = try await connection.query("SAVEPOINT backup_copy", logger: logger)
        do {
            // `backups` goes first: a batch of backups that exist fails on its first row.
            for (table, data) in zip(stagingTables, prepared.tables) where !data.isEmpty {
                try await connection.copyFrom(table: table.name, columns: table.columns, logger: logger) { writer in
                    for chunk in data.all { try await writer.write(chunk) }
                }
            }
        } catch let error as PSQLError where error.serverInfo?[.sqlState] == "23505" {
            _ = try await connection.query("ROLLBACK TO SAVEPOINT backup_copy", logger: logger)
            return false
        }
        _ = try await connection.query("RELEASE SAVEPOINT backup_copy", logger: logger)
        return true
    }

    /// The general path: every table staged in a temporary copy, the conflicts checked, then one
    /// statement per table merges the staged rows.
    private static func stageAndMerge(_ prepared: Prepared, on connection: PostgresConnection, logger: Logger)
        async throws
    {
        for table in stagingTables {
            _ = try await connection.query(
                "CREATE TEMP TABLE \(unescaped: table.name)_in (LIKE \(unescaped: table.name)) ON COMMIT DROP",
                logger: logger)
        }
        for (table, data) in zip(stagingTables, prepared.tables) where !data.isEmpty {
            try await connection.copyFrom(table: "\(table.name)_in", columns: table.columns, logger: logger) { writer in
                for chunk in data.all { try await writer.write(chunk) }
            }
        }
        // Temporary tables have no statistics until analysed: without them the planner scans
        // whole target tables for every batch.
        for table in stagingTables {
            _ = try await connection.query("ANALYZE \(unescaped: table.name)_in", logger: logger)
        }
        // Rows handed over are released only from the backup the writer saw owning them; one
        // that changed hands meanwhile stays, and the conflict check refuses the batch.
        if !prepared.takeovers.isEmpty {
            _ = try await connection.query(
                """
                DELETE FROM factor_lookup f
                USING unnest(\(prepared.takeovers.map(\.pk))::text[], \(prepared.takeovers.map(\.backupId))::text[])
                    AS t(pk, backup_id)
                WHERE f.tenant = \(prepared.tenant) AND f.pk = t.pk AND f.backup_id = t.backup_id
                """, logger: logger)
        }
        try await checkConflicts(on: connection, logger: logger)
        try await merge(on: connection, logger: logger)
    }

    /// A lookup row the index gives another backup, or that two backups of the batch claim.
    private static func checkConflicts(on connection: PostgresConnection, logger: Logger) async throws {
        let rows = try await connection.query(
            """
            SELECT l.pk, l.backup_id, f.backup_id FROM factor_lookup_in l
            JOIN factor_lookup f ON f.tenant = l.tenant AND f.pk = l.pk AND f.backup_id <> l.backup_id
            WHERE f.backup_id NOT IN (SELECT backup_id FROM backups_in)
            UNION ALL
            SELECT l.pk, max(l.backup_id), min(l.backup_id) FROM factor_lookup_in l
            GROUP BY l.pk HAVING count(DISTINCT l.backup_id) > 1
            LIMIT 1
            """, logger: logger)
        for try await (pk, id, other) in rows.decode((String, String, String).self) {
            throw ConsoleError(
                .conflict, code: "factor_conflict",
                "Factor \(pk) is already enrolled in backup \(other), so backup \(id) cannot claim it.")
        }
    }

    /// Replaces what the staged backups had, then inserts the staged rows.
    private static func merge(on connection: PostgresConnection, logger: Logger) async throws {
        var replacing = false
        for try await count in try await connection.query(
            "SELECT count(*)::BIGINT FROM backups_in n JOIN backups b USING (tenant, backup_id)", logger: logger
        ).decode(Int64.self) {
            replacing = count > 0
        }
        let replace = [
            "DELETE FROM sealed_blobs s USING backups_in b WHERE s.tenant = b.tenant AND s.backup_id = b.backup_id",
            "DELETE FROM factor_lookup f USING backups_in b WHERE f.tenant = b.tenant AND f.backup_id = b.backup_id",
            "DELETE FROM suborg_refs r USING backups_in b WHERE r.tenant = b.tenant AND r.backup_id = b.backup_id",
            "DELETE FROM backup_factors f USING backups_in b WHERE f.tenant = b.tenant AND f.backup_id = b.backup_id",
            "DELETE FROM backup_summary s USING backups_in b WHERE s.tenant = b.tenant AND s.backup_id = b.backup_id",
        ]
        let insert = [
            """
            INSERT INTO backups SELECT * FROM backups_in
            ON CONFLICT (tenant, backup_id) DO UPDATE SET metadata = excluded.metadata,
                manifest_hash = excluded.manifest_hash, blob_size = excluded.blob_size,
                blob_sha256 = excluded.blob_sha256, updated_at = excluded.updated_at
            """,
            "INSERT INTO sealed_blobs SELECT * FROM sealed_blobs_in",
            // A backup's own duplicate rows collapse to one, as INSERT OR IGNORE does in SQLite.
            "INSERT INTO factor_lookup SELECT DISTINCT * FROM factor_lookup_in ON CONFLICT DO NOTHING",
            "INSERT INTO suborg_refs SELECT * FROM suborg_refs_in",
            "INSERT INTO backup_factors SELECT * FROM backup_factors_in",
            "INSERT INTO backup_summary SELECT * FROM backup_summary_in",
        ]
        // A batch of new backups (an import) has nothing to replace.
        for statement in (replacing ? replace : []) + insert {
            _ = try await connection.query(PostgresQuery(unsafeSQL: statement), logger: logger)
        }
    }

    /// The staged tables in COPY order, with the columns sent (every column, in table order,
    /// so `LIKE` staging and `SELECT *` merges line up).
    static let stagingTables: [(name: String, columns: [String])] = [
        (
            "backups",
            [
                "tenant", "backup_id", "metadata", "manifest_hash", "blob_size", "blob_sha256", "imported_at",
                "updated_at",
            ]
        ),
        ("sealed_blobs", ["tenant", "backup_id", "bytes"]),
        ("factor_lookup", ["tenant", "pk", "backup_id"]),
        ("suborg_refs", ["tenant", "suborg_id", "backup_id"]),
        ("backup_factors", ["tenant", "backup_id", "pk", "position", "copies", "factor_id"]),
        (
            "backup_summary",
            [
                "tenant", "backup_id", "main_factors", "sync_factors", "passkeys", "oidc_factors", "keychain_factors",
                "prf_keys", "icloud_keys", "turnkey_keys", "unindexed_factors", "bad_sync_factors",
                "bad_sync_factor_id", "bad_sync_problem", "malformed_manifest_hash", "blob_size",
            ]
        ),
    ]
}

/// Rows in COPY's text format (tab-separated, `\N` for NULL, backslash escapes), kept in
/// chunks of about 1 MiB so a large import streams instead of building one buffer.
struct CopyText: Sendable {
    private(set) var chunks: [ByteBuffer] = []
    private var current = ByteBuffer()
    private static let chunkBytes = 1 << 20

    var isEmpty: Bool { chunks.isEmpty && current.readableBytes == 0 }

    /// Appends `other`'s rows after these.
    mutating func append(_ other: CopyText) {
        for chunk in other.all {
            var chunk = chunk
            current.writeBuffer(&chunk)
            if current.readableBytes >= Self.chunkBytes {
                chunks.append(current)
                current = ByteBuffer()
            }
        }
    }

    /// Appends one row: each field escaped, `nil` as `\N`; `bytea`, when given, is the last field
    /// (hex form, written straight into the buffer).
    mutating func row(_ fields: [String?], bytea: Data? = nil) {
        for (index, field) in fields.enumerated() {
            if index > 0 { current.writeInteger(UInt8(ascii: "\t")) }
            if let field { write(escaping: field) } else { current.writeStaticString("\\N") }
        }
        if let bytea {
            if !fields.isEmpty { current.writeInteger(UInt8(ascii: "\t")) }
            write(bytea: bytea)
        }
        current.writeInteger(UInt8(ascii: "\n"))
        if current.readableBytes >= Self.chunkBytes {
            chunks.append(current)
            current = ByteBuffer()
        }
    }

    /// A field with COPY's escapes. Most fields (ids, keys, hex, numbers) hold none of the four
    /// escaped bytes and are copied whole; only the others go byte by byte.
    private mutating func write(escaping field: String) {
        var field = field
        let plain = field.withUTF8 { bytes in
            guard let base = bytes.baseAddress else { return true }
            return memchr(base, 0x5C, bytes.count) == nil && memchr(base, 0x09, bytes.count) == nil
                && memchr(base, 0x0A, bytes.count) == nil && memchr(base, 0x0D, bytes.count) == nil
        }
        guard !plain else {
            current.writeString(field)
            return
        }
        for byte in field.utf8 {
            switch byte {
            case UInt8(ascii: "\\"): current.writeStaticString("\\\\")
            case UInt8(ascii: "\t"): current.writeStaticString("\\t")
            case UInt8(ascii: "\n"): current.writeStaticString("\\n")
            case UInt8(ascii: "\r"): current.writeStaticString("\\r")
            default: current.writeInteger(byte)
            }
        }
    }

    /// A BYTEA value in hex form, its backslash escaped for COPY (`\\x…`).
    private mutating func write(bytea data: Data) {
        current.writeStaticString("\\\\x")
        let count = data.count * 2
        current.writeWithUnsafeMutableBytes(minimumWritableBytes: count) { out in
            let digits: StaticString = "0123456789abcdef"
            digits.withUTF8Buffer { hex in
                data.withUnsafeBytes { input in
                    var at = 0
                    for byte in input {
                        out[at] = hex[Int(byte >> 4)]
                        out[at + 1] = hex[Int(byte & 0x0F)]
                        at += 2
                    }
                }
            }
            return count
        }
    }

    /// All chunks, the last one included.
    var all: [ByteBuffer] { current.readableBytes > 0 ? chunks + [current] : chunks }
}
