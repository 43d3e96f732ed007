import Foundation
import Testing

/// Table and JSON rendering compared byte for byte with files in `Goldens/`, on the fixed export
/// in `runbooks/fixtures/export`. After an intended change, rerun with `UPDATE_GOLDENS=1` and
/// review the diff of the golden files.
@Suite(.serialized, .timeLimit(.minutes(10))) struct GoldenTests {
    static let repoRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
    static let goldens = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Goldens")
    static let healthy = "backup_account_030b2e4ce2de76318c0ef50964d225910b64019d8e43620d6d166b6bd100ad26e8"

    static let cases: [(name: String, arguments: [String])] = [
        ("show.txt", ["show", healthy]),
        ("show.json", ["--format", "json", "show", healthy]),
        ("check.txt", ["check"]),
        ("check.json", ["--format", "json", "check"]),
        ("stats.txt", ["stats"]),
        ("stats.json", ["--format", "json", "stats"]),
        ("lookup-passkey.txt", ["lookup", "passkey", "w6hZIQi3LVcwPvQekJSl_Q"]),
        ("lookup-passkey.json", ["--format", "json", "lookup", "passkey", "w6hZIQi3LVcwPvQekJSl_Q"]),
        // From a finding to its backup: the shortened id `check` prints, a prefix, and the list.
        ("show-prefix.txt", ["show", "backup_account_039797dc…ab5c"]),
        ("check-filtered.txt", ["check", "--check", "oidc_without_passkey", "--limit", "1"]),
        ("check-failing.json", ["--format", "json", "check", "--failing"]),
        ("backups-list.txt", ["backups", "list"]),
        ("backups-list.json", ["--format", "json", "backups", "list"]),
        ("backups-list-warn.csv", ["--format", "csv", "backups", "list", "--health", "warn"]),
        ("backups-list-oidc.yaml", ["--format", "yaml", "backups", "list", "--factor-kind", "oidc", "--limit", "1"]),
        ("backups-list-old.txt", ["backups", "list", "--older-than", "200d", "--factor-kind", "passkey"]),
    ]

    @Test(arguments: cases.map(\.name), CLI.Mode.allCases)
    func renderingMatchesTheGoldenFile(_ name: String, _ mode: CLI.Mode) async throws {
        var cli = CLI(mode: mode)
        defer { cli.cleanUp() }
        _ = try await cli.bootstrap()
        cli.environment["NO_COLOR"] = "1"
        // Times show in UTC with the local time beside them: fix the zone.
        cli.environment["TZ"] = "Europe/Berlin"
        let export = Self.repoRoot.appendingPathComponent("runbooks/fixtures/export").path
        #expect(try await cli.run(["import", export]).status == 0)
        let arguments = try #require(Self.cases.first { $0.name == name }?.arguments)
        let result = try await cli.run(arguments)
        let golden = Self.goldens.appendingPathComponent(name)
        if ProcessInfo.processInfo.environment["UPDATE_GOLDENS"] == "1" {
            try result.stdout.write(to: golden, atomically: true, encoding: .utf8)
        }
        let expected = try String(contentsOf: golden, encoding: .utf8)
        #expect(result.stdout == expected, "\(name) differs from its golden file; UPDATE_GOLDENS=1 rewrites it")
    }
}
