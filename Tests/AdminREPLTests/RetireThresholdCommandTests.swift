import Foundation
import Testing

/// `tenant update NAME --retire-max-percent P --retire-max-count N` in every mode: checked before
/// anything changes, audited as `tenant.update`, shown by `tenant list`, and what a complete
/// snapshot is then allowed to retire.
@Suite(.serialized, .timeLimit(.minutes(10))) struct RetireThresholdCommandTests {
    static let gone = "backup_account_039797dc9fec4e3d3f2f27173ba0faac160ee2f803954e8552c308da22ab40ab5c"

    /// The sandbox tenant's row of `tenant list --format json`.
    func row(_ cli: CLI) async throws -> [String: Any] {
        let listed = try await cli.run(["--format", "json", "tenant", "list"])
        let rows = try #require(CLI.json(listed.stdout)?["tenants"] as? [[String: Any]], "\(listed.stderr)")
        return try #require(rows.first { $0["name"] as? String == "sandbox" })
    }

    func threshold(_ cli: CLI) async throws -> [Int] {
        let row = try await row(cli)
        return [row["retireMaxPercent"] as? Int ?? -1, row["retireMaxCount"] as? Int ?? -1]
    }

    @Test(arguments: CLI.Mode.allCases) func operatorsSetTheThresholdASnapshotIsHeldTo(_ mode: CLI.Mode) async throws {
        var cli = CLI(mode: mode)
        defer { cli.cleanUp() }
        _ = try await cli.bootstrap()
        #expect(try await threshold(cli) == [1, 100])
        let fixture = LiveTenantCommandTests.fixtures.appendingPathComponent("export")
        #expect(try await cli.run(["import", fixture.path]).status == 0)

        // Bad input: one line naming what was wrong, and nothing changes (nor is audited).
        for (arguments, status, code) in [
            (["--retire-max-percent", "101"], Int32(1), "invalid_retire_threshold"),
            (["--retire-max-count", "1000000001"], 1, "invalid_retire_threshold"),
            (["--retire-max-percent", "5", "--clear-backup-service-url"], 64, "usage"),
            (["--retire-max-percent", "ten"], 64, "retire-max-percent"),
        ] {
            let bad = try await cli.run(["tenant", "update", "sandbox"] + arguments)
            #expect(bad.status == status, "\(arguments): \(bad.stderr)")
            #expect(bad.stderr.contains(code) && bad.stdout.isEmpty, "\(arguments): \(bad.stderr)")
        }
        let viewer = try #require(
            CLI.json(
                try await cli.run([
                    "--format", "json", "operator", "add", "vera", "--tenant", "sandbox", "--role", "viewer",
                ]).stdout)?["token"] as? String)
        let denied = try await cli.run(
            ["tenant", "update", "sandbox", "--retire-max-count", "0"], extraEnvironment: ["BACKUPCTL_TOKEN": viewer])
        #expect(denied.status == 77, "\(denied.stderr)")
        #expect(try await threshold(cli) == [1, 100])
        let audited = try await cli.run(["--format", "json", "audit", "list", "--action", "tenant.update"])
        #expect((CLI.json(audited.stdout)?["entries"] as? [Any])?.isEmpty == true, "\(audited.stdout)")

        // No retirement without confirmation: a snapshot leaving one backup out is refused.
        let set = try await cli.run(["--format", "json", "tenant", "update", "sandbox", "--retire-max-count", "0"])
        #expect(set.status == 0, "\(set.stderr)")
        let output = try #require(CLI.json(set.stdout))
        #expect(output["retireMaxPercent"] as? Int == 1 && output["retireMaxCount"] as? Int == 0)
        #expect(try await threshold(cli) == [1, 0])
        let smaller = cli.directory.appendingPathComponent("smaller")
        try FileManager.default.copyItem(at: fixture, to: smaller)
        try FileManager.default.removeItem(at: smaller.appendingPathComponent(Self.gone))
        let copied = ISO8601DateFormatter().string(from: Date().addingTimeInterval(2))
        try Data(#"{"snapshotAt": "\#(copied)", "complete": true}"#.utf8).write(
            to: smaller.appendingPathComponent("export.json"))
        let refused = try await cli.run(["import", smaller.path])
        #expect(refused.status == 1 && refused.stderr.contains("retire_threshold_exceeded"), "\(refused.stderr)")
        #expect(refused.stderr.contains("retire 1 of the 2 backups") && refused.stderr.contains("allowance of 0"))
        #expect(try await cli.run(["show", Self.gone]).status == 0)

        // Half of them, at most ten: the same snapshot retires its one backup.
        let raised = try await cli.run([
            "tenant", "update", "sandbox", "--retire-max-percent", "50", "--retire-max-count", "10",
        ])
        #expect(raised.status == 0 && raised.stdout.contains("50%"), "\(raised.stderr)")
        #expect(try await threshold(cli) == [50, 10])
        let imported = try await cli.run(["--format", "json", "import", smaller.path])
        #expect(imported.status == 0, "\(imported.stderr)")
        #expect(CLI.json(imported.stdout)?["retired"] as? [String] == [Self.gone])

        // Shown in every format, and audited with what was set.
        let table = try await cli.run(["tenant", "list"])
        #expect(table.stdout.contains("RETIRE AT MOST") && table.stdout.contains("50% ≤ 10"), "\(table.stdout)")
        let csv = try await cli.run(["--format", "csv", "tenant", "list"])
        #expect(csv.lines.first?.hasSuffix("retireMaxPercent,retireMaxCount") == true, "\(csv.stdout)")
        #expect(csv.lines.contains { $0.hasPrefix("sandbox,") && $0.hasSuffix(",50,10") }, "\(csv.stdout)")
        let entries = try #require(
            CLI.json(try await cli.run(["--format", "json", "audit", "list", "--action", "tenant.update"]).stdout)?[
                "entries"] as? [[String: Any]])
        // Over a server each entry also names its request (`requestId`): not what was set.
        let details = entries.compactMap { ($0["details"] as? [String: String])?.filter { $0.key != "requestId" } }
        #expect(details == [["retireMaxCount": "0"], ["retireMaxPercent": "50", "retireMaxCount": "10"]])
        #expect(entries.allSatisfy { $0["target"] as? String == "sandbox" && $0["operatorName"] as? String == "root" })
    }
}
