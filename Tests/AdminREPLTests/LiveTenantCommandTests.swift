import Foundation
import Testing

/// The reset and cleanup commands through the real binary, on a sandbox tenant whose Backup
/// Service is the in-process emulator on a loopback port (the same HTTP path as a live tenant).
@Suite(.serialized, .timeLimit(.minutes(10))) struct LiveTenantCommandTests {
    static let backupId = "backup_account_030b2e4ce2de76318c0ef50964d225910b64019d8e43620d6d166b6bd100ad26e8"
    static let subOrg = "7d3e0a52-2f7e-4c1e-9a36-0c4f6f0b8a11"
    static var fixtures: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("runbooks/fixtures")
    }

    func path(_ cli: CLI, _ name: String) -> String { cli.directory.appendingPathComponent(name).path }

    @Test(arguments: CLI.Mode.allCases) func resetWithFilesThenBreakGlassTeardownOnASandboxTenant(_ mode: CLI.Mode)
        async throws
    {
        var cli = CLI(mode: mode)
        defer { cli.cleanUp() }
        _ = try await cli.bootstrap()
        let imported = try await cli.run(["import", Self.fixtures.appendingPathComponent("export").path])
        #expect(imported.status == 0, "\(imported.stderr)")
        // The token goes to a 0600 file, never to stdout or argv.
        let tokenFile = path(cli, "token")
        let begin = try await cli.run(["--format", "json", "reset", "begin", Self.backupId, "--token-out", tokenFile])
        #expect(begin.status == 0, "\(begin.stderr)")
        let begun = try #require(CLI.json(begin.stdout))
        #expect(begun["token"] == nil && begun["tokenFile"] as? String == tokenFile)
        #expect(begun["liveFactors"] as? [String] == ["PASSKEY", "OIDC_ACCOUNT (GOOGLE)"])
        let attributes = try FileManager.default.attributesOfItem(atPath: tokenFile)
        #expect((attributes[.posixPermissions] as? Int) == 0o600)
        // An existing --token-out file is refused before any challenge is issued.
        let again = try await cli.run(["reset", "begin", Self.backupId, "--token-out", tokenFile])
        #expect(again.status == 1 && again.stderr.contains("invalid_output_file"))
        let challenge = try #require(begun["challenge"] as? String)
        let rootKey = Self.fixtures.appendingPathComponent("root-key.json").path
        let sign = try await cli.run([
            "--format", "json", "recovery", "sign", "--challenge", challenge, "--root-key-file", rootKey,
        ])
        let signature = try #require(CLI.json(sign.stdout)?["signature"] as? String)
        let signatureFile = path(cli, "signature")
        try Data((signature + "\n").utf8).write(to: URL(fileURLWithPath: signatureFile))
        // Batch without --yes refuses and changes nothing; with it, the service resets.
        let refused = try await cli.run([
            "reset", "complete", "--token-file", tokenFile, "--signature-file", signatureFile,
        ])
        #expect(refused.status == 64)
        let complete = try await cli.run(
            [
                "--yes", "--format", "json", "reset", "complete", "--token-file", tokenFile, "--signature-file", "-",
            ], stdin: signature + "\n")
        #expect(complete.status == 0, "\(complete.stderr)")
        let done = try #require(CLI.json(complete.stdout))
        #expect(done["wiped"] as? Bool == true && done["turnkeySubOrgIds"] as? [String] == [Self.subOrg])
        #expect(done["lookupRowsRemoved"] as? Int == 3)
        // Replaying the token: the service says not_found (exit 1), audited as a refusal.
        let replay = try await cli.run([
            "--yes", "--format", "json", "reset", "complete", "--token-file", tokenFile, "--signature-file",
            signatureFile,
        ])
        #expect(replay.status == 1 && replay.stderr.contains("\"not_found\""))
        // The sub-org is queued (reset: no snapshot needed); the user's break-glass key deletes it.
        let status = try await cli.run(["--format", "json", "cleanup", "status", "--reason", "reset"])
        #expect(status.stdout.contains(Self.subOrg))
        let body = path(cli, "body.json")
        let request = try await cli.run(["cleanup", "teardown-request", Self.subOrg, "--out", body])
        #expect(request.status == 0, "\(request.stderr)")
        let stamp = try await cli.run([
            "--format", "json", "recovery", "stamp", "--body-file", body, "--root-key-file", rootKey,
        ])
        let stampValue = try #require(CLI.json(stamp.stdout)?["stamp"] as? String)
        // Destructive: refused in batch without --yes. With it, on the tenant's grace the stamped
        // request waits in the journal; --grace 0 (the user is here, the reset is final) sends it.
        let unconfirmed = try await cli.run([
            "--format", "json", "cleanup", "submit", "--body-file", body, "--stamp", stampValue,
        ])
        #expect(unconfirmed.status == 64 && unconfirmed.stderr.contains("--yes"), "\(unconfirmed.stderr)")
        let waiting = try await cli.run([
            "--yes", "--format", "json", "cleanup", "submit", "--body-file", body, "--stamp", stampValue,
        ])
        #expect(waiting.status == 0 && waiting.stdout.contains("waiting for grace"), "\(waiting.stdout)")
        let submit = try await cli.run([
            "--yes", "--format", "json", "cleanup", "submit", "--body-file", body, "--stamp", stampValue, "--grace",
            "0",
        ])
        #expect(submit.status == 0, "\(submit.stderr)")
        #expect(submit.stdout.contains("deleted"))
        let audit = try await cli.run(["--format", "json", "audit", "list", "--limit", "50"])
        #expect(audit.stdout.contains("reset.complete") && audit.stdout.contains("reset.refused"))
        let secret = try String(contentsOfFile: tokenFile, encoding: .utf8).trimmingCharacters(
            in: .whitespacesAndNewlines)
        #expect(
            !audit.stdout.contains(secret) && !complete.stdout.contains(secret) && !complete.stderr.contains(secret))
    }

    @Test(arguments: CLI.Mode.allCases) func tenantBackupServiceURLIsCheckedBeforeItIsSaved(_ mode: CLI.Mode)
        async throws
    {
        var cli = CLI(mode: mode)
        defer { cli.cleanUp() }
        _ = try await cli.bootstrap()
        // A sandbox tenant always uses the emulator.
        let sandbox = try await cli.run([
            "tenant", "update", "sandbox", "--backup-service-url", "https://example.invalid",
        ])
        #expect(sandbox.status == 1 && sandbox.stderr.contains("invalid_tenant_kind"))
        let bad = try await cli.run(["tenant", "create", "x", "--sandbox", "--backup-service-url", "ftp://nope"])
        #expect(bad.status == 64)
        // The URL is looked at only after the tenant's kind (the rules themselves:
        // TenantBoundaryAttackTests, OutboundTargetTests).
        let plain = try await cli.run(["tenant", "update", "sandbox", "--backup-service-url", "http://10.0.0.1"])
        #expect(plain.status == 1 && plain.stderr.contains("invalid_tenant_kind"))
    }
}

