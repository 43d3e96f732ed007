import BackupctlTestSupport
import ConsoleService
import Foundation
import Testing

@testable import AdminREPL

/// Issue 14: help, options after the command, `set format`, completion, `demo` inside a
/// session, and "did you mean".
@Suite(.serialized, .timeLimit(.minutes(10))) struct OperatorExperienceTests {
    static let repoRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    // MARK: help (item 3)

    @Test(arguments: [["--help"], ["-h"], ["help"]])
    func topLevelHelpExitsZeroWithGlobalOptionsAndExamples(_ arguments: [String]) async throws {
        let cli = CLI()
        defer { cli.cleanUp() }
        let result = try await cli.run(arguments)
        #expect(result.status == 0, "\(result.stderr)")
        for option in [
            "--db", "--tenant", "--format", "--token-file", "--continue-on-error", "--yes", "--color", "--no-pager",
        ] {
            #expect(result.stdout.contains(option), "\(option) missing from help")
        }
        #expect(result.stdout.contains("e.g. lookup passkey w6hZIQi3LVcwPvQekJSl_Q"))
        #expect(result.stdout.contains("cleanup teardown-request"))
    }

    @Test func helpOnATerminalExitsZero() async throws {
        let cli = CLI()
        defer { cli.cleanUp() }
        for flag in ["--help", "-h"] {
            let pty = try PTY(arguments: [flag, "--no-pager"], environment: cli.environment)
            try #require(await pty.waitForExit())
            #expect(pty.status == 0)
            #expect(pty.transcript.contains("GLOBAL OPTIONS"))
        }
    }

    @MainActor @Test func everyCommandHasAnExampleAndHelpCommandShowsThem() async throws {
        for leaf in HelpText.leaves() {
            #expect(Examples.first(leaf.path) != nil, "no example for \(leaf.path)")
        }
        #expect(Set(Examples.table.keys).isSubset(of: Set(HelpText.leaves().map(\.path))), "an example for no command")
        let cli = CLI()
        defer { cli.cleanUp() }
        let run = try await cli.run(["help", "cleanup", "run"])
        #expect(run.status == 0)
        #expect(run.stdout.contains("EXAMPLES:") && run.stdout.contains("cleanup run --execute --max 50"))
        let flag = try await cli.run(["cleanup", "run", "--help"])
        #expect(flag.status == 0 && flag.stdout.contains("EXAMPLES:"))
        let group = try await cli.run(["help", "lookup"])
        #expect(group.stdout.contains("lookup keypair 04ab… --sync") == false)
        #expect(group.stdout.contains("lookup passkey w6hZIQi3LVcwPvQekJSl_Q"))
    }

    /// Every `--flag` an example uses is one its command (or the process) accepts.
    @MainActor @Test func examplesUseRealOptions() {
        let globals = Set(Completion.flags(inHelp: Backupctl.helpMessage(columns: 1000)))
        for leaf in HelpText.leaves() {
            let own = Set(Completion.flags(of: leaf.command))
            for example in Examples.table[leaf.path] ?? [] {
                for word in example.split(separator: " ") where word.hasPrefix("--") {
                    #expect(own.contains(String(word)) || globals.contains(String(word)), "\(leaf.path): \(example)")
                }
            }
        }
    }

    // MARK: options anywhere (item 4)

    @Test func globalOptionsAfterTheCommandWords() async throws {
        var cli = CLI()
        defer { cli.cleanUp() }
        _ = try await cli.bootstrap()
        let export = Self.repoRoot.appendingPathComponent("runbooks/fixtures/export").path
        #expect(try await cli.run(["import", export]).status == 0)
        let account = "backup_account_030b2e4ce2de76318c0ef50964d225910b64019d8e43620d6d166b6bd100ad26e8"
        let json = try await cli.run(["lookup", "account", account, "--format", "json"])
        #expect(json.status == 0, "\(json.stderr)")
        #expect(CLI.json(json.stdout)?["backupId"] as? String == account)
        let inline = try await cli.run(["lookup", "account", account, "--format=json"])
        #expect(CLI.json(inline.stdout) != nil)

        let run = try await cli.run(["cleanup", "run", "--execute", "--yes"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(!run.stderr.contains("Did you mean"))
        // Without --yes a batch refuses a destructive command, as before.
        #expect(try await cli.run(["cleanup", "run", "--execute"]).status == 64)

        // A command's own option of the same name stays the command's.
        let add = try await cli.run([
            "operator", "add", "bob", "--tenant", "sandbox", "--role", "viewer", "--format", "json",
        ])
        #expect(add.status == 0, "\(add.stderr)")
        #expect(CLI.json(add.stdout)?["operator"] as? String == "bob")

        // Credential ids that start with '-' are still values.
        let dash = try await cli.run(["lookup", "passkey", "-5iGFbL3U0S4-a91J", "--format", "json"])
        #expect(dash.status == 1, "a value, not an unknown option (64)")
        #expect(dash.stderr.contains("-5iGFbL3U0S4-a91J"), "\(dash.stderr)")

        let missing = try await cli.run(["whoami", "--format"])
        #expect(missing.status == 64 && missing.stderr.contains("--format needs a value"))
        let bad = try await cli.run(["whoami", "--format", "xml"])
        #expect(bad.status == 64 && bad.stderr.contains("table, json, yaml or csv"))
    }

    @Test func perLineOptionsInAScriptLastOneLine() async throws {
        var cli = CLI()
        defer { cli.cleanUp() }
        _ = try await cli.bootstrap()
        let result = try await cli.run(["-c", "whoami --format json", "-c", "whoami"])
        #expect(result.status == 0)
        let lines = result.lines
        #expect(CLI.json(lines.first ?? "")?["operator"] as? String == "root")
        #expect(lines.dropFirst().first?.hasPrefix("operator:") == true, "\(lines)")
        let refused = try await cli.run(["-c", "whoami --db /tmp/elsewhere.db"])
        #expect(refused.status == 64 && refused.stderr.contains("whole run"))
    }

    @Test func theREPLSwitchesToJSONWithSetOrBackslashFormat() async throws {
        var cli = CLI()
        defer { cli.cleanUp() }
        _ = try await cli.bootstrap()
        let pty = try PTY(arguments: [], environment: cli.environment.merging(["TERM": "xterm"]) { $1 })
        #expect(await pty.expect("root@"))
        pty.send("set format json\r")
        #expect(await pty.expect("json"))
        pty.send("whoami\r")
        #expect(await pty.expect("{\"canCreateTenants\""), "\(pty.transcript)")
        pty.send("\\format table\r")
        #expect(await pty.expect("format"))
        pty.send("whoami\r")
        #expect(await pty.expect("operator:"), "\(pty.transcript)")
        pty.send("set colour on\r")
        #expect(await pty.expect("did you mean 'color'?"), "\(pty.transcript)")
        pty.send("quit\r")
        #expect(await pty.waitForExit())
    }

    // MARK: completion (item 6)

    @MainActor @Test func completionOffersNoFlagsForValuesAndCleanFlagNames() {
        let completion = Completion(tenants: { ["prod", "staging"] })
        #expect(completion.candidates(before: ["show"], prefix: "").isEmpty)
        #expect(completion.candidates(before: ["lookup", "oidc"], prefix: "").isEmpty)
        #expect(completion.candidates(before: ["lookup"], prefix: "").contains("oidc"))
        let flags = completion.candidates(before: ["cleanup", "run"], prefix: "--")
        #expect(flags.contains("--execute") && flags.contains("--max") && flags.contains("--grace"))
        #expect(flags.allSatisfy { $0.allSatisfy { $0.isLowercase || $0 == "-" } }, "\(flags)")
        #expect(completion.candidates(before: ["set"], prefix: "f") == ["format"])
        #expect(completion.candidates(before: ["set", "format"], prefix: "") == ["table", "json", "yaml", "csv"])
        #expect(completion.candidates(before: ["use"], prefix: "st") == ["staging"])
    }

    @Test func tabOnAValueInsertsNothingOnARealTerminal() async throws {
        var cli = CLI()
        defer { cli.cleanUp() }
        _ = try await cli.bootstrap()
        let pty = try PTY(arguments: [], environment: cli.environment.merging(["TERM": "xterm"]) { $1 })
        #expect(await pty.expect("root@"))
        pty.send("show \t\tnope\r")
        #expect(await pty.expect("error["), "\(pty.transcript)")
        #expect(!pty.transcript.contains("--help"), "\(pty.transcript)")
        pty.send("cleanup run --exe\t")
        #expect(await pty.expect("--execute "), "\(pty.transcript)")
        #expect(!pty.transcript.contains("--execute;"))
        pty.send("\u{03}")  // abandon the line
        #expect(await pty.expect("root@"))
        pty.send("quit\r")
        #expect(await pty.waitForExit())
    }

    @MainActor @Test func generatedCompletionScriptsKnowTheWholeTree() async throws {
        var cli = CLI()
        defer { cli.cleanUp() }
        for shell in ["bash", "zsh", "fish"] {
            let result = try await cli.run(["--generate-completion-script", shell])
            #expect(result.status == 0)
            // fish writes long options without their dashes.
            for word in [
                "cleanup", "teardown-request", "lookup", "keypair", "sync", "no-pager", "format", "token-file",
            ] {
                #expect(result.stdout.contains(word), "\(shell) script lacks \(word)")
            }
        }
        #expect(try await cli.run(["--generate-completion-script", "tcsh"]).status == 64)
        // Tenant names come from the tool itself; the command the scripts run lists them.
        let bash = try await cli.run(["--generate-completion-script", "bash"]).stdout
        #expect(bash.contains("tenant list"))
        // The completion root declares exactly the process's global options.
        let root = Completion.flags(inHelp: CompletionRoot.helpMessage(columns: 1000))
        #expect(root == Completion.flags(inHelp: Backupctl.helpMessage(columns: 1000)))
        #expect(root.contains("--no-pager") && root.contains("--token-file"))

        _ = try await cli.bootstrap()
        #expect(try await cli.run(["tenant", "create", "staging", "--sandbox"]).status == 0)
        var environment = cli.environment
        environment["PATH"] = CLI.binary.deletingLastPathComponent().path + ":/usr/bin:/bin"
        let listed = try await ChildProcess.run(
            "/bin/sh", ["-c", CompletionRoot.tenantNames], environment: environment
        )
        .stdout
        #expect(listed.split(separator: "\n") == ["sandbox", "staging"], "\(listed)")
    }

    // MARK: demo inside a session (item 7)

    @Test func demoInsideTheREPLSaysWhatItDoesAndAsks() async throws {
        var cli = CLI()
        defer { cli.cleanUp() }
        _ = try await cli.bootstrap()
        let pty = try PTY(arguments: [], environment: cli.environment.merging(["TERM": "xterm"]) { $1 })
        #expect(await pty.expect("root@"))
        pty.send("demo --backups 5 --orphans 1\r")
        #expect(await pty.expect("Switch? [y/N]"), "\(pty.transcript)")
        #expect(pty.transcript.contains("operator demo"))
        pty.send("n\r")
        #expect(await pty.expect("error[not_confirmed]"), "\(pty.transcript)")
        pty.send("whoami\r")
        #expect(await pty.expect("operator: root") || pty.transcript.contains("root"), "\(pty.transcript)")
        #expect(await pty.expect("root@"))
        pty.send("demo --backups 5 --orphans 1\r")
        #expect(await pty.expect("Switch? [y/N]"))
        pty.send("y\r")
        #expect(await pty.expect("demo@"), "after yes the session is the demo's: \(pty.transcript)")
        pty.send("quit\r")
        #expect(await pty.waitForExit())
    }

    @Test func demoInAScriptIsRefusedWithoutYes() async throws {
        var cli = CLI()
        defer { cli.cleanUp() }
        _ = try await cli.bootstrap()
        let refused = try await cli.run(["-c", "whoami", "-c", "demo --backups 5"])
        #expect(refused.status == 64)
        #expect(refused.stderr.contains("switches this session"))
        #expect(
            !FileManager.default.fileExists(atPath: cli.directory.appendingPathComponent("data/backupctl/demo").path))
    }

    // MARK: did you mean (item 12)

    @Test func didYouMeanForCommandsSubcommandsFlagsAndTenants() async throws {
        var cli = CLI()
        defer { cli.cleanUp() }
        _ = try await cli.bootstrap()
        #expect(try await cli.run(["tenant", "create", "staging", "--sandbox"]).status == 0)
        let command = try await cli.run(["lookpu", "passkey", "x"])
        #expect(command.status == 64 && command.stderr.contains("did you mean 'lookup'?"), "\(command.stderr)")
        let sub = try await cli.run(["cleanup", "scna"])
        #expect(sub.status == 64 && sub.stderr.contains("did you mean 'scan'?"), "\(sub.stderr)")
        let flag = try await cli.run(["cleanup", "run", "--exectue"])
        #expect(flag.status == 64 && flag.stderr.contains("--execute"), "\(flag.stderr)")
        let tenant = try await cli.run(["--tenant", "stagign", "whoami"])
        #expect(tenant.status == 77 && tenant.stderr.contains("did you mean 'staging'?"), "\(tenant.stderr)")
        let use = try await cli.run(["-c", "use stagin"])
        #expect(use.stderr.contains("did you mean 'staging'?"), "\(use.stderr)")
        #expect(try await cli.run(["frobnicate"]).stderr.contains("did you mean") == false)
    }

    @Test func aKeypairMissThatWouldHitWithSyncSaysSo() async throws {
        var cli = CLI()
        defer { cli.cleanUp() }
        _ = try await cli.bootstrap()
        let export = Self.repoRoot.appendingPathComponent("runbooks/fixtures/export").path
        #expect(try await cli.run(["import", export]).status == 0)
        // The device (sync) key of the fixture's healthy backup, from its metadata.
        let key = "BP+8xYDFSlI7763IWd2OrpptTXSXVxK2Q5R81/ZlsdVViuTT3B/FrU+yWp4XCG7ZxlgM9pkkXHYHAs3+0ZCHuqk="
        let miss = try await cli.run(["lookup", "keypair", key])
        #expect(miss.status == 1)
        #expect(miss.stderr.contains("--sync"), "\(miss.stderr)")
        let hit = try await cli.run(["lookup", "keypair", key, "--sync"])
        #expect(hit.status == 0, "\(hit.stderr)")
    }

    @MainActor @Test func suggestionsAreCloseOrNothing() {
        #expect(Suggest.closest(to: "lookpu", among: Completion.commandWords) == "lookup")
        #expect(Suggest.closest(to: "xyzzy", among: Completion.commandWords) == nil)
        #expect(Suggest.closest(to: "stag", among: ["staging", "prod"]) == "staging")
        #expect(Suggest.distance("scna", "scan") == 1)
    }
}
