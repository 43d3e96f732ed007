import BackupModel
import BackupctlTestSupport
import Foundation

/// The plainest load PostgreSQL has: psql's `\copy … FROM` of rows already written, into a
/// fresh database of the same schema. The rows are the very ones the store wrote, read back
/// with `\copy (SELECT …) TO` from its database. psql connects through `PG*` variables built
/// from the database URL: no password in any argument.
struct PsqlCopy {
    /// The tables a backup write fills, in the order their foreign keys need.
    static let tables = ["backups", "sealed_blobs", "factor_lookup", "suborg_refs", "backup_factors", "backup_summary"]

    let directory: URL
    let psql: String

    init?(directory: URL) {
        guard let psql = try? ChildProcess.resolve("psql", environment: ProcessInfo.processInfo.environment) else {
            return nil
        }
        self.directory = directory
        self.psql = psql
    }

    /// Writes each table's rows of `tenants` (all when nil) in `url`'s database to a file.
    func export(from url: String, tenants: [String]? = nil) async throws {
        let filter = tenants.map { " WHERE tenant IN (" + $0.map { "'\($0)'" }.joined(separator: ",") + ")" } ?? ""
        let script = Self.tables.map { table in
            "\\copy (SELECT * FROM \(table)\(filter) ORDER BY 1, 2) TO '\(file(table).path)'"
        }
        try await run(script, on: url)
    }

    /// Loads the exported files into `url`'s database (its schema migrated, its tenants there),
    /// in one psql session; seconds, psql's start included.
    func load(into url: String) async throws -> Double {
        let start = nowNanos()
        try await run(Self.tables.map { "\\copy \($0) FROM '\(file($0).path)'" }, on: url)
        return Double(nowNanos() - start) / 1e9
    }

    /// Bytes of the exported files.
    var exportedBytes: Int {
        Self.tables.reduce(0) { total, table in
            total + ((try? FileManager.default.attributesOfItem(atPath: file(table).path)[.size] as? Int) ?? 0)
        }
    }

    private func file(_ table: String) -> URL { directory.appendingPathComponent("\(table).copy") }

    private func run(_ lines: [String], on url: String) async throws {
        let script = directory.appendingPathComponent("script-\(UUID().uuidString).psql")
        try (["\\set ON_ERROR_STOP on"] + lines).joined(separator: "\n").write(
            to: script, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: script) }
        let result = try await ChildProcess.run(
            psql, ["-X", "-q", "-f", script.path], environment: try Self.environment(url), seconds: 3600)
        guard result.status == 0 else {
            throw ConsoleError.internalError("psql failed (\(result.termination)): \(result.stderr.suffix(300))")
        }
    }

    /// psql's connection from `url`, as `PG*` variables (the password never in an argument).
    static func environment(_ url: String) throws -> [String: String] {
        guard let parts = URLComponents(string: url), let host = parts.host else {
            throw ConsoleError.internalError("not a database URL")
        }
        var environment = ProcessInfo.processInfo.environment
        environment["PGHOST"] = host
        environment["PGPORT"] = String(parts.port ?? 5432)
        environment["PGUSER"] = parts.user ?? ""
        environment["PGPASSWORD"] = parts.password ?? ""
        environment["PGDATABASE"] = String(parts.path.dropFirst())
        for item in parts.queryItems ?? [] where item.name == "sslmode" || item.name == "sslrootcert" {
            environment["PG" + item.name.uppercased()] = item.value
        }
        return environment
    }
}