/// Destructive prompts say what they will do: `cleanup run --execute` on a terminal shows the
/// plan (how many, which) before it asks for the tenant name, and deletes no more than that.
@Suite(.serialized, .timeLimit(.minutes(10))) struct CleanupPlanPromptTests {
    @Test(arguments: CLI.Mode.allCases) func executeShowsThePlanThenAsksThenApplies(_ mode: CLI.Mode) async throws {
        var cli = CLI(mode: mode)
        defer { cli.cleanUp() }
        // Server mode: the server logs every connection it closes, which a failure shows.
        cli.environment["BACKUPCTL_LOG_LEVEL"] = "info"
        _ = try await cli.bootstrap()
        #expect(try await cli.run(["seed", "--backups", "5", "--orphans", "3", "--seed", "4"]).status == 0)
        let pty = try PTY(
            arguments: ["cleanup", "run", "--execute", "--grace", "0"],
            environment: cli.environment.merging(["TERM": "xterm"]) { $1 })
        #expect(await pty.expect("Plan: delete 3 Turnkey sub-org(s) of sandbox"), "\(pty.transcript)")
        #expect(await pty.expect("Type the tenant name (sandbox) to confirm"))
        pty.send("sandbox\r")
        #expect(await pty.expect("deleted 3"), "\(pty.transcript)\nserver: \(cli.server?.stderr ?? "-")")
        try #require(await pty.waitForExit())
        #expect(pty.status == 0)
        // Nothing eligible now: it says so and asks nothing.
        let again = try PTY(
            arguments: ["cleanup", "run", "--execute", "--grace", "0"],
            environment: cli.environment.merging(["TERM": "xterm"]) { $1 })
        #expect(await again.expect("Nothing to delete"), "\(again.transcript)")
        #expect(await again.waitForExit())
        #expect(!again.transcript.contains("Type the tenant name"))
    }
}

