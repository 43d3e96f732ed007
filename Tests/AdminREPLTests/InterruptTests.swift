import BackupctlTestSupport
import Foundation
import Testing

/// What a script learns when it is stopped: the running job ends with its one line
/// (`"interrupted": true`, what was done, what is left), nothing after it runs — not even with
/// `--continue-on-error` — and the process exits 130 (SIGINT) or 143 (SIGTERM), never 0.
///
/// The job holds at a named checkpoint (`BACKUPCTL_PAUSE_AT=job.progress`: its first progress
/// report) until the signal arrives, so no case depends on timing.
@Suite(.timeLimit(.minutes(10))) struct InterruptTests {
    enum Entry: String, Sendable { case dashC, file, stdin }

    struct Case: Sendable, CustomTestStringConvertible {
        var mode: CLI.Mode
        var entry: Entry
        var signal: Int32
        var json: Bool
        var testDescription: String {
            "\(mode.rawValue) \(entry.rawValue) \(signal == SIGINT ? "SIGINT" : "SIGTERM") \(json ? "json" : "table")"
        }
    }

    static let cases: [Case] = [
        Case(mode: .inProcess, entry: .dashC, signal: SIGTERM, json: true),
        Case(mode: .inProcess, entry: .file, signal: SIGINT, json: false),
        Case(mode: .inProcess, entry: .stdin, signal: SIGINT, json: true),
        Case(mode: .server, entry: .dashC, signal: SIGINT, json: true),
        Case(mode: .server, entry: .file, signal: SIGTERM, json: false),
        Case(mode: .server, entry: .stdin, signal: SIGTERM, json: true),
    ]

    @Test(arguments: cases) func aSignalEndsTheJobWithItsLineAndStopsTheBatch(_ given: Case) async throws {
        var cli = CLI(mode: given.mode)
        defer { cli.cleanUp() }
        // The job holds at its first progress report until the signal (in-process) or until the
        // client has gone (on the server, which is started with the same variable).
        cli.environment["BACKUPCTL_PAUSE_AT"] = "job.progress"
        _ = try await cli.bootstrap()
        let script = "seed --backups 3000 --seed 9   # a long job\nwhoami\n"
        var arguments = ["--continue-on-error", "--format", given.json ? "json" : "table"]
        var input = ChildProcess.Input.null
        switch given.entry {
        case .dashC: arguments += ["-c", "seed --backups 3000 --seed 9", "-c", "whoami"]
        case .file:
            let file = cli.directory.appendingPathComponent("nightly.txt")
            try script.write(to: file, atomically: true, encoding: .utf8)
            arguments += ["-f", file.path]
        case .stdin: input = .data(Data(script.utf8))
        }
        let console = try BackupctlBinary.start(arguments, environment: cli.environment, input: input)
        defer { console.killNow() }
        #expect(await console.waitForStderr(#""paused":"job.progress""#, seconds: 120), "\(console.stderr)")
        console.signal(given.signal)
        let result = try await console.result(seconds: 120)
        #expect(result.status == 128 + given.signal, "\(result.stderr)")
        #expect(!result.stdout.contains("operator"), "the batch went on after the interrupted job")
        if given.json {
            #expect(result.lines.count == 1, "\(result.stdout)")
            let line = try #require(CLI.json(result.lines.first ?? ""))
            #expect(line["interrupted"] as? Bool == true)
            #expect((line["done"] as? Int ?? 0) > 0)
            #expect(line["total"] as? Int == 3000)
            #expect(line["left"] as? Int == 3000 - (line["done"] as? Int ?? 0))
            #expect((line["error"] as? [String: Any])?["code"] as? String == "interrupted")
        } else {
            let place = given.entry == .file ? "nightly.txt:1:" : "stdin:1:"
            #expect(result.stderr.contains(place) && result.stderr.contains("error[interrupted]"), "\(result.stderr)")
            #expect(result.stderr.contains(given.signal == SIGINT ? "by SIGINT" : "by SIGTERM"))
        }
        // What the job did before it stopped is kept: the tenant has some backups, not all.
        let stats = CLI.json(try await cli.run(["--format", "json", "stats"]).stdout)
        let backups = stats?["backups"] as? Int ?? -1
        #expect(backups < 3000, "\(String(describing: stats))")
    }

    @Test(arguments: CLI.Mode.allCases) func aScriptWithAMistakeOnItsLastLineRunsNothing(_ mode: CLI.Mode) async throws
    {
        var cli = CLI(mode: mode)
        defer { cli.cleanUp() }
        _ = try await cli.bootstrap()
        let file = cli.directory.appendingPathComponent("cleanup.txt")
        try "tenant create drill --sandbox\nwhoami   # who runs this\nlookpu passkey x\n".write(
            to: file, atomically: true, encoding: .utf8)
        for format in ["json", "table"] {
            let result = try await cli.run(["--yes", "--continue-on-error", "--format", format, "-f", file.path])
            #expect(result.status == 64)
            #expect(result.stdout.isEmpty, "\(result.stdout)")
            #expect(result.stderr.contains("cleanup.txt"), "\(result.stderr)")
            #expect(result.stderr.contains(format == "json" ? #""line":3"# : "cleanup.txt:3:"), "\(result.stderr)")
        }
        let piped = try await cli.run(["--format", "json"], stdin: "tenant create drill --sandbox\nshow\n")
        #expect(piped.status == 64 && piped.stdout.isEmpty && piped.stderr.contains(#""line":2"#))
        let tenants = try await cli.run(["--format", "json", "tenant", "list"])
        #expect(!tenants.stdout.contains("drill"), "a command ran before the script was refused")
        // With the mistake fixed, the trailing comment is a comment and the script runs.
        try "whoami   # who runs this\n".write(to: file, atomically: true, encoding: .utf8)
        #expect(try await cli.run(["--format", "json", "-f", file.path]).status == 0)
    }

    @Test func helpShowsTheOneTableOfExitCodes() async throws {
        let cli = CLI()
        defer { cli.cleanUp() }
        let help = try await cli.run(["--help"])
        for code in ["0", "1", "2", "64", "75", "77", "78", "130", "143"] {
            #expect(help.stdout.contains("\n  \(code) "), "exit \(code) is not in --help")
        }
    }

    /// Ctrl-C typed at a terminal during a direct command: the job says how far it got and the
    /// process exits 130 (it used to print "interrupted after …" and exit 0).
    @Test func ctrlCAtATerminalEndsADirectJobWith130() async throws {
        var cli = CLI()
        defer { cli.cleanUp() }
        _ = try await cli.bootstrap()
        var environment = cli.environment
        environment["BACKUPCTL_PAUSE_AT"] = "job.progress"
        let pty = try PTY(arguments: ["seed", "--backups", "3000", "--seed", "9"], environment: environment)
        defer { pty.child.killNow() }
        #expect(await pty.expect(#""paused":"job.progress""#, timeout: 120), "\(pty.transcript)")
        pty.send("\u{03}")
        #expect(await pty.waitForExit(timeout: 180))  // the job stops at its next batch; a loaded machine is slow
        #expect(pty.status == 130, "\(pty.transcript)")
        #expect(pty.transcript.contains("error[interrupted]") && pty.transcript.contains("by SIGINT"))
    }

    /// A call that never answers (a server that stopped answering) would hold a signalled
    /// command for good: it is ended `BACKUPCTL_STOP_GRACE_SECONDS` after the signal, with a line
    /// that says its outcome is unknown, and 143.
    @Test func aCommandStuckOnAServerThatDoesNotAnswerEndsAfterTheSignal() async throws {
        try await Self.stuckOnASilentServerEndsAfterTheSignal { _ in ["whoami"] }
    }

    /// The same in a script, on a line after others: the run's one watchdog, started by its
    /// first line, still ends the stuck one.
    @Test func aScriptLineStuckOnAServerThatDoesNotAnswerEndsAfterTheSignal() async throws {
        try await Self.stuckOnASilentServerEndsAfterTheSignal { directory in
            let script = directory.appendingPathComponent("stuck.bctl")
            try "set format json\nset color never\nwhoami\n".write(to: script, atomically: true, encoding: .utf8)
            return ["-f", script.path]
        }
    }

    /// Runs `backupctl --server SILENT` with the arguments `given` makes in a scratch directory,
    /// sends SIGTERM once its request reached the server (bounded: a minute), and expects 143
    /// with the line that says the outcome is unknown.
    static func stuckOnASilentServerEndsAfterTheSignal(_ given: (URL) throws -> [String]) async throws {
        let silent = try StallingServer(head: "")
        defer { silent.stop() }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("stuck-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let child = try BackupctlBinary.start(
            ["--server", silent.baseURL] + (try given(directory)),
            environment: [
                "PATH": "/usr/bin:/bin", "HOME": directory.path, "XDG_CONFIG_HOME": directory.path,
                "BACKUPCTL_TOKEN": "bctl_" + String(repeating: "Q", count: 43),
                "BACKUPCTL_STOP_GRACE_SECONDS": "2",
            ])
        for _ in 0..<600 where silent.requests == 0 && child.isRunning {
            try await Task.sleep(for: .milliseconds(100))
        }
        #expect(silent.requests == 1, "\(child.stderr)")
        child.signal(SIGTERM)
        let ended = await child.wait(seconds: 60)
        if ended == nil { _ = await child.kill() }
        #expect(ended == .exited(143), "\(child.stderr)")
        #expect(child.stderr.contains("error[interrupted]") && child.stderr.contains("outcome is unknown"))
    }

    /// The REPL against a server that accepts and never answers: the prompt does not wait on it
    /// (Ctrl-C, or 5 s, and the prompt shows `?`), a command waiting on it is told so after a
    /// Ctrl-C, and a second Ctrl-C stops waiting: the session goes on, the outcome is unknown.
    @Test func theREPLStopsWaitingForAServerThatDoesNotAnswer() async throws {
        let silent = try StallingServer(head: "")
        defer { silent.stop() }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("silent-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let pty = try PTY(
            arguments: ["--server", silent.baseURL],
            environment: [
                "PATH": "/usr/bin:/bin", "HOME": directory.path, "XDG_CONFIG_HOME": directory.path, "TERM": "xterm",
                "BACKUPCTL_TOKEN": "bctl_" + String(repeating: "Q", count: 43),
            ])
        #expect(await pty.expect("Ctrl-D leaves"), "\(pty.transcript)")
        // The prompt's whoami is in flight: Ctrl-C skips it.
        for _ in 0..<600 where silent.requests == 0 { try await Task.sleep(for: .milliseconds(100)) }
        pty.send("\u{03}")
        #expect(await pty.expect("?@"), "\(pty.transcript)")
        pty.send("stats\r")
        for _ in 0..<600 where silent.requests < 2 { try await Task.sleep(for: .milliseconds(100)) }
        pty.send("\u{03}")
        #expect(await pty.expect("Ctrl-C again stops waiting"), "\(pty.transcript)")
        pty.send("\u{03}")
        #expect(await pty.expect("outcome is unknown"), "\(pty.transcript)")
        pty.send("\u{03}")  // the next prompt's whoami
        #expect(await pty.expect("?@"), "\(pty.transcript)")
        pty.send("quit\r")
        #expect(await pty.waitForExit(timeout: 60), "\(pty.transcript)")
    }
}
