import BackupModel
import ConsoleStore
import Foundation
import GRDBSQLite
import PostgresStore
import SQLiteStore

/// `seed --backups N` of a sandbox tenant on both backends, through the store (the shared
/// rules; PostgreSQL's batches through `COPY`), each beside the same rows written the plainest
/// way in the same run: one transaction of prepared INSERTs through the SQLite C API, and one
/// `COPY` per batch into PostgreSQL with no rule, check or audit. backups/s for each, and
/// PostgreSQL's seeding rate as a share of SQLite's.
struct SeedBench: BenchSuite {
    let name = "seed"

    func run(_ scale: BenchScale) async throws -> [String: BenchValue] {
        let count = scale.pick(100_000, quick: 5_000)
        var figures: [String: BenchValue] = ["backups": .integer(count)]
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("seedbench-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }

        let sqlite = try SQLiteConsoleStore(path: directory.appendingPathComponent("seed.db").path)
        let sqliteRate = try await Self.seed(sqlite, count: count)
        figures["sqliteSeedBackupsPerSecond"] = .number(sqliteRate)
        let reference = try SQLiteConsoleStore(path: directory.appendingPathComponent("plain.db").path)
        try await Self.addTenant(reference)
        let plainInserts = try await PlainSQLiteInserts.rate(path: reference.path, count: count)
        figures["sqlitePlainInsertBackupsPerSecond"] = .number(plainInserts)
        figures["sqliteSeedToPlainInsertRatio"] = .number(sqliteRate / max(1, plainInserts))
        figures["sqliteSeedToPlainInsertTargetRatio"] = .number(0.5)

        let postgres = try await BenchDatabase.with { url, database in
            let store = try await PostgresConsoleStore.open(database)
            let seeded = try await Self.seed(store, count: count)
            let plain = try await Self.plainCopy(database, store: store, count: count)
            var figures: [String: BenchValue] = [
                "postgresSeedBackupsPerSecond": .number(seeded), "postgresPlainCopyBackupsPerSecond": .number(plain),
                "postgresToSQLiteSeedRatio": .number(seeded / max(1, sqliteRate)),
                "postgresSeedToPsqlCopyTargetRatio": .number(0.5),
            ]
            // The very rows the seed wrote, loaded by psql's \copy into a fresh database.
            let reference = try await PostgresBench.psqlReference(from: url, tenants: [Self.tenant.name.rawValue])
            for (key, value) in reference {
                figures["postgresSeed" + key.prefix(1).uppercased() + key.dropFirst()] = value
            }
            if case .number(let rate)? = reference["psqlCopyBackupsPerSecond"] {
                figures["postgresSeedToPsqlCopyRatio"] = .number(seeded / max(1, rate))
            }
            return figures
        }
        figures.merge(postgres) { $1 }
        return figures
    }

    static let tenant = TenantRecord(name: valid("sandbox"), isSandbox: true, createdAt: 1)
    static let plainTenant = TenantRecord(name: valid("plain"), isSandbox: true, createdAt: 1)

    static func valid(_ name: String) -> TenantName {
        guard let tenant = try? TenantName(name) else { preconditionFailure("a fixed tenant name is valid") }
        return tenant
    }

    static func addTenant(_ store: any ConsoleStore, _ tenant: TenantRecord = plainTenant) async throws {
        try await store.createTenant(
            tenant, audit: AuditDraft(operatorName: "bench", tenant: nil, action: "tenant.create"))
    }

    /// Seeds `count` backups into a new sandbox tenant; backups/s.
    static func seed(_ store: any SandboxStore, count: Int) async throws -> Double {
        try await addTenant(store, tenant)
        let start = nowNanos()
        let report = try await store.seedSandbox(
            tenant: tenant, backups: count, orphans: 0, seed: 7, operatorName: "bench", clock: { 1_760_000_000 },
            progress: nil)
        guard report.backups == count else {
            throw ConsoleError.internalError("seed bench: \(report.backups) of \(count) backups were written")
        }
        return Double(count) / (Double(nowNanos() - start) / 1e9)
    }

    /// The same backups (same seed, so the same rows) with `COPY` alone, in batches of the
    /// seeder's size, into another tenant; backups/s, making them included as the seeder's is.
    static func plainCopy(_ database: PostgresStoreDatabase, store: any ConsoleStore, count: Int) async throws
        -> Double
    {
        try await addTenant(store)
        let start = nowNanos()
        for from in stride(from: 0, to: count, by: 1000) {
            let writes = try SyntheticBackups.writes(
                seed: 7, indices: from..<min(count, from + 1000), now: 1_760_000_000)
            let prepared = try PostgresBackupCopy.prepare(tenant: plainTenant.name, writes)
            try await database.withTransaction("copying backups") { connection in
                try await PostgresBackupCopy.write(prepared, on: connection, logger: database.logger)
            }
        }
        return Double(count) / (Double(nowNanos() - start) / 1e9)
    }
}
