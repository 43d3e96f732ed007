import Foundation
import Testing

/// The interactive console on a real pseudo-terminal.
@Suite(.serialized, .timeLimit(.minutes(10))) struct REPLTests {
    func session(_ cli: inout CLI) async throws -> PTY {
        _ = try await cli.bootstrap()
        return try PTY(arguments: [], environment: cli.environment.merging(["TERM": "xterm"]) { $1 })
    }

    @Test func promptShowsOperatorAndTenantAndRunsCommands() async throws {
        var cli = CLI()
        defer { cli.cleanUp() }
        let pty = try await session(&cli)
        #expect(await pty.expect("root@"), "\(pty.transcript)")
        #expect(await pty.expect("sandbox"))
        pty.send("whoami\r")
        #expect(await pty.expect("operator:"))
        pty.send("quit\r")
        try #require(await pty.waitForExit())
        #expect(pty.status == 0)
    }

    @Test func tabCompletesCommandsSubcommandsAndTenants() async throws {
        var cli = CLI()
        defer { cli.cleanUp() }
        let pty = try await session(&cli)
        #expect(try await cli.run(["tenant", "create", "staging", "--sandbox"]).status == 0)
        #expect(await pty.expect("> "))
        pty.send("whoa\t")
        #expect(await pty.expect("whoami"))
        pty.send("\r")
        #expect(await pty.expect("operator:"))
        pty.send("tenant li\t\r")
        #expect(await pty.expect("TENANT"))
        pty.send("use sta\t\r")
        #expect(await pty.expect("Using tenant staging"))
        #expect(await pty.expect("@"))
        pty.send("\u{04}")
        #expect(await pty.waitForExit())
    }

    @Test func tabCompletesBackupIdsOfTheTenant() async throws {
        var cli = CLI()
        defer { cli.cleanUp() }
        let pty = try await session(&cli)
        let export = GoldenTests.repoRoot.appendingPathComponent("runbooks/fixtures/export").path
        #expect(try await cli.run(["import", export]).status == 0)
        #expect(await pty.expect("> "))
        // Only 030b… starts with 030: the rest of the id can only come from completion (checked
        // on its first digits, before the 80-column line wraps).
        // (`lookup account` answers in three lines: no pager in the way.)
        pty.send("lookup account backup_account_030\t")
        #expect(await pty.expect("b2e4ce2de763"), "\(pty.transcript)")
        pty.send("\r")
        #expect(await pty.expect("lookup key:"))
        // Bare hex digits complete too.
        pty.send("lookup account 0397\t")
        #expect(await pty.expect("dc9fec4e3d3f"), "\(pty.transcript)")
        pty.send("\r")
        #expect(await pty.expect("lookup key:"))
        // ^D at the prompt (readline's): typed while the command still prints, the terminal
        // is not yet raw and the end-of-file can be lost.
        #expect(await pty.expect("> "))
        pty.send("\u{04}")
        #expect(await pty.waitForExit())
    }

    /// The fixture export imported, and `audit list --follow --action backup.show` started.
    func followShows(_ cli: inout CLI) async throws -> PTY {
        _ = try await cli.bootstrap()
        let export = GoldenTests.repoRoot.appendingPathComponent("runbooks/fixtures/export").path
        #expect(try await cli.run(["import", export]).status == 0)
        return try PTY(
            arguments: ["--format", "json", "audit", "list", "--follow", "--action", "backup.show"],
            environment: cli.environment)
    }

    @Test func auditFollowPrintsNewEntriesAsTheyAreWritten() async throws {
        var cli = CLI()
        defer { cli.cleanUp() }
        let follow = try await followShows(&cli)
        #expect(try await cli.run(["show", "030b"]).status == 0)
        #expect(await follow.expect(#""action":"backup.show""#), "\(follow.transcript)")
        #expect(try await cli.run(["lookup", "oidc", "google", "104500000000000000001"]).status == 0)
        #expect(try await cli.run(["show", "0397"]).status == 0)
        // The lookup is filtered out; the second show arrives.
        #expect(await follow.expect("039797dc9fec"), "\(follow.transcript)")
        #expect(!follow.transcript.contains("backup.lookup"))
        // Ctrl-C stops it.
        follow.send("\u{03}")
        #expect(await follow.waitForExit())
    }

    /// A follower whose filter matches nothing yet starts after the tenant's newest entry and
    /// pages forward: more than a page written before its first poll arrives whole.
    @Test func auditFollowWithAnEmptyFirstPageMissesNothing() async throws {
        var cli = CLI()
        defer { cli.cleanUp() }
        let follow = try await followShows(&cli)
        // A script of 1,200 shows: more than a poll's page, written at once.
        let script = cli.directory.appendingPathComponent("shows.bctl")
        try String(repeating: "show 030b\n", count: 1200).write(to: script, atomically: true, encoding: .utf8)
        #expect(try await cli.run(["-f", script.path]).status == 0)
        // Bounded: the follower prints the 1,200 lines within two minutes.
        for _ in 0..<1200 where follow.transcript.components(separatedBy: #""action":"backup.show""#).count <= 1200 {
            try await Task.sleep(for: .milliseconds(100))
        }
        #expect(follow.transcript.components(separatedBy: #""action":"backup.show""#).count - 1 == 1200)
        follow.send("\u{03}")
        #expect(await follow.waitForExit())
    }

    @Test func historyIsPrivateAndKeepsNoSecrets() async throws {
        var cli = CLI()
        defer { cli.cleanUp() }
        let pty = try await session(&cli)
        #expect(await pty.expect("> "))
        pty.send("whoami\r")
        #expect(await pty.expect("operator:"))
        let key = String(repeating: "ab", count: 32)
        pty.send("tenant create k\(key) --sandbox\r")
        #expect(await pty.expect("error["))
        pty.send("operator add x --tenant sandbox --role viewer --token bctl_secret\r")
        #expect(await pty.expect("error["))
        pty.send("quit\r")
        #expect(await pty.waitForExit())
        let path = cli.environment["XDG_STATE_HOME", default: ""] + "/backupctl/history"
        let attributes = try FileManager.default.attributesOfItem(atPath: path)
        #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o600)
        let history = try String(contentsOfFile: path, encoding: .utf8)
        #expect(history.contains("whoami"))
        #expect(!history.contains(key))
        #expect(!history.contains("bctl_"))
    }

    @Test func ctrlCAbandonsTheLineAndCtrlDLeaves() async throws {
        var cli = CLI()
        defer { cli.cleanUp() }
        let pty = try await session(&cli)
        #expect(await pty.expect("> "))
        pty.send("tenant list partial")
        #expect(await pty.expect("partial"))
        pty.send("\u{03}")
        #expect(await pty.expect("^C"))
        pty.send("whoami\r")
        #expect(await pty.expect("operator:"), "the console must still be alive after ^C: \(pty.transcript)")
        #expect(!pty.transcript.contains("TENANT"), "the abandoned line must not run")
        #expect(await pty.expect("> "), "^D goes to the prompt, not to a command still printing")
        pty.send("\u{04}")
        try #require(await pty.waitForExit())
        #expect(pty.status == 0)
    }

    @Test func ctrlCCancelsARunningCommandAndReturnsToThePrompt() async throws {
        var cli = CLI()
        defer { cli.cleanUp() }
        let pty = try await session(&cli)
        #expect(await pty.expect("> "))
        pty.send("seed --backups 500000\r")
        #expect(await pty.expect("seed: "), "progress should show: \(pty.transcript)")
        pty.send("\u{03}")
        #expect(await pty.expect("error[interrupted]"), "\(pty.transcript)")
        pty.send("whoami\r")
        #expect(await pty.expect("operator:"))
        pty.send("quit\r")
        try #require(await pty.waitForExit())
        #expect(pty.status == 0)
    }

    @Test func colourOnlyOnATerminalAndNotWithNoColor() async throws {
        var cli = CLI()
        defer { cli.cleanUp() }
        _ = try await cli.bootstrap()
        let piped = try await cli.run(["tenant", "list"], extraEnvironment: ["TERM": "xterm"])
        #expect(!piped.stdout.contains("\u{1B}["))
        let forced = try await cli.run(["--color", "always", "tenant", "list"])
        #expect(forced.stdout.contains("\u{1B}["))
        let pty = try PTY(
            arguments: ["tenant", "list"],
            environment: cli.environment.merging(["TERM": "xterm", "NO_COLOR": "1"]) { $1 })
        #expect(await pty.waitForExit())
        #expect(pty.transcript.contains("sandbox") && !pty.transcript.contains("\u{1B}[1m"))
    }
}
