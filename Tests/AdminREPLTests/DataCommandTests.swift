import Foundation
import Testing

/// `import`, `seed` and `demo` through the real binary.
@Suite(.timeLimit(.minutes(10))) struct DataCommandTests {
    static let metadata = """
        {"id":"backup_account_039797dc9fec4e3d3f2f27173ba0faac160ee2f803954e8552c308da22ab40ab5c",
         "manifestHash":"\(String(repeating: "ab", count: 32))",
         "factors":[{"id":"f1","createdAt":"2026-05-01T10:00:00Z",
           "kind":{"kind":"PASSKEY","label":"iCloud Keychain","credentialId":"AQIDBAUGBwgJCgsMDQ4PEA"}}],
         "syncFactors":[],
         "keys":[{"kind":"PRF","encryptedKey":"00ff"}]}
        """

    func export(in cli: CLI) throws -> URL {
        let root = cli.directory.appendingPathComponent("export")
        let backup = root.appendingPathComponent(
            "backup_account_039797dc9fec4e3d3f2f27173ba0faac160ee2f803954e8552c308da22ab40ab5c")
        try FileManager.default.createDirectory(at: backup, withIntermediateDirectories: true)
        try Self.metadata.write(to: backup.appendingPathComponent("metadata"), atomically: true, encoding: .utf8)
        try Data(repeating: 7, count: 1000).write(to: backup.appendingPathComponent("backup"))
        let broken = root.appendingPathComponent("backup_account_broken")
        try FileManager.default.createDirectory(at: broken, withIntermediateDirectories: true)
        try "{not json".write(to: broken.appendingPathComponent("metadata"), atomically: true, encoding: .utf8)
        return root
    }

    @Test(arguments: CLI.Mode.allCases) func importReportsBadFilesAndIsIdempotent(_ mode: CLI.Mode) async throws {
        var cli = CLI(mode: mode)
        defer { cli.cleanUp() }
        _ = try await cli.bootstrap()
        let root = try export(in: cli)
        // One backup is refused, so the exit is 1 while the good one is (or would be) imported.
        let dry = try await cli.run(["--format", "json", "import", root.path, "--dry-run"])
        #expect(dry.status == 1)
        #expect(dry.stderr.contains("\"import_rejected\""))
        let dryReport = CLI.json(dry.stdout)
        #expect(dryReport?["dryRun"] as? Bool == true)
        #expect(dryReport?["imported"] as? Int == 1)
        let first = CLI.json(try await cli.run(["--format", "json", "import", root.path]).stdout)
        #expect(first?["imported"] as? Int == 1)
        #expect(first?["failed"] as? Int == 1)
        let problems = first?["problems"] as? [[String: Any]]
        #expect((problems?.first?["path"] as? String)?.hasPrefix("backup_account_broken") == true)
        let second = CLI.json(try await cli.run(["--format", "json", "import", root.path]).stdout)
        #expect(second?["imported"] as? Int == 0)
        #expect(second?["unchanged"] as? Int == 1)
        let table = try await cli.run(["import", root.path])
        #expect(table.stdout.contains("Problems"))
        #expect(try await cli.run(["import", cli.directory.appendingPathComponent("missing").path]).status == 1)
    }

    @Test(arguments: CLI.Mode.allCases) func seedIsForSandboxesOnlyAndDeterministic(_ mode: CLI.Mode) async throws {
        var cli = CLI(mode: mode)
        defer { cli.cleanUp() }
        _ = try await cli.bootstrap()
        let seeded = CLI.json(
            try await cli.run(["--format", "json", "seed", "--backups", "40", "--orphans", "5", "--seed", "3"]).stdout)
        #expect(seeded?["backups"] as? Int == 40)
        #expect(seeded?["orphanSubOrgs"] as? Int == 5)
        #expect(try await cli.run(["seed", "--backups=-1"]).status == 1)
        #expect(try await cli.run(["seed"]).status == 64)
    }

    @Test func demoSeedsOnceAndPrintsHowToConnect() async throws {
        let cli = CLI()
        defer { cli.cleanUp() }
        let first = try await cli.run(["--format", "json", "demo", "--backups", "30", "--orphans", "3"])
        #expect(first.status == 0, "\(first.stderr)")
        let report = CLI.json(first.stdout)
        let seeded = report?["seeded"] as? [String: Any]
        #expect(seeded?["backups"] as? Int == 30)
        let tokenFile = try #require(report?["tokenFile"] as? String)
        let attributes = try FileManager.default.attributesOfItem(atPath: tokenFile)
        #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o600)
        let again = CLI.json(try await cli.run(["--format", "json", "demo"]).stdout)
        #expect(again?["seeded"] == nil)
        let db = try #require(report?["db"] as? String)
        let whoami = try await cli.run(["--db", db, "--token-file", tokenFile, "whoami"])
        #expect(whoami.stdout.contains("demo"))
    }

    /// `sandbox simulate --tenant T` lands a world in an empty sandbox tenant where the console
    /// runs (the server's store in server mode), `check --turnkey` reads it there, and a second
    /// world is refused.
    @Test(arguments: CLI.Mode.allCases) func simulateLandsAWorldInAnEmptySandboxTenant(_ mode: CLI.Mode) async throws {
        var cli = CLI(mode: mode)
        defer { cli.cleanUp() }
        _ = try await cli.bootstrap()
        await #expect(try cli.run(["tenant", "create", "simbox", "--sandbox"]).status == 0)
        let out = cli.directory.appendingPathComponent("month").path
        let words = [
            "--format", "json", "sandbox", "simulate", "--tenant", "simbox", "--users", "30", "--days", "10",
            "--seed", "5", "--out",
        ]
        let result = try await cli.run(words + [out])
        #expect(result.status == 0, "\(result.stderr)")
        let report = try #require(CLI.json(result.stdout))
        #expect(report["tenant"] as? String == "simbox" && report["mode"] as? String == "sandbox-tenant")
        #expect(FileManager.default.fileExists(atPath: out + "/ground-truth.json"))
        let check = try await cli.run(["--tenant", "simbox", "--format", "json", "check", "--turnkey"])
        #expect(check.status == 0 || check.status == 1, "\(check.stderr)")
        let found = try #require(CLI.json(check.stdout))
        #expect(found["backups"] as? Int == report["backups"] as? Int)
        let live = (found["findings"] as? [[String: Any]] ?? []).filter {
            ($0["check"] as? String)?.hasPrefix("turnkey_") == true
        }
        #expect(live.count == report["turnkeyFindings"] as? Int)
        let again = try await cli.run(words + [out + "-again"])
        #expect(again.status != 0 && again.stderr.contains("tenant_not_empty"), "\(again.stderr)")
    }
}