/// Snapshots through `import`: a refused backup makes a "complete" export partial, so its
/// sub-orgs can never look orphaned; a complete one retires what it no longer holds.
@Suite(.serialized, .timeLimit(.minutes(10))) struct SnapshotImportTests {
    static var fixtures: URL { LiveTenantCommandTests.fixtures }

    func export(_ cli: CLI, _ name: String) throws -> URL {
        let dir = cli.directory.appendingPathComponent(name)
        try FileManager.default.copyItem(at: Self.fixtures.appendingPathComponent("export"), to: dir)
        return dir
    }

    @Test(arguments: CLI.Mode.allCases) func aRefusedBackupMakesACompleteSnapshotPartial(_ mode: CLI.Mode) async throws
    {
        var cli = CLI(mode: mode)
        defer { cli.cleanUp() }
        _ = try await cli.bootstrap()
        let dir = try export(cli, "bad-export")
        // One backup's metadata is not JSON: refused, so the export is not the whole deployment.
        try Data("{not json".utf8).write(
            to: dir.appendingPathComponent(
                "backup_account_039797dc9fec4e3d3f2f27173ba0faac160ee2f803954e8552c308da22ab40ab5c/metadata"))
        let result = try await cli.run([
            "--format", "json", "import", dir.path, "--snapshot-at", "2026-11-01T00:00:00Z", "--complete",
        ])
        #expect(result.status == 1)
        let report = try #require(CLI.json(result.stdout))
        #expect(report["complete"] as? Bool == false && report["failed"] as? Int == 1)
        #expect((report["retired"] as? [String])?.isEmpty == true)
    }

    @Test(arguments: CLI.Mode.allCases) func aCompleteSnapshotRetiresWhatItNoLongerHolds(_ mode: CLI.Mode) async throws
    {
        var cli = CLI(mode: mode)
        defer { cli.cleanUp() }
        _ = try await cli.bootstrap()
        #expect(try await cli.run(["import", Self.fixtures.appendingPathComponent("export").path]).status == 0)
        let dir = try export(cli, "smaller")
        let gone = "backup_account_039797dc9fec4e3d3f2f27173ba0faac160ee2f803954e8552c308da22ab40ab5c"
        try FileManager.default.removeItem(at: dir.appendingPathComponent(gone))
        // Copied after the first import wrote every backup (a copy of the same second or older
        // proves nothing about them): two seconds on, within the clock skew allowed.
        let copied = ISO8601DateFormatter().string(from: Date().addingTimeInterval(2))
        try Data(#"{"snapshotAt": "\#(copied)", "complete": true}"#.utf8).write(
            to: dir.appendingPathComponent("export.json"))
        let dry = try await cli.run(["--format", "json", "import", dir.path, "--dry-run"])
        #expect((CLI.json(dry.stdout)?["retired"] as? [String]) == [gone])
        #expect(try await cli.run(["show", gone]).status == 0)
        let real = try await cli.run(["--format", "json", "import", dir.path])
        #expect(real.status == 0, "\(real.stderr)")
        #expect((CLI.json(real.stdout)?["retired"] as? [String]) == [gone])
        #expect(try await cli.run(["show", gone]).status == 1)
        let audit = try await cli.run(["--format", "json", "audit", "list", "--limit", "10"])
        #expect(audit.stdout.contains("import.retire") && audit.stdout.contains("import.snapshot"))
        // A bad export.json changes nothing.
        try Data(#"{"snapshotAt": "tomorrow", "complete": true}"#.utf8).write(
            to: dir.appendingPathComponent("export.json"))
        let bad = try await cli.run(["import", dir.path])
        #expect(bad.status == 1 && bad.stderr.contains("invalid_snapshot_time"))
    }
}
