import BackupModel
import ConsoleStore
import Foundation
import Logging
import PostgresNIO
import PostgresStore
import Synchronization

/// An import of a million backups into PostgreSQL through `COPY` (``PostgresBackupCopy``):
/// backups/s and the process's peak memory, beside row-by-row inserts of the same backups in
/// the same run (the reference). It runs on the private cluster of `make bench`
/// (scripts/pg-test-cluster.sh), in a database of its own that it drops at the end.
///
/// The million rows are 10,000 distinct synthetic backups imported into each of 100 tenants
/// (factor keys are unique per tenant), metadata and index only: sealed blobs, 5 KB each, would
/// make it a test of the disk.
struct PostgresBench: BenchSuite {
    let name = "postgres"

    func run(_ scale: BenchScale) async throws -> [String: BenchValue] {
        guard ProcessInfo.processInfo.environment["BACKUPCTL_TEST_POSTGRES"] != nil else {
            return BenchDatabase.missing
        }
        let tenants = scale.pick(100, quick: 4)
        let perTenant = scale.pick(10_000, quick: 2_000)
        let referenceCount = scale.pick(2_000, quick: 500)
        let writes = try Self.synthetic(count: perTenant)
        return try await BenchDatabase.with { url, database in
            try await measure(
                database, url: url, writes: writes, tenants: tenants, batch: 5_000, referenceCount: referenceCount)
        }
    }

    private func measure(
        _ database: PostgresStoreDatabase, url: String, writes: [BackupWrite], tenants: Int, batch: Int,
        referenceCount: Int
    ) async throws -> [String: BenchValue] {
        _ = try await PostgresMigrator.migrate(database)
        let names = try (0..<tenants).map { try TenantName("t\($0)") } + [try TenantName("reference")]
        try await database.withConnection("adding the tenants") { connection in
            for tenant in names {
                _ = try await connection.query(
                    "INSERT INTO tenants (name, is_sandbox, policy, created_at) VALUES (\(tenant.rawValue), FALSE, '{}', 0)",
                    logger: database.logger)
            }
        }
        let rssBefore = Self.peakResidentMegabytes()

        // The reference: the first backups, one INSERT a row, in one transaction.
        let reference = Array(writes.prefix(referenceCount))
        var start = nowNanos()
        try await database.withTransaction("inserting backups row by row") { connection in
            for write in reference {
                try await Self.insertRowByRow(write, tenant: names[tenants], connection, database.logger)
            }
        }
        let rowByRowPerSecond = Double(reference.count) / (Double(nowNanos() - start) / 1e9)

        // Each batch is prepared (rendered on every core) while the server merges the one before.
        let jobs = names.prefix(tenants).flatMap { tenant in
            stride(from: 0, to: writes.count, by: batch).map { (tenant, $0..<min(writes.count, $0 + batch)) }
        }
        func prepare(_ index: Int) -> Task<PostgresBackupCopy.Prepared, any Error> {
            let (tenant, range) = jobs[index]
            return Task { try PostgresBackupCopy.prepare(tenant: tenant, Array(writes[range])) }
        }
        start = nowNanos()
        var next = jobs.isEmpty ? nil : prepare(0)
        for index in jobs.indices {
            guard let pending = next else { break }
            let prepared = try await pending.value
            next = index + 1 < jobs.count ? prepare(index + 1) : nil
            try await database.withTransaction("copying backups") { connection in
                try await PostgresBackupCopy.write(prepared, on: connection, logger: database.logger)
            }
        }
        let seconds = Double(nowNanos() - start) / 1e9
        let imported = tenants * writes.count
        let stored = try await database.withConnection("counting") { connection in
            var count: Int64 = 0
            for try await value in try await connection.query(
                "SELECT count(*)::BIGINT FROM backups WHERE tenant <> 'reference'", logger: database.logger
            ).decode(Int64.self) {
                count = value
            }
            return count
        }
        let copyPerSecond = Double(imported) / seconds
        let peakAfterImport = Self.peakResidentMegabytes()
        let psqlFigures = try await Self.psqlReference(from: url, tenants: names.prefix(tenants).map(\.rawValue))
        var figures: [String: BenchValue] = ["copyToPsqlCopyTargetRatio": .number(0.5)]
        if case .number(let rate)? = psqlFigures["psqlCopyBackupsPerSecond"] {
            figures["copyToPsqlCopyRatio"] = .number(copyPerSecond / max(1, rate))
        }
        return figures.merging(psqlFigures) { $1 }.merging([
            "importedBackups": .integer(imported),
            "storedBackups": .integer(Int(stored)),
            "batchSize": .integer(batch),
            "importSeconds": .number(seconds),
            "copyBackupsPerSecond": .number(copyPerSecond),
            "rowByRowBackupsPerSecond": .number(rowByRowPerSecond),
            "copyToRowByRowRatio": .number(copyPerSecond / max(1, rowByRowPerSecond)),
            "peakResidentMBBeforeImport": .number(rssBefore),
            "peakResidentMB": .number(peakAfterImport),
        ]) { $1 }
    }

