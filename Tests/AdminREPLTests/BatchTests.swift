import Foundation
import Testing

@testable import AdminREPL

/// The command contract of DESIGN.md §2 through the real binary: batch modes, JSON lines,
/// errors on stderr, exit codes, stop-on-error.
@Suite(.timeLimit(.minutes(10))) struct BatchTests {
    @Test func initPrintsTheTokenOnceAndRefusesTwice() async throws {
        var cli = CLI()
        defer { cli.cleanUp() }
        let token = try await cli.bootstrap()
        #expect(token.hasPrefix("bctl_"))
        let again = try await cli.run(["--format", "json", "init", "--admin", "other"])
        #expect(again.status == 1)
        #expect(again.stdout.isEmpty)
        let error = CLI.json(again.stderr.trimmingCharacters(in: .newlines))?["error"] as? [String: String]
        #expect(error?["code"] == "already_initialized")
        #expect(!again.stderr.contains(token))
    }

    @Test(arguments: CLI.Mode.allCases) func jsonModePrintsOneLinePerCommand(_ mode: CLI.Mode) async throws {
        var cli = CLI(mode: mode)
        defer { cli.cleanUp() }
        _ = try await cli.bootstrap()
        let result = try await cli.run(["--format", "json", "-c", "whoami", "-c", "tenant list", "-c", "audit verify"])
        #expect(result.status == 0)
        #expect(result.lines.count == 3)
        for line in result.lines { #expect(CLI.json(line) != nil) }
        #expect(CLI.json(result.lines[0])?["operator"] as? String == "root")
        #expect(CLI.json(result.lines[2])?["ok"] as? Bool == true)
    }

    @Test(arguments: CLI.Mode.allCases) func theSameCommandsRunFromEveryEntry(_ mode: CLI.Mode) async throws {
        var cli = CLI(mode: mode)
        defer { cli.cleanUp() }
        _ = try await cli.bootstrap()
        let script = cli.directory.appendingPathComponent("script.txt")
        try "# a comment\n\nwhoami\ntenant list\n".write(to: script, atomically: true, encoding: .utf8)
        let direct = try await cli.run(["--format", "json", "whoami"])
        let dashC = try await cli.run(["--format", "json", "-c", "whoami"])
        let file = try await cli.run(["--format", "json", "-f", script.path])
        let dashF = try await cli.run(["--format", "json", "-f", "-"], stdin: "whoami\ntenant list\n")
        let piped = try await cli.run(["--format", "json"], stdin: "# comment\nwhoami\n\ntenant list\n")
        // A script saved with Windows line ends reads the same.
        let windows = cli.directory.appendingPathComponent("windows.txt")
        try "# a comment\r\n\r\nwhoami\r\ntenant list\r\n".write(to: windows, atomically: true, encoding: .utf8)
        let crlf = try await cli.run(["--format", "json", "-f", windows.path])
        #expect(direct.lines == dashC.lines)
        #expect(file.lines.count == 2 && file.lines == piped.lines && file.lines == dashF.lines)
        #expect(crlf.lines == file.lines, "\(crlf.stderr)")
        #expect(file.lines.first == direct.lines.first)
    }

    @Test(arguments: CLI.Mode.allCases) func pipedStdinHasNoPromptOrEcho(_ mode: CLI.Mode) async throws {
        var cli = CLI(mode: mode)
        defer { cli.cleanUp() }
        _ = try await cli.bootstrap()
        let result = try await cli.run([], stdin: "whoami\n")
        #expect(result.status == 0)
        #expect(!result.stdout.contains("> "))
        #expect(!result.stdout.contains("whoami"))
        #expect(result.stdout.contains("operator:"))
    }

    @Test(arguments: CLI.Mode.allCases) func batchStopsAtTheFirstFailureWithItsCode(_ mode: CLI.Mode) async throws {
        var cli = CLI(mode: mode)
        defer { cli.cleanUp() }
        _ = try await cli.bootstrap()
        let result = try await cli.run(["--format", "json", "-c", "whoami", "-c", "use nowhere", "-c", "tenant list"])
        #expect(result.status == 77)
        // One stdout line per command run: whoami's result, then the error in its place.
        #expect(result.lines.count == 2)
        let error = CLI.json(result.stderr.trimmingCharacters(in: .newlines))?["error"] as? [String: String]
        #expect(error?["code"] == "permission_denied")

        let going = try await cli.run([
            "--continue-on-error", "--format", "json", "-c", "use nowhere", "-c", "tenant list",
        ])
        #expect(going.status == 77)
        #expect(going.lines.count == 2)
        #expect(CLI.json(going.lines.first ?? "")?["line"] as? Int == 1)

        // A line that does not parse (a bad option value too) stops the script before anything
        // runs, with 64 (usage), whatever the value's own code.
        let unparsed = try await cli.run([
            "--format", "json", "-c", "tenant update sandbox --retire-max-percent 7", "-c", "cleanup run --grace 5x",
        ])
        #expect(unparsed.status == 64 && unparsed.stdout.isEmpty, "\(unparsed.stderr)")
        #expect(unparsed.stderr.contains("Nothing in the script was run"), "\(unparsed.stderr)")
        let tenants = try await cli.run(["--format", "json", "tenant", "list"])
        #expect(!tenants.stdout.contains(#""retireMaxPercent":7"#), "\(tenants.stdout)")
    }

    @Test(arguments: [
        (["frobnicate"], Int32(64)),
        (["operator", "add"], Int32(64)),
        (["tenant", "create", "Bad Name", "--sandbox"], Int32(1)),
        (["operator", "add", "x", "--tenant", "sandbox", "--role", "emperor"], Int32(1)),
        (["use", "elsewhere"], Int32(77)),
        (["audit", "list", "--limit", "0"], Int32(1)),
    ])
    func badInputGetsOneLineAndTheRightCode(_ arguments: [String], _ status: Int32) async throws {
        var cli = CLI()
        defer { cli.cleanUp() }
        _ = try await cli.bootstrap()
        let before = try await cli.run(["--format", "json", "audit", "verify"])
        let result = try await cli.run(arguments)
        #expect(result.status == status)
        #expect(result.stdout.isEmpty)
        #expect(result.stderr.split(separator: "\n").count == 1)
        #expect(result.stderr.hasPrefix("error["))
        let after = try await cli.run(["--format", "json", "audit", "verify"])
        // Bad input changes nothing; a refusal (exit 77) is the one audited entry it may add.
        let (was, now) = (CLI.json(before.stdout)?["entries"] as? Int ?? -1, CLI.json(after.stdout)?["entries"] as? Int)
        #expect(now == was + (status == 77 ? 1 : 0), "bad input must change nothing")

    }

    /// The parser reads `-1` as an option, and would say the value is missing: the error names
    /// the value given instead. A value that is really missing is still said to be.
    @Test func aNegativeNumberIsNamedNotTakenForAMissingValue() async throws {
        var cli = CLI()
        defer { cli.cleanUp() }
        _ = try await cli.bootstrap()
        for (arguments, shown) in [
            (["audit", "list", "--limit", "-1"], "Invalid value '-1' for '--limit <limit>': it cannot be negative."),
            (["cleanup", "scan", "--grace", "-5"], "Invalid value '-5' for '--grace <grace>': it cannot be negative."),
            (
                ["import", cli.directory.path, "--retire-at-most", "-2"],
                "Invalid value '-2' for '--retire-at-most <n>': it cannot be negative."
            ),
        ] {
            let result = try await cli.run(arguments)
            #expect(result.status == 64 && result.stderr == "error[usage]: \(shown)\n", "\(result.stderr)")
        }
        let missing = try await cli.run(["audit", "list", "--limit", "--format", "json"])
        #expect(missing.status == 64 && missing.stderr.contains("Missing value for '--limit"), "\(missing.stderr)")
        let notANumber = Executor.negativeValue("Missing value for '--limit <limit>'", words: ["--limit", "-x"])
        #expect(notANumber == nil)
        #expect(Executor.negativeValue("Missing value for '--limit <limit>'", words: ["--limit", "-."]) == nil)
        #expect(
            Executor.negativeValue("Missing value for '--max <max>'", words: ["cleanup", "run", "--max", "-2.5"])
                == "Invalid value '-2.5' for '--max <max>': it cannot be negative.")
    }

    @Test(arguments: CLI.Mode.allCases) func missingOrWrongTokenIsPermissionDenied(_ mode: CLI.Mode) async throws {
        var cli = CLI(mode: mode)
        defer { cli.cleanUp() }
        _ = try await cli.bootstrap()
        cli.environment["BACKUPCTL_TOKEN"] = nil
        #expect(try await cli.run(["whoami"]).status == 77)
        cli.environment["BACKUPCTL_TOKEN"] = "bctl_" + String(repeating: "A", count: 43)
        let wrong = try await cli.run(["whoami"])
        #expect(wrong.status == 77)
        #expect(wrong.stderr.contains("not known"))
    }

    @Test(arguments: CLI.Mode.allCases) func tokenFileIsRead(_ mode: CLI.Mode) async throws {
        var cli = CLI(mode: mode)
        defer { cli.cleanUp() }
        let token = try await cli.bootstrap()
        cli.environment["BACKUPCTL_TOKEN"] = nil
        let file = cli.directory.appendingPathComponent("token")
        try (token + "\n").write(to: file, atomically: true, encoding: .utf8)
        // Others may read it: refused (exit 78), the path not repeated, nothing sent.
        chmod(file.path, 0o644)
        let open = try await cli.run(["--token-file", file.path, "--format", "json", "whoami"])
        #expect(open.status == 78 && open.stderr.contains("insecure_token_file"), "\(open.stderr)")
        chmod(file.path, 0o600)
        let result = try await cli.run(["--token-file", file.path, "--format", "json", "whoami"])
        #expect(result.status == 0)
        #expect(!result.stdout.contains(token))
    }

    @Test(arguments: CLI.Mode.allCases) func operatorLifecycleAndRoles(_ mode: CLI.Mode) async throws {
        var cli = CLI(mode: mode)
        defer { cli.cleanUp() }
        _ = try await cli.bootstrap()
        let added = try await cli.run([
            "--format", "json", "operator", "add", "vic", "--tenant", "sandbox", "--role", "viewer",
        ])
        #expect(added.status == 0)
        let vicToken = CLI.json(added.stdout)?["token"] as? String ?? ""
        // The viewer cannot manage operators: 77, and nothing changes.
        let denied = try await cli.run(
            ["operator", "grant", "vic", "--tenant", "sandbox", "--role", "admin"],
            extraEnvironment: ["BACKUPCTL_TOKEN": vicToken])
        #expect(denied.status == 77)
        let list = try await cli.run(["--format", "json", "operator", "list"])
        #expect(list.stdout.contains(#""operator":"vic","role":"viewer""#))
        #expect(try await cli.run(["operator", "revoke", "vic", "--tenant", "sandbox"]).status == 0)
        #expect(
            try await cli.run(["whoami"], extraEnvironment: ["BACKUPCTL_TOKEN": vicToken]).stdout.contains(
                "none selected"))
    }

    @Test(arguments: CLI.Mode.allCases) func tenantsAndUse(_ mode: CLI.Mode) async throws {
        var cli = CLI(mode: mode)
        defer { cli.cleanUp() }
        _ = try await cli.bootstrap()
        #expect(try await cli.run(["tenant", "create", "staging", "--sandbox"]).status == 0)
        let both = try await cli.run(["--format", "json", "-c", "use staging", "-c", "whoami"])
        #expect(CLI.json(both.lines.last ?? "")?["tenant"] as? String == "staging")
        // With two tenants and none chosen, commands about an operator (not a tenant) still run:
        // in a tenant where root may act on that operator, as the README's examples are written.
        #expect(try await cli.run(["operator", "add", "ivy", "--tenant", "staging", "--role", "viewer"]).status == 0)
        let rotated = try await cli.run(["--format", "json", "operator", "token", "rotate", "ivy"])
        #expect(rotated.status == 0 && rotated.stdout.contains(#""operator":"ivy""#), "\(rotated.stderr)")
        let removed = try await cli.run(["--yes", "operator", "remove", "ivy"])
        #expect(removed.status == 0, "\(removed.stderr)")
        // A tenant command still needs the choice.
        #expect(try await cli.run(["stats"]).status == 64)
        // Live tenant flags are validated before anything is saved.
        let keyFile = cli.directory.appendingPathComponent("api.key")
        try "k".write(to: keyFile, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: keyFile.path)
        let insecure = try await cli.run([
            "tenant", "create", "prod", "--turnkey-url", "https://api.turnkey.com", "--turnkey-org",
            "5f1c2a4e-0000-4000-8000-000000000000", "--turnkey-api-key-file", keyFile.path,
        ])
        #expect(insecure.status == 1)
        #expect(insecure.stderr.contains("chmod 600"))
        #expect(try await cli.run(["--format", "json", "tenant", "list"]).stdout.contains("prod") == false)
    }

    @Test func helpComesFromTheSameTree() async throws {
        let cli = CLI()
        defer { cli.cleanUp() }
        let help = try await cli.run(["help"])
        #expect(help.status == 0 && help.stdout.contains("COMMANDS") && help.stdout.contains("GLOBAL OPTIONS"))
        let sub = try await cli.run(["help", "operator", "add"])
        #expect(sub.stdout.contains("--role"))
        #expect(try await cli.run(["help", "nope"]).status == 64)
        #expect(try await cli.run(["--version"]).stdout.contains("0."))
    }
}

