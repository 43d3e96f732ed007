import BackupModel
import ConsoleStore
import Foundation
import SQLiteStore

/// An import of a million backups into the SQLite store the way `import DIR` writes them
/// (``ConsoleStore/writeBackups(tenant:_:audit:)`` in the importer's batches, one audited
/// transaction each): backups/s and the process's peak memory, beside the same rows written as
/// plain prepared INSERTs through the C API, in the same batches, into a fresh store of the same
/// schema in the same run (``PlainSQLiteInserts``).
///
/// The million rows are the 10,000 synthetic backups of ``PostgresBench`` imported into each of
/// 100 tenants, metadata and index only (no sealed blobs, which would make it a test of the disk).
struct SQLiteImportBench: BenchSuite {
    let name = "sqlite-import"

    func run(_ scale: BenchScale) async throws -> [String: BenchValue] {
        let tenants = (0..<scale.pick(100, quick: 4)).map { "t\($0)" }
        let writes = try PostgresBench.synthetic(count: scale.pick(10_000, quick: 2_000))
        let batch = BackupImporter.defaultBatchSize
        let directory = scratchDirectory("sqlite-import")
        defer { try? FileManager.default.removeItem(at: directory) }

        let store = try SQLiteConsoleStore(path: directory.appendingPathComponent("import.db").path)
        try await Self.addTenants(tenants, to: store)
        let peakBefore = peakRSSMiB()
        let start = nowNanos()
        for tenant in tenants {
            let name = try TenantName(tenant)
            for from in stride(from: 0, to: writes.count, by: batch) {
                let slice = Array(writes[from..<min(writes.count, from + batch)])
                let draft = AuditDraft(
                    operatorName: "bench", tenant: tenant, action: "backup.import",
                    details: [
                        "count": "\(slice.count)", "first": slice[0].record.backupId,
                        "last": slice[slice.count - 1].record.backupId,
                    ])
                try await store.writeBackups(tenant: name, slice, audit: draft)
            }
        }
        let importSeconds = Double(nowNanos() - start) / 1e9
        let peakAfter = peakRSSMiB()
        var stored = 0
        for tenant in tenants { stored += try await store.backupCount(tenant: try TenantName(tenant)) }

        let reference = try SQLiteConsoleStore(path: directory.appendingPathComponent("plain.db").path)
        try await Self.addTenants(tenants, to: reference)
        let plainSeconds = try PlainSQLiteInserts.seconds(
            path: reference.path, tenants: tenants, writes: writes, batch: batch)

        let imported = tenants.count * writes.count
        let importRate = Double(imported) / importSeconds
        let plainRate = Double(imported) / plainSeconds
        return [
            "importedBackups": .integer(imported), "storedBackups": .integer(stored), "batchSize": .integer(batch),
            "importSeconds": .number(importSeconds), "importBackupsPerSecond": .number(importRate),
            "plainInsertSeconds": .number(plainSeconds), "plainInsertBackupsPerSecond": .number(plainRate),
            "importToPlainInsertRatio": .number(importRate / max(1, plainRate)),
            "importToPlainInsertTargetRatio": .number(0.5),
            "peakRSSMiBBeforeImport": .number(peakBefore), "peakRSSMiB": .number(peakAfter),
        ]
    }

    static func addTenants(_ names: [String], to store: SQLiteConsoleStore) async throws {
        for name in names {
            try await store.createTenant(
                TenantRecord(name: try TenantName(name), isSandbox: false, createdAt: 1),
                audit: AuditDraft(operatorName: "bench", tenant: nil, action: "tenant.create"))
        }
    }
}