    /// The reference of the import: the same rows, read back from the store's tables, loaded by
    /// psql's `\copy` into a fresh database of the same schema (``PsqlCopy``).
    static func psqlReference(from url: String, tenants: [String]) async throws -> [String: BenchValue] {
        let directory = scratchDirectory("psql-copy")
        defer { try? FileManager.default.removeItem(at: directory) }
        guard let psql = PsqlCopy(directory: directory) else {
            return ["psqlCopyError": .text("psql is not installed (make bench's cluster installs it)")]
        }
        try await psql.export(from: url, tenants: tenants)
        return try await BenchDatabase.with { target, database in
            _ = try await PostgresMigrator.migrate(database)
            try await database.withConnection("adding the tenants") { connection in
                for tenant in tenants {
                    _ = try await connection.query(
                        "INSERT INTO tenants (name, is_sandbox, policy, created_at) VALUES (\(tenant), FALSE, '{}', 0)",
                        logger: database.logger)
                }
            }
            let seconds = try await psql.load(into: target)
            let count = try await database.withConnection("counting") { connection in
                var count: Int64 = 0
                for try await value in try await connection.query(
                    "SELECT count(*)::BIGINT FROM backups", logger: database.logger
                ).decode(Int64.self) {
                    count = value
                }
                return count
            }
            return [
                "psqlCopyBackups": .integer(Int(count)), "psqlCopySeconds": .number(seconds),
                "psqlCopyBackupsPerSecond": .number(Double(count) / max(seconds, 1e-9)),
                "psqlCopyFileMB": .number(Double(psql.exportedBytes) / 1_048_576),
            ]
        }
    }

    /// The reference writer: every row of one backup as its own INSERT.
    static func insertRowByRow(
        _ write: BackupWrite, tenant: TenantName, _ connection: PostgresConnection, _ logger: Logger
    ) async throws {
        let t = tenant.rawValue
        let record = write.record
        let id = record.backupId
        let metadata = record.metadata
        let json = String(decoding: metadata.encoded(.stored), as: UTF8.self)
        _ = try await connection.query(
            """
            INSERT INTO backups (tenant, backup_id, metadata, manifest_hash, blob_size, blob_sha256, imported_at, updated_at)
            VALUES (\(t), \(id), \(json), \(record.manifestHash), NULL, NULL, \(record.importedAt), \(record.updatedAt))
            """, logger: logger)
        for row in write.lookupRows {
            _ = try await connection.query(
                "INSERT INTO factor_lookup (tenant, pk, backup_id) VALUES (\(t), \(row.pk), \(id)) ON CONFLICT DO NOTHING",
                logger: logger)
        }
        for subOrg in Set(metadata.turnkeySubOrgIds) {
            _ = try await connection.query(
                "INSERT INTO suborg_refs (tenant, suborg_id, backup_id) VALUES (\(t), \(subOrg), \(id))", logger: logger
            )
        }
        for key in ImpliedKey.of(metadata) {
            _ = try await connection.query(
                """
                INSERT INTO backup_factors (tenant, backup_id, pk, position, copies, factor_id)
                VALUES (\(t), \(id), \(key.pk), \(key.position), \(key.copies), \(key.factorId))
                """, logger: logger)
        }
        let s = BackupSummary(metadata: metadata, blobSize: nil)
        _ = try await connection.query(
            """
            INSERT INTO backup_summary VALUES (\(t), \(id), \(s.mainFactors), \(s.syncFactors), \(s.passkeys),
                \(s.oidcFactors), \(s.keychainFactors), \(s.prfKeys), \(s.icloudKeys), \(s.turnkeyKeys),
                \(s.unindexedFactors), \(s.badSyncFactors), \(s.firstBadSyncFactor?.factorId),
                \(s.firstBadSyncFactor?.problem.code), \(s.malformedManifestHash), NULL)
            """, logger: logger)
    }

    /// `count` synthetic backups without their blobs, made on every core.
    static func synthetic(count: Int) throws -> [BackupWrite] {
        let workers = max(1, ProcessInfo.processInfo.activeProcessorCount)
        let parts = Mutex<[Int: [BackupWrite]]>([:])
        let failure = Mutex<ConsoleError?>(nil)
        DispatchQueue.concurrentPerform(iterations: workers) { worker in
            let range = (count * worker / workers)..<(count * (worker + 1) / workers)
            do throws(ConsoleError) {
                let made = try SyntheticBackups.writes(seed: 11, indices: range, now: 1_760_000_000)
                parts.withLock { $0[worker] = made }
            } catch {
                failure.withLock { $0 = error }
            }
        }
        if let error = failure.withLock({ $0 }) { throw error }
        return parts.withLock { parts in
            (0..<workers).flatMap { parts[$0] ?? [] }.map { write in
                var write = write
                write.blob = nil
                return write
            }
        }
    }

    static func peakResidentMegabytes() -> Double {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        return Double(usage.ru_maxrss) / 1024
    }
}