@Suite(.timeLimit(.minutes(10))) struct StdinSecretTests {
    @Test func aScriptOnStdinCannotAlsoCarryTheRootKey() async throws {
        let cli = CLI()
        defer { cli.cleanUp() }
        let piped = try await cli.run(
            [], stdin: "recovery derive\n{\"version\":\"V1\",\"key\":\"\(String(repeating: "11", count: 32))\"}\n")
        #expect(piped.status == 64)
        #expect(piped.stderr.contains("--root-key-file"))
        #expect(!piped.stderr.contains("1111111111"))
        // Given as the command itself, stdin is free to carry the key.
        let direct = try await cli.run(
            ["--format", "json", "recovery", "derive"],
            stdin: "{\"version\":\"V1\",\"key\":\"\(String(repeating: "11", count: 32))\"}")
        #expect(direct.status == 0)
        #expect(
            direct.stdout.contains("backup_account_039797dc9fec4e3d3f2f27173ba0faac160ee2f803954e8552c308da22ab40ab5c"))
    }
}

@Suite(.timeLimit(.minutes(10))) struct ContractDetailTests {
    @Test(arguments: CLI.Mode.allCases) func auditVerifyReportsABrokenChainOnStdoutAndFails(_ mode: CLI.Mode)
        async throws
    {
        var cli = CLI(mode: mode)
        defer { cli.cleanUp() }
        _ = try await cli.bootstrap()
        let ok = try await cli.run(["--format", "json", "audit", "verify"])
        #expect(ok.status == 0)
        #expect(ok.stdout.contains(#""firstBadSeq":null"#) && ok.stdout.contains(#""ok":true"#))
    }

    @Test(arguments: CLI.Mode.allCases) func aRequestedTenantWithoutARoleIsAnError(_ mode: CLI.Mode) async throws {
        var cli = CLI(mode: mode)
        defer { cli.cleanUp() }
        _ = try await cli.bootstrap()
        let result = try await cli.run(["--tenant", "prod", "whoami"])
        #expect(result.status == 77)
        #expect(result.stderr.contains("no role in tenant prod"))
    }

    @Test(arguments: CLI.Mode.allCases) func permissionErrorsNameTheCommand(_ mode: CLI.Mode) async throws {
        var cli = CLI(mode: mode)
        defer { cli.cleanUp() }
        _ = try await cli.bootstrap()
        let added = try await cli.run([
            "--format", "json", "operator", "add", "vic", "--tenant", "sandbox", "--role", "viewer",
        ])
        let token = CLI.json(added.stdout)?["token"] as? String ?? ""
        let denied = try await cli.run(["audit", "list"], extraEnvironment: ["BACKUPCTL_TOKEN": token])
        #expect(denied.status == 77)
        #expect(denied.stderr.contains("`audit list` needs admin"))
    }

    @Test(arguments: CLI.Mode.allCases) func tenantCreateJSONUsesABoolean(_ mode: CLI.Mode) async throws {
        var cli = CLI(mode: mode)
        defer { cli.cleanUp() }
        _ = try await cli.bootstrap()
        let created = try await cli.run(["--format", "json", "tenant", "create", "qa", "--sandbox"])
        #expect(created.stdout.contains(#""sandbox":true"#))
    }
}
