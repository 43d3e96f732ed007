import BackupModel
import BackupctlTestSupport
import ConsoleStore
import Foundation
import GRDB
import PostgresNIO
import SQLiteStore
import Testing

@testable import PostgresStore

/// `COPY` writes of backups land exactly as the SQLite store's `writeBackups` writes them.
@Suite(.enabled(if: PostgresTestDatabase.enabled, Comment(rawValue: PostgresTestDatabase.skipped)))
struct PostgresBackupCopyTests {
    static let tables: [(name: String, columns: String, order: String)] = [
        ("backups", "backup_id, metadata, manifest_hash, blob_size, blob_sha256, imported_at, updated_at", "backup_id"),
        ("sealed_blobs", "backup_id, bytes", "backup_id"),
        ("factor_lookup", "pk, backup_id", "pk"),
        ("suborg_refs", "suborg_id, backup_id", "suborg_id, backup_id"),
        ("backup_factors", "backup_id, pk, position, copies, factor_id", "backup_id, pk"),
        (
            "backup_summary",
            """
            backup_id, main_factors, sync_factors, passkeys, oidc_factors, keychain_factors, prf_keys, icloud_keys, \
            turnkey_keys, unindexed_factors, bad_sync_factors, bad_sync_factor_id, bad_sync_problem, \
            malformed_manifest_hash, blob_size
            """, "backup_id"
        ),
    ]

    @Test func copiedBackupsEqualWhatTheSQLiteStoreWrites() async throws {
        let tenant = try TenantName("sandbox")
        // Two batches, the second rewriting some backups of the first (their rows are replaced).
        let first = try SyntheticBackups.writes(seed: 7, indices: 0..<40, now: 1_750_000_000)
        let second = try SyntheticBackups.writes(seed: 7, indices: 30..<50, now: 1_760_000_000)
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("pgcopy-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("console.db").path
        let sqlite = try SQLiteConsoleStore(path: path)
        try await sqlite.createTenant(Self.sandbox(tenant), audit: Self.audit)
        try await sqlite.writeBackups(tenant: tenant, first, audit: Self.audit)
        try await sqlite.writeBackups(tenant: tenant, second, audit: Self.audit)
        let expected = try await DatabaseQueue(path: path).read { db in
            try Self.tables.map { table in
                try Row.fetchAll(
                    db,
                    sql: "SELECT \(table.columns) FROM \(table.name) WHERE tenant = ? ORDER BY \(table.order)",
                    arguments: [tenant.rawValue]
                ).map { row in row.databaseValues.map(Self.text) }
            }
        }
        #expect(expected[0].count == 50 && expected[1].count == 50)

        try await PostgresTestDatabase.make { testDatabase in
            try await withDatabase(testDatabase) { database in
                _ = try await PostgresMigrator.migrate(database)
                try await Self.seedTenant(tenant, database)
                for batch in [first, second] {
                    try await database.withTransaction("copying backups") { connection in
                        try await PostgresBackupCopy.write(
                            tenant: tenant, batch, on: connection, logger: database.logger)
                    }
                }
                for (index, table) in Self.tables.enumerated() {
                    let columns = table.columns.split(separator: ",").map { name in
                        let column = name.trimmingCharacters(in: .whitespaces)
                        return column == "bytes" ? #"'\x' || encode(bytes, 'hex')"# : "\(column)::TEXT"
                    }
                    let copied = try await Self.textRows(
                        database,
                        "SELECT \(columns.joined(separator: ", ")) FROM \(table.name) WHERE tenant = 'sandbox' "
                            + "ORDER BY \(table.order)")
                    #expect(copied == expected[index], "table \(table.name)")
                }
            }
        }
    }

    @Test func aFactorOfAnotherBackupIsAConflictAndNothingIsWritten() async throws {
        let tenant = try TenantName("sandbox")
        let writes = try SyntheticBackups.writes(seed: 8, indices: 0..<3, now: 1_750_000_000)
        var thief = try SyntheticBackups.writes(seed: 8, indices: 3..<4, now: 1_750_000_000)[0]
        let stolen = try #require(writes[1].lookupRows.first)
        thief.lookupRows.append(LookupRow(pk: stolen.pk, backupId: thief.record.backupId))
        try await Self.withCopied(writes, into: tenant) { database in
            // Against the index, and against another backup of the same batch.
            for batch in [[thief], [writes[1], thief]] {
                let error = try await #require(throws: ConsoleError.self) {
                    try await database.withTransaction("copying backups") { connection in
                        try await PostgresBackupCopy.write(
                            tenant: tenant, batch, on: connection, logger: database.logger)
                    }
                }
                #expect(error.code == "factor_conflict")
                #expect(error.message.contains(stolen.pk))
            }
            let count = try await rows(database, "SELECT count(*)::BIGINT FROM backups", as: Int64.self)
            #expect(count == [3])
        }
    }

