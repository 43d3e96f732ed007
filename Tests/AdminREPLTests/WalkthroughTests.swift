import Foundation
import Testing

/// `reset walkthrough` end to end on a pseudo-terminal: present-user proof, confirmation by
/// tenant name, the wipe, and the teardown hand-off to the cleanup service.
@Suite(.serialized, .timeLimit(.minutes(10))) struct WalkthroughTests {
    static let rootKey = #"{"version":"V1","key":"000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"}"#
    static let backupId = "backup_account_030b2e4ce2de76318c0ef50964d225910b64019d8e43620d6d166b6bd100ad26e8"
    static let subOrg = "7d3e0a52-2f7e-4c1e-9a36-0c4f6f0b8a11"

    func importBackup(_ cli: CLI) async throws {
        let dir = cli.directory.appendingPathComponent("export/\(Self.backupId)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        let metadata = """
            {"id":"\(Self.backupId)","manifestHash":"\(String(repeating: "cd", count: 32))",
             "factors":[{"id":"f1","createdAt":"2026-05-01T10:00:00Z","kind":{"kind":"OIDC_ACCOUNT",
               "turnkeyProviderId":"p1","account":{"kind":"GOOGLE","sub":"104500000000000000001","email":"jane@gmail.com"}}}],
             "syncFactors":[],
             "keys":[{"kind":"TURNKEY","encryptedKey":"00","turnkeyAccountId":"\(Self.subOrg)",
               "turnkeyUserId":"u1","turnkeyPrivateKeyId":"k1"}]}
            """
        try metadata.write(to: dir.appendingPathComponent("metadata"), atomically: true, encoding: .utf8)
        // The service resets only a backup whose sealed blob exists (its HEAD of {id}/backup).
        try Data([1, 2, 3]).write(to: dir.appendingPathComponent("backup"))
        let result = try await cli.run(["import", cli.directory.appendingPathComponent("export").path])
        #expect(result.status == 0, "\(result.stderr)")
    }

    @Test(arguments: CLI.Mode.allCases) func presentUserWalkthroughWipesAndSubmitsTheTeardown(_ mode: CLI.Mode)
        async throws
    {
        var cli = CLI(mode: mode)
        defer { cli.cleanUp() }
        _ = try await cli.bootstrap()
        try await importBackup(cli)
        let pty = try PTY(arguments: ["reset", "walkthrough"], environment: cli.environment)
        #expect(await pty.expect("backup or factor>"), "\(pty.transcript)")
        pty.send("google 104500000000000000001\r")
        #expect(await pty.expect("Will NOT be wiped"))
        #expect(await pty.expect("still have ANY factor listed above? (yes/no)>"), "\(pty.transcript)")
        await Self.answerUpToTheHiddenPrompt(pty)
        pty.send(Self.rootKey + "\r")
        #expect(await pty.expect("tenant>"), "\(pty.transcript)")
        pty.send("sandbox\r")
        #expect(await pty.expect("Reset summary"), "\(pty.transcript)")
        try #require(await pty.waitForExit())
        #expect(pty.status == 0)
        #expect(!pty.transcript.contains("0102030405060708090a0b0c0d0e0f"), "the Root Key must never be echoed")
        #expect(pty.transcript.contains("Teardown: ") || pty.transcript.contains("Not sent"))
        // The backup is gone and its sub-org is in the cleanup journal.
        let show = try await cli.run(["show", Self.backupId])
        #expect(show.status == 1)
        let status = try await cli.run(["--format", "json", "cleanup", "status"])
        #expect(status.stdout.contains("reset") || status.stdout.contains(Self.subOrg) || status.status == 0)
        let audit = try await cli.run(["--format", "json", "audit", "list", "--limit", "50"])
        #expect(audit.stdout.contains("reset.complete"))
        #expect(!audit.stdout.contains("0102030405060708090a0b0c0d0e0f"))
    }

    /// SIGTERM while the hidden prompt waits for the Root Key, from a direct command or from
    /// the REPL: the process ends at once with 143, the terminal echoing again (it used to die,
    /// or be ended a grace period later, with echo off), and nothing was wiped.
    @Test(arguments: [true, false]) func aStopSignalAtTheHiddenPromptGivesTheTerminalBack(_ direct: Bool)
        async throws
    {
        var cli = CLI()
        defer { cli.cleanUp() }
        _ = try await cli.bootstrap()
        try await importBackup(cli)
        let pty = try PTY(arguments: direct ? ["reset", "walkthrough"] : [], environment: cli.environment)
        if !direct {
            #expect(await pty.expect("> "), "\(pty.transcript)")
            pty.send("reset walkthrough\r")
        }
        #expect(await pty.expect("backup or factor>"), "\(pty.transcript)")
        pty.send(Self.backupId + "\r")
        #expect(await pty.expect("still have ANY factor listed above? (yes/no)>"), "\(pty.transcript)")
        await Self.answerUpToTheHiddenPrompt(pty)
        pty.child.signal(SIGTERM)
        try #require(await pty.waitForExit(), "\(pty.transcript)")
        #expect(pty.status == 143, "\(pty.transcript)")
        #expect(pty.echoes)
        #expect(
            pty.transcript.contains("error[interrupted]: SIGTERM arrived at the hidden prompt"), "\(pty.transcript)")
        #expect(try await cli.run(["show", Self.backupId]).status == 0)
    }

    /// At the walkthrough's factor question: no factor left, a challenge issued, the Root Key
    /// typed (`b`), up to its hidden prompt. Echo is off by the time the prompt shows, so a key
    /// typed at once is neither echoed nor dropped (the mode used to be set after the prompt, and
    /// a quick key was lost).
    static func answerUpToTheHiddenPrompt(_ pty: PTY) async {
        pty.send("no\r")
        #expect(await pty.expect("Issue a reset challenge? (yes/no)>"))
        pty.send("yes\r")
        #expect(await pty.expect("a, b or abort>"))
        pty.send("b\r")
        #expect(await pty.expect("hidden"))
        #expect(!pty.echoes)
    }

    /// A store with the imported backup and a walkthrough that has found it and asks the
    /// runbook's "no reset" question.
    func walkthroughAtTheFactorQuestion(_ cli: inout CLI) async throws -> PTY {
        _ = try await cli.bootstrap()
        try await importBackup(cli)
        let pty = try PTY(arguments: ["reset", "walkthrough"], environment: cli.environment)
        #expect(await pty.expect("backup or factor>"))
        pty.send(Self.backupId + "\r")
        #expect(await pty.expect("still have ANY factor listed above? (yes/no)>"))
        return pty
    }

    @Test(arguments: CLI.Mode.allCases) func aWrongTenantNameAtConfirmationChangesNothing(_ mode: CLI.Mode) async throws
    {
        var cli = CLI(mode: mode)
        defer { cli.cleanUp() }
        let pty = try await walkthroughAtTheFactorQuestion(&cli)
        await Self.answerUpToTheHiddenPrompt(pty)
        pty.send(Self.rootKey + "\r")
        #expect(await pty.expect("tenant>"), "\(pty.transcript)")
        pty.send("production\r")
        try #require(await pty.waitForExit())
        #expect(pty.status == 1, "\(pty.transcript)")
        #expect(try await cli.run(["show", Self.backupId]).status == 0)
    }

    /// The runbook's "no reset" test comes first: a user who still has a listed factor gets no
    /// challenge, and nothing is issued, audited as a reset or changed.
    @Test(arguments: CLI.Mode.allCases) func aUserWhoStillHasAFactorGetsNoReset(_ mode: CLI.Mode) async throws {
        var cli = CLI(mode: mode)
        defer { cli.cleanUp() }
        let pty = try await walkthroughAtTheFactorQuestion(&cli)
        pty.send("yes\r")
        #expect(await pty.expect("No reset"), "\(pty.transcript)")
        #expect(await pty.waitForExit())
        #expect(!pty.transcript.contains("challenge:"))
        #expect(try await cli.run(["show", Self.backupId]).status == 0)
        let audit = try await cli.run(["--format", "json", "audit", "list", "--limit", "50"])
        #expect(!audit.stdout.contains("reset.begin") && !audit.stdout.contains("reset.complete"))
    }

    /// The hidden prompt is the prompt's own: a Root Key typed over several lines (pretty JSON)
    /// stays hidden to its closing brace, Ctrl-Z cannot suspend it (it would resume with echo
    /// on), and an answer other than a, b or abort is asked again, never taken as a signature.
    /// In the REPL, Ctrl-C at a walkthrough prompt cancels the walkthrough, and the session
    /// goes on.
    @Test func aKeyTypedOverSeveralLinesStaysHiddenAndCtrlZDoesNothing() async throws {
        var cli = CLI(mode: .inProcess)
        defer { cli.cleanUp() }
        _ = try await cli.bootstrap()
        try await importBackup(cli)
        let pty = try PTY(arguments: [], environment: cli.environment.merging(["TERM": "xterm"]) { $1 })
        #expect(await pty.expect("> "))
        pty.send("reset walkthrough\r")
        #expect(await pty.expect("backup or factor>"))
        pty.send(Self.backupId + "\r")
        #expect(await pty.expect("still have ANY factor listed above? (yes/no)>"))
        pty.send("no\r")
        #expect(await pty.expect("Issue a reset challenge? (yes/no)>"))
        pty.send("yes\r")
        #expect(await pty.expect("a, b or abort>"))
        pty.send("version\r")
        #expect(await pty.expect("Answer a, b or abort."), "\(pty.transcript)")
        pty.send("b\r")
        #expect(await pty.expect("hidden"))
        pty.send("{\r  \"version\": \"V1\",\r\u{1A}")
        pty.send("  \"key\": \"000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f\"\r}\r")
        #expect(await pty.expect("tenant>"), "\(pty.transcript)")
        #expect(!pty.transcript.contains("0102030405060708090a0b0c0d0e0f"), "the Root Key must never be echoed")
        #expect(!pty.transcript.contains("version\": "), "nor any line of it")
        pty.send("\u{03}")
        #expect(await pty.expect("Cancelled"), "\(pty.transcript)")
        pty.send("whoami\r")
        #expect(await pty.expect("operator:"), "the session goes on: \(pty.transcript)")
        pty.send("quit\r")
        try #require(await pty.waitForExit())
        #expect(try await cli.run(["show", Self.backupId]).status == 0, "Ctrl-C at the confirmation wiped nothing")
    }

    /// An Enter before anything is typed does not end the hidden prompt (the pasted key after it
    /// would land on the next, visible prompt), and a pasted CRLF ends it once.
    @Test func anEmptyEnterDoesNotEndTheHiddenPrompt() async throws {
        let cli = CLI()
        defer { cli.cleanUp() }
        let pty = try PTY(arguments: ["--format", "json", "recovery", "derive"], environment: cli.environment)
        #expect(await pty.expect("hidden"), "\(pty.transcript)")
        pty.send("\r")
        pty.send(Self.rootKey + "\r\n")
        #expect(await pty.expect("backup_account_"), "\(pty.transcript)")
        try #require(await pty.waitForExit())
        #expect(pty.status == 0, "\(pty.transcript)")
        #expect(!pty.transcript.contains("0102030405060708090a0b0c0d0e0f"), "the Root Key must never be echoed")
    }
}
