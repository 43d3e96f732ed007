import Foundation
import Testing

/// Long output through a real `less` on a real pseudo-terminal (40 rows): the pager gets the
/// terminal, `q` and Ctrl-C return to the prompt, and nothing is cut without a word.
@Suite(.serialized, .timeLimit(.minutes(10))) struct PagerTests {
    /// The REPL with the default pager (`less -FRXK`): no PAGER, no BACKUPCTL_PAGER.
    func repl(_ cli: inout CLI, extra: [String: String] = [:]) async throws -> PTY {
        _ = try await cli.bootstrap()
        var environment = cli.environment.merging(["TERM": "xterm"]) { $1 }
        environment["PAGER"] = nil
        return try PTY(arguments: [], environment: environment.merging(extra) { $1 })
    }

    static let firstScreen = "GLOBAL OPTIONS"
    static let lastLine = "shows a command's options and examples"
    static let secondScreen = "e.g. operator list"

    @Test(arguments: ["q", "\u{03}", "\u{1A}"])
    func lessGetsTheTerminalAndLeavingItReturnsToThePrompt(_ key: String) async throws {
        #expect(FileManager.default.isExecutableFile(atPath: "/usr/bin/less"), "scripts/install-deps.sh installs less")
        var cli = CLI()
        defer { cli.cleanUp() }
        let pty = try await repl(&cli)
        #expect(await pty.expect("root@"), "\(pty.transcript)")
        pty.send("help\r")
        #expect(await pty.expect(Self.firstScreen), "\(pty.transcript)")
        // less shows one screen and waits for a key: the end is not on the terminal yet.
        #expect(!pty.transcript.contains(Self.lastLine), "less must page, not dump: \(pty.transcript)")
        #expect(!pty.transcript.contains(Self.secondScreen))
        pty.send(" ")  // a key less reads from the terminal: the next screen
        #expect(await pty.expect(Self.secondScreen), "less must read keys: \(pty.transcript)")
        pty.send(key)
        #expect(await pty.expect("root@"), "\(key.debugDescription) must return to the prompt: \(pty.transcript)")
        pty.send("whoami\r")
        #expect(await pty.expect("operator:"), "the console must read the terminal again: \(pty.transcript)")
        pty.send("quit\r")
        try #require(await pty.waitForExit())
        #expect(pty.status == 0)
    }

    /// The prompt comes back only once nothing of the pager is left: here the pager's shell
    /// exits while a process it started (ignoring SIGTERM, as a pager still restoring the
    /// terminal is still there) runs on and writes to the terminal. The prompt follows its last
    /// word; shown earlier, it would share the terminal with it, and the first key typed at it
    /// could go to the pager. The checkpoint is a file the test creates, never a delay.
    @Test func thePromptWaitsUntilThePagersWholeGroupIsGone() async throws {
        var cli = CLI()
        defer { cli.cleanUp() }
        let resume = cli.directory.appendingPathComponent("resume").path
        let pager =
            "trap '' TERM; cat >/dev/null; (echo pager-waiting; while [ ! -e '\(resume)' ]; do sleep 0.01; done; "
            + "echo pager-late) & exit 0"
        let pty = try await repl(&cli, extra: ["BACKUPCTL_PAGER": pager])
        #expect(await pty.expect("root@"), "\(pty.transcript)")
        pty.send("help\r")
        #expect(await pty.expect("pager-waiting"), "\(pty.transcript)")
        #expect(FileManager.default.createFile(atPath: resume, contents: nil))
        #expect(await pty.expect("pager-late"), "\(pty.transcript)")
        #expect(await pty.expect("root@"), "\(pty.transcript)")
        let transcript = pty.transcript
        let first = try #require(transcript.range(of: "root@"))
        let late = try #require(transcript.range(of: "pager-late"))
        #expect(
            !transcript[first.upperBound..<late.lowerBound].contains("root@"),
            "the prompt came back while the pager's group was still there: \(transcript)")
        pty.send("quit\r")
        #expect(await pty.waitForExit())
    }

    @Test func noPagerPrintsEverythingAndSetPagerOffToo() async throws {
        var cli = CLI()
        defer { cli.cleanUp() }
        _ = try await cli.bootstrap()
        let environment = cli.environment.merging(["TERM": "xterm"]) { $1 }
        let direct = try PTY(arguments: ["help", "--no-pager"], environment: environment)
        #expect(await direct.waitForExit())
        #expect(direct.status == 0)
        #expect(direct.transcript.contains(Self.firstScreen) && direct.transcript.contains(Self.lastLine))

        let pty = try PTY(arguments: [], environment: environment)
        #expect(await pty.expect("root@"))
        pty.send("set pager off\r")
        #expect(await pty.expect("pager"))
        pty.send("help\r")
        #expect(await pty.expect(Self.lastLine), "\(pty.transcript)")
        pty.send("quit\r")
        #expect(await pty.waitForExit())
    }

    @Test func thePagerRunsWithoutTheTokenAndBackupctlPagerWins() async throws {
        var cli = CLI()
        defer { cli.cleanUp() }
        let token = try await cli.bootstrap()
        let seen = cli.directory.appendingPathComponent("pager-env").path
        let descriptors = cli.directory.appendingPathComponent("pager-fds").path
        let environment = cli.environment.merging([
            "TERM": "xterm", "PAGER": "false",
            "BACKUPCTL_PAGER": "env > '\(seen)'; ls /proc/self/fd > '\(descriptors)'; cat > /dev/null",
            // Secrets by name and by value that an operator's shell may hold.
            "OPENAI_KEY": "sk-not-a-real-one", "AWS_ACCESS_KEY_ID": "AKIAEXAMPLE", "GH_AUTH": "gho-example",
            "MY_PASSPHRASE": "correct horse", "SERVER_PEM": "-----BEGIN EC PRIVATE KEY-----\nMHcC\n",
            "OLD_ROOT": #"{"version":"V0","key":"any words at all"}"#, "KEYBOARD_LAYOUT": "us",
            "OPENAIAPIKEY": "sk-x", "SSHPASS": "hunter2",
        ]) { $1 }
        let pty = try PTY(arguments: ["help"], environment: environment)
        try #require(await pty.waitForExit())
        #expect(pty.status == 0)
        let recorded = try String(contentsOfFile: seen, encoding: .utf8)
        #expect(recorded.contains("TERM=xterm") && recorded.contains("KEYBOARD_LAYOUT=us"))
        #expect(!recorded.contains(token) && !recorded.contains("BACKUPCTL_"))
        for name in [
            "OPENAI_KEY", "AWS_ACCESS_KEY_ID", "GH_AUTH", "MY_PASSPHRASE", "SERVER_PEM", "OLD_ROOT", "OPENAIAPIKEY",
            "SSHPASS",
        ] {
            #expect(!recorded.contains(name + "="), "\(name) reached the pager")
        }
        // What the pager starts holds stdin, stdout and stderr only (and `ls` its directory, 3).
        let open = try String(contentsOfFile: descriptors, encoding: .utf8).split(separator: "\n").compactMap {
            Int($0)
        }
        #expect(open.filter { $0 > 3 }.isEmpty, "\(open)")
        #expect(!pty.transcript.contains(Self.lastLine), "the output went to the pager, not the terminal")
    }

    /// A pager's shell that dies (Ctrl-\\ kills `sh`, not `less`) leaves what it started behind,
    /// in its own group: the console ends that group, so nothing is left reading its keys.
    @Test func whatADeadPagerShellLeftBehindIsEnded() async throws {
        var cli = CLI()
        defer { cli.cleanUp() }
        _ = try await cli.bootstrap()
        let left = cli.directory.appendingPathComponent("left-pid").path
        let environment = cli.environment.merging([
            "TERM": "xterm", "BACKUPCTL_PAGER": "sleep 300 & echo $! > '\(left)'; kill -KILL $$",
        ]) { $1 }
        let pty = try PTY(arguments: ["help"], environment: environment)
        try #require(await pty.waitForExit())
        let pid = try #require(
            Int32(try String(contentsOfFile: left, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)))
        // Bounded: the group was sent SIGTERM before the console returned; give it a moment to go.
        var alive = true
        for _ in 0..<100 {
            let state = (try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8))?
                .split(separator: ")").last?.split(separator: " ").first
            alive = state != nil && state != "Z"
            if !alive { break }
            try await Task.sleep(for: .milliseconds(50))
        }
        #expect(!alive, "the pager's shell left \(pid) running")
    }

    @Test func aPagerThatCannotStartMeansTheOutputIsPrintedWithANote() async throws {
        var cli = CLI()
        defer { cli.cleanUp() }
        _ = try await cli.bootstrap()
        let environment = cli.environment.merging(["TERM": "xterm", "PAGER": "no-such-pager-here"]) { $1 }
        let pty = try PTY(arguments: ["help"], environment: environment)
        #expect(await pty.waitForExit())
        #expect(pty.transcript.contains("could not start"))
        #expect(pty.transcript.contains(Self.lastLine))
    }
}