    /// A new backup that lists one of its factors twice breaks the direct copy's key; the batch
    /// then goes through the staged path, which writes the row once, and the savepoint leaves
    /// nothing of the first attempt behind.
    @Test func aNewBackupListingItsOwnFactorTwiceIsWrittenOnce() async throws {
        let tenant = try TenantName("sandbox")
        var writes = try SyntheticBackups.writes(seed: 9, indices: 0..<3, now: 1_750_000_000)
        let repeated = try #require(writes[2].lookupRows.first)
        writes[2].lookupRows.append(repeated)
        let rowsExpected = writes.reduce(0) { $0 + $1.lookupRows.count } - 1
        try await Self.withCopied(writes, into: tenant) { database in
            #expect(try await rows(database, "SELECT count(*)::BIGINT FROM backups", as: Int64.self) == [3])
            let lookups = try await rows(database, "SELECT count(*)::BIGINT FROM factor_lookup", as: Int64.self)
            #expect(lookups == [Int64(rowsExpected)])
            let summaries = try await rows(
                database, "SELECT count(*)::BIGINT FROM backup_summary", as: Int64.self)
            #expect(summaries == [3])
        }
    }

    @Test func metadataWithTabsNewlinesAndBackslashesSurvivesTheTextFormat() {
        var text = CopyText()
        text.row(["a\tb", nil, "c\\d\ne\r", ""])
        let bytes = text.all.reduce(into: [UInt8]()) { $0 += $1.readableBytesView }
        #expect(String(decoding: bytes, as: UTF8.self) == "a\\tb\t\\N\tc\\\\d\\ne\\r\t\n")
        // A blob is the row's last field, in hex form with its backslash escaped; plain fields go whole.
        var blobs = CopyText()
        blobs.row(["t", "id-1"], bytea: Data([0x00, 0xAB, 0xFF]))
        blobs.row([], bytea: Data())
        let blobBytes = blobs.all.reduce(into: [UInt8]()) { $0 += $1.readableBytesView }
        #expect(String(decoding: blobBytes, as: UTF8.self) == "t\tid-1\t\\\\x00abff\n\\\\x\n")
    }

    /// `body` on a fresh migrated database whose `tenant` holds `writes`, copied in one transaction.
    static func withCopied(
        _ writes: [BackupWrite], into tenant: TenantName, _ body: (PostgresStoreDatabase) async throws -> Void
    ) async throws {
        try await PostgresTestDatabase.make { testDatabase in
            try await withDatabase(testDatabase) { database in
                _ = try await PostgresMigrator.migrate(database)
                try await seedTenant(tenant, database)
                try await database.withTransaction("copying backups") { connection in
                    try await PostgresBackupCopy.write(tenant: tenant, writes, on: connection, logger: database.logger)
                }
                try await body(database)
            }
        }
    }

    static let audit = AuditDraft(
        operatorName: "test", tenant: "sandbox", action: "test.write", target: nil, details: [:])

    static func sandbox(_ name: TenantName) -> TenantRecord {
        TenantRecord(
            name: name, isSandbox: true, turnkeyURL: nil, turnkeyOrgId: nil, turnkeyAPIKeyFile: nil,
            cleanupKeyFile: nil, backupServiceURL: nil, policy: TenantPolicy(), createdAt: 0)
    }

    static func seedTenant(_ tenant: TenantName, _ database: PostgresStoreDatabase) async throws {
        try await database.withConnection("seeding") { connection in
            _ = try await connection.query(
                "INSERT INTO tenants (name, is_sandbox, policy, created_at) VALUES (\(tenant.rawValue), TRUE, '{}', 0)",
                logger: database.logger)
        }
    }

    /// A SQLite value as the text PostgreSQL gives (`nil` for NULL, blobs as lowercase hex).
    static func text(_ value: DatabaseValue) -> String? {
        switch value.storage {
        case .null: return nil
        case .int64(let int): return String(int)
        case .double(let double): return String(double)
        case .string(let string): return string
        case .blob(let data): return "\\x" + data.map { String(format: "%02x", $0) }.joined()
        }
    }

    /// Every column of every row, each selected as text.
    static func textRows(_ database: PostgresStoreDatabase, _ sql: String) async throws -> [[String?]] {
        try await database.withConnection("reading") { connection in
            var result: [[String?]] = []
            for try await row in try await connection.query(PostgresQuery(unsafeSQL: sql), logger: database.logger) {
                result.append(try row.makeRandomAccess().map { cell in try cell.decode(String?.self) })
            }
            return result
        }
    }
}
