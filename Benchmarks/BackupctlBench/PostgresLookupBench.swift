import BackupModel
import BackupctlTestSupport
import ConsoleStore
import Foundation
import PostgresNIO
import PostgresStore

/// A lookup on the PostgreSQL store (``PostgresConsoleStore/lookup(tenant:pk:)``, one pooled
/// round trip) against the same SQL sent by `psql` (libpq) as a prepared statement on the same
/// database, in the same run: median and p99 of each, and their ratio. `psql`'s `\timing` times
/// each statement from send to last row on its side, so both figures are client-side round trips.
///
/// The two run in alternating rounds, so load from elsewhere hits both alike.
struct PostgresLookupBench: BenchSuite {
    let name = "postgres-lookup"

    func run(_ scale: BenchScale) async throws -> [String: BenchValue] {
        let backups = scale.pick(10_000, quick: 1_000)
        let perRound = scale.pick(500, quick: 100)
        let rounds = scale.pick(6, quick: 2)
        return try await BenchDatabase.with { url, database in
            try await measure(database, url: url, backups: backups, perRound: perRound, rounds: rounds)
        }
    }

    private func measure(
        _ database: PostgresStoreDatabase, url: String, backups: Int, perRound: Int, rounds: Int
    ) async throws -> [String: BenchValue] {
        let store = try await PostgresConsoleStore.open(database)
        let tenant = try TenantName("bench")
        let draft = AuditDraft(operatorName: "bench", tenant: nil, action: "bench.setup")
        try await store.createTenant(
            TenantRecord(name: tenant, isSandbox: true, policy: TenantPolicy(), createdAt: 0), audit: draft)
        let writes = try SyntheticBackups.writes(seed: 5, indices: 0..<backups, now: 1_760_000_000).map {
            var write = $0
            write.blob = nil
            return write
        }
        for start in stride(from: 0, to: writes.count, by: 2_000) {
            try await store.writeBackups(
                tenant: tenant, Array(writes[start..<min(writes.count, start + 2_000)]), audit: draft)
        }
        var generator = SystemRandomNumberGenerator()
        let keys = writes.flatMap { $0.lookupRows.map(\.pk) }
        var ours = Samples()
        var theirs = Samples()
        var held = Samples()
        for _ in 0..<rounds {
            let round = (0..<perRound).map { _ in keys[Int.random(in: 0..<keys.count, using: &generator)] }
            for pk in round {
                let start = nowNanos()
                let row = try await store.lookup(tenant: tenant, pk: pk)
                ours.add(nowNanos() - start)
                guard row != nil else { throw BenchFailure("lookup of \(pk) missed") }
            }
            for nanos in try await Self.psqlTimes(url: url, tenant: tenant.rawValue, keys: round) { theirs.add(nanos) }
            // The floor without the pool: the same prepared statement on one connection held throughout.
            try await database.withConnection("timing lookups on one connection") { connection in
                for pk in round {
                    let start = nowNanos()
                    var found = false
                    for try await _ in try await connection.execute(
                        PostgresConsoleStore.LookupStatement(tenant: tenant.rawValue, pk: pk), logger: database.logger)
                    {
                        found = true
                    }
                    held.add(nowNanos() - start)
                    guard found else { throw BenchFailure("lookup of \(pk) missed") }
                }
            }
        }
        guard theirs.values.count == ours.values.count else {
            throw BenchFailure("psql timed \(theirs.values.count) of \(ours.values.count) lookups")
        }
        return [
            "backups": .integer(backups),
            "lookupsTimed": .integer(ours.values.count),
            "storeMedianMicros": .number(ours.medianMicros),
            "storeP99Micros": .number(ours.p99Micros),
            "psqlMedianMicros": .number(theirs.medianMicros),
            "psqlP99Micros": .number(theirs.p99Micros),
            "heldConnectionMedianMicros": .number(held.medianMicros),
            "storeToPsqlMedianRatio": .number(ours.medianMicros / max(0.001, theirs.medianMicros)),
            "storeToPsqlTargetRatio": .number(1.5),
        ]
    }

    /// Runs `keys` through one `psql` session as `EXECUTE`s of the store's lookup statement,
    /// prepared once, and returns each one's `\timing` in nanoseconds.
    static func psqlTimes(url: String, tenant: String, keys: [String]) async throws -> [UInt64] {
        guard var parts = URLComponents(string: url), let host = parts.host, let user = parts.user else {
            throw BenchFailure("the database URL does not parse")
        }
        let password = parts.password
        parts.password = nil
        func literal(_ text: String) -> String { "'" + text.replacingOccurrences(of: "'", with: "''") + "'" }
        var script = "PREPARE lookup(text, text) AS \(PostgresConsoleStore.lookupSQL);\n\\timing on\n"
        for key in keys { script += "EXECUTE lookup(\(literal(tenant)), \(literal(key)));\n" }
        var environment = [
            "PATH": "/usr/bin:/bin", "PGHOST": host, "PGUSER": user, "PGDATABASE": String(parts.path.dropFirst()),
            "PGSSLMODE": "disable",
        ]
        environment["PGPORT"] = parts.port.map(String.init)
        environment["PGPASSWORD"] = password
        let result = try await ChildProcess.run(
            "psql", ["-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-f", "-"], environment: environment,
            input: .data(Data(script.utf8)), seconds: 600)
        let text = result.stdout
        guard result.status == 0 else { throw BenchFailure("psql failed: \(result.stderr.suffix(300))") }
        return text.split(separator: "\n").compactMap { line -> UInt64? in
            guard line.hasPrefix("Time: "), let millis = Double(line.dropFirst(6).prefix { $0 != " " }) else {
                return nil
            }
            return UInt64(millis * 1_000_000)
        }
    }
}

struct BenchFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
