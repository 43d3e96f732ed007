import BackupModel
import Foundation
import GRDB

extension SQLiteConsoleStore {
    static let backupColumns = "backup_id, metadata, blob_size, blob_sha256, imported_at, updated_at"

    static func backupRecord(_ row: Row) throws -> BackupRecord {
        let id: String = row["backup_id"]
        let metadataText: String = row["metadata"]
        let metadata: BackupMetadata
        do {
            metadata = try BackupMetadata.decode(Data(metadataText.utf8))
        } catch {
            throw ConsoleError.internalError("Backup \(id) has unreadable metadata in the store: \(error.message)")
        }
        return BackupRecord(
            backupId: id, metadata: metadata, blobSize: row["blob_size"], blobSHA256: row["blob_sha256"],
            importedAt: row["imported_at"],
            updatedAt: row["updated_at"])
    }

    public func backup(tenant: TenantName, id: String) async throws(ConsoleError) -> BackupRecord? {
        try await readOne("reading backup \(id)") { db in
            try Row.fetchOne(
                db.cachedStatement(
                    sql: "SELECT \(Self.backupColumns) FROM backups WHERE tenant = ? AND backup_id = ?"),
                arguments: [tenant.rawValue, id]
            ).map(Self.backupRecord)
        }
    }

    public func backupExists(tenant: TenantName, id: String) async throws(ConsoleError) -> Bool {
        try await readOne("checking backup \(id)") { db in
            let cursor = try RawCursor(
                db, sql: "SELECT 1 FROM backups WHERE tenant = ? AND backup_id = ?", texts: [tenant.rawValue, id])
            defer { cursor.finish() }
            return try cursor.step()
        }
    }

    public func backupCount(tenant: TenantName) async throws(ConsoleError) -> Int {
        try await readOne("counting backups") { db in
            try Int.fetchOne(db, sql: "SELECT count(*) FROM backups WHERE tenant = ?", arguments: [tenant.rawValue])
                ?? 0
        }
    }

    public func backups(tenant: TenantName, after: String?, limit: Int) async throws(ConsoleError) -> [BackupRecord] {
        try await read("listing backups") { db in
            try Row.fetchAll(
                db.cachedStatement(
                    sql: """
                        SELECT \(Self.backupColumns) FROM backups
                        WHERE tenant = ? AND backup_id > ? ORDER BY backup_id LIMIT ?
                        """),
                arguments: [tenant.rawValue, after ?? "", Self.clampBatch(limit)]
            ).map(Self.backupRecord)
        }
    }

    // MARK: FactorLookup

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

    public func lookupRows(tenant: TenantName, backupId: String) async throws(ConsoleError) -> [LookupRow] {
        try await readOne("reading the lookup rows of \(backupId)") { db in
            try String.fetchAll(
                db.cachedStatement(sql: "SELECT pk FROM factor_lookup WHERE tenant = ? AND backup_id = ? ORDER BY pk"),
                arguments: [tenant.rawValue, backupId]
            ).map { LookupRow(pk: $0, backupId: backupId) }
        }
    }

    public func lookupRows(tenant: TenantName, after: String?, limit: Int) async throws(ConsoleError) -> [LookupRow] {
        try await read("listing the factor index") { db in
            var rows: [LookupRow] = []
            let cursor = try Row.fetchCursor(
                db.cachedStatement(
                    sql: "SELECT pk, backup_id FROM factor_lookup WHERE tenant = ? AND pk > ? ORDER BY pk LIMIT ?"),
                arguments: [tenant.rawValue, after ?? "", Self.clampBatch(limit)])
            while let row = try cursor.next() { rows.append(LookupRow(pk: row["pk"], backupId: row["backup_id"])) }
            return rows
        }
    }

    public func sealedBlob(tenant: TenantName, backupId: String) async throws(ConsoleError) -> Data? {
        try await readOne("reading the sealed blob of \(backupId)") { db in
            try Data.fetchOne(
                db.cachedStatement(sql: "SELECT bytes FROM sealed_blobs WHERE tenant = ? AND backup_id = ?"),
                arguments: [tenant.rawValue, backupId])
        }
    }

    // MARK: Sub-org references

    public func subOrgReference(tenant: TenantName, subOrgId: String) async throws(ConsoleError) -> String? {
        try await readOne("reading the references of sub-org \(subOrgId)") { db in
            try String.fetchOne(
                db.cachedStatement(
                    sql:
                        "SELECT backup_id FROM suborg_refs WHERE tenant = ? AND suborg_id = ? ORDER BY backup_id LIMIT 1"
                ),
                arguments: [tenant.rawValue, subOrgId])
        }
    }

    public func referencedSubOrgs(tenant: TenantName, after: String?, limit: Int) async throws(ConsoleError)
        -> [String]
    {
        try await read("listing referenced sub-orgs") { db in
            try String.fetchAll(
                db.cachedStatement(
                    sql: """
                        SELECT DISTINCT suborg_id FROM suborg_refs WHERE tenant = ? AND suborg_id > ?
                        ORDER BY suborg_id LIMIT ?
                        """),
                arguments: [tenant.rawValue, after ?? "", Self.clampBatch(limit)])
        }
    }

    // MARK: Paging

    /// A page size between 1 and 100,000.
    static func clampBatch(_ size: Int) -> Int { min(max(size, 1), 100_000) }
}
