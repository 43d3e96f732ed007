import BackupctlTestSupport
import Foundation
import GRDB
import Testing

/// A script's lookups commit their audit entries together (at most 256 lines or 50 ms), and
/// each line is shown only once its entry is committed.
@Suite(.timeLimit(.minutes(10))) struct GroupedAuditTests {
    /// A sandbox with seeded backups; returns the passkey credential ids the seed stored.
    func seeded(_ cli: inout CLI) async throws -> [String] {
        _ = try await cli.bootstrap()
        #expect(try await cli.run(["--tenant", "sandbox", "seed", "--backups", "12", "--seed", "5"]).status == 0)
        let queue = try DatabaseQueue(path: cli.dbPath)
        return try await queue.read { db in
            try String.fetchAll(
                db, sql: "SELECT substr(pk, 9) FROM factor_lookup WHERE pk LIKE 'MAIN#PK|%' ORDER BY pk LIMIT 8")
        }
    }

    /// Makes the store refuse the audit entries of lookups (of one backup, with `backupId`), as
    /// a full disk or a broken store would: the commit that holds one fails.
    func refuseLookupAudits(_ cli: CLI, of backupId: String? = nil) async throws {
        let target = backupId.map { " AND NEW.target = '\($0)'" } ?? ""
        let queue = try DatabaseQueue(path: cli.dbPath)
        try await queue.write { db in
            try db.execute(
                sql: """
                    CREATE TRIGGER refuse_lookups BEFORE INSERT ON audit
                    WHEN NEW.action = 'backup.lookup'\(target)
                    BEGIN SELECT RAISE(ABORT, 'refused by the test'); END
                    """)
        }
    }

    @Test func scriptedLookupsAreAllAuditedInOrderWithTheSameOutput() async throws {
        var cli = CLI()
        defer { cli.cleanUp() }
        let ids = try await seeded(&cli)
        #expect(ids.count == 8)
        let lines =
            ids.prefix(4).map { "lookup passkey \($0)" } + ["whoami"] + ids.dropFirst(4).map { "lookup passkey \($0)" }
        let script = cli.directory.appendingPathComponent("lookups.bctl")
        try lines.joined(separator: "\n").write(to: script, atomically: true, encoding: .utf8)
        let batch = try await cli.run([
            "--format", "json", "--tenant", "sandbox", "--continue-on-error", "-f", script.path,
        ])
        var oneByOne = CLI.Result(stdout: "", stderr: "", termination: .exited(0))
        for line in lines {
            let single = try await cli.run(["--format", "json", "--tenant", "sandbox", "-c", line])
            oneByOne.stdout += single.stdout
            oneByOne.stderr += single.stderr
        }
        #expect(batch.stdout == oneByOne.stdout)
        #expect(batch.stderr == oneByOne.stderr)

        let audit = try await cli.run(["--format", "json", "--tenant", "sandbox", "audit", "list", "--limit", "100"])
        let entries = (CLI.json(audit.stdout)?["entries"] as? [[String: Any]]) ?? []
        let lookups = entries.filter { $0["action"] as? String == "backup.lookup" }
        // The batch's eight, then the same eight run one by one.
        #expect(lookups.count == 16)
        let targets = lookups.compactMap { $0["target"] as? String }
        #expect(Array(targets.prefix(8)) == Array(targets.suffix(8)))
        #expect(try await cli.run(["--tenant", "sandbox", "audit", "verify"]).status == 0)
    }

    /// The reads of consecutive lookups run ahead of their lines; a script that stops at a
    /// failed one has read (and audited) nothing after it, and a line with its own options
    /// still gets them.
    @Test func readsRunAheadNoFurtherThanTheScriptGoes() async throws {
        var cli = CLI()
        defer { cli.cleanUp() }
        let ids = try await seeded(&cli)
        func lookups() async throws -> Int {
            let audit = try await cli.run([
                "--format", "json", "--tenant", "sandbox", "audit", "list", "--limit", "500",
            ])
            let entries = (CLI.json(audit.stdout)?["entries"] as? [[String: Any]]) ?? []
            return entries.filter { $0["action"] as? String == "backup.lookup" }.count
        }
        let stopping = [
            "lookup passkey \(ids[0])", "lookup passkey \(ids[1]) --format yaml", "lookup passkey \(ids[2])",
            "lookup passkey AAAAAAAAAAAAAAAAAAAAAA", "lookup passkey \(ids[3])", "lookup passkey \(ids[4])",
        ]
        let before = try await lookups()
        let batch = try await cli.run(
            ["--format", "json", "--tenant", "sandbox", "-f", "-"], stdin: stopping.joined(separator: "\n"))
        #expect(batch.status != 0)
        let afterBatch = try await lookups()

        // The same lines one by one, up to the one that failed.
        var oneByOne = ""
        for line in stopping.prefix(4) {
            let single = try await cli.run(["--format", "json", "--tenant", "sandbox", "-c", line])
            if line != stopping[3] { oneByOne += single.stdout }
        }
        let afterSingles = try await lookups()
        #expect(afterBatch - before == afterSingles - afterBatch)
        #expect(batch.stdout.hasPrefix(oneByOne))
        let rest = batch.stdout.dropFirst(oneByOne.count)
        #expect(rest.contains(#""code":"not_found""#) && rest.contains(#""line":4"#), "\(rest)")
        #expect(rest.split(separator: "\n").count == 1)
        #expect(batch.stdout.contains("backupId: "), "the yaml line keeps its format")
        #expect(!batch.stdout.contains(ids[3]) && !batch.stdout.contains(ids[4]))
        #expect(try await cli.run(["--tenant", "sandbox", "audit", "verify"]).status == 0)
    }

    @Test func outputIsWithheldWhenItsAuditCannotBeWritten() async throws {
        var cli = CLI()
        defer { cli.cleanUp() }
        let ids = try await seeded(&cli)
        try await refuseLookupAudits(cli)
        let script = ids.prefix(3).map { "lookup passkey \($0)" }.joined(separator: "\n")
        let batch = try await cli.run(["--tenant", "sandbox", "-f", "-"], stdin: script)
        #expect(batch.status != 0)
        #expect(batch.stdout.isEmpty)
        #expect(batch.stderr.contains("refused by the test"))
        #expect(!batch.stderr.contains("backup_account_"))
        let single = try await cli.run(["--tenant", "sandbox", "lookup", "passkey", ids[0]])
        #expect(single.status != 0)
        #expect(single.stdout.isEmpty)

        // In JSON mode each refused lookup gets its error in its own line; the command after
        // them, whose audit is written, runs and shows its output.
        let json = try await cli.run(
            ["--format", "json", "--tenant", "sandbox", "--continue-on-error", "-f", "-"], stdin: script + "\nwhoami\n")
        #expect(json.status != 0)
        let lines = json.lines.map { CLI.json($0) }
        #expect(lines.count == 4, "\(json.stdout)")
        #expect(lines.map { $0?["line"] as? Int }.prefix(3) == [1, 2, 3])
        #expect(lines.prefix(3).allSatisfy { $0?["error"] != nil })
        #expect(lines.last??["error"] == nil)
        #expect(!json.stdout.contains("backup_account_"))

        // With --continue-on-error a failed read is held in its place like the others; the
        // commit that fails takes the entries of all four reads, which stay unshown.
        let ahead = [
            "lookup passkey \(ids[0])", "lookup passkey AAAAAAAAAAAAAAAAAAAAAA", "lookup passkey \(ids[1])",
            "lookup passkey \(ids[2])", "whoami",
        ]
        let mixed = try await cli.run(
            ["--format", "json", "--tenant", "sandbox", "--continue-on-error", "-f", "-"],
            stdin: ahead.joined(separator: "\n"))
        #expect(mixed.status != 0)
        let mixedLines = mixed.lines.map { CLI.json($0) }
        #expect(mixedLines.count == 5, "\(mixed.stdout)")
        #expect(mixedLines.prefix(4).allSatisfy { $0?["error"] != nil }, "\(mixed.stdout)")
        #expect(mixedLines.map { $0?["line"] as? Int }.prefix(4) == [1, 2, 3, 4])
        #expect(!mixed.stdout.contains("backup_account_"), "\(mixed.stdout)")
    }

    /// A script run from a terminal groups its reads like a piped one (only the REPL shows each
    /// read as its line is typed): its output waits for the group's commit, and a refused commit
    /// withholds it with the group's message, not each lookup's own error.
    @Test func aScriptAtATerminalGroupsItsReads() async throws {
        var cli = CLI()
        defer { cli.cleanUp() }
        let ids = try await seeded(&cli)
        try await refuseLookupAudits(cli)
        let script = cli.directory.appendingPathComponent("at-terminal.bctl")
        try ids.prefix(3).map { "lookup passkey \($0)" }.joined(separator: "\n")
            .write(to: script, atomically: true, encoding: .utf8)
        let pty = try PTY(arguments: ["--tenant", "sandbox", "-f", script.path], environment: cli.environment)
        defer { pty.child.killNow() }
        #expect(await pty.waitForExit(timeout: 120))
        #expect(pty.status != 0)
        #expect(pty.transcript.contains("since the last one printed was withheld"), "\(pty.transcript)")
        #expect(!pty.transcript.contains("backup_account_"), "\(pty.transcript)")
    }

    /// A group's entries commit while the script renders the next group, whose reads were made
    /// ahead and may have had their entries in that commit. When one of them is refused, no line
    /// of the refused read is shown: the lines rendered since are withheld with it.
    @Test func aRefusedEntryOfACommitBehindTheScriptIsNeverShown() async throws {
        var cli = CLI()
        defer { cli.cleanUp() }
        let ids = try await seeded(&cli)
        let found = try await cli.run(["--format", "json", "--tenant", "sandbox", "lookup", "passkey", ids[7]])
        let refused = try #require(CLI.json(found.stdout)?["backupId"] as? String)
        try await refuseLookupAudits(cli, of: refused)
        // More lines than one group holds; the refused read comes after the first group.
        let lines = (0..<700).map { "lookup passkey \(ids[$0 == 300 ? 7 : $0 % 7])" }
        let batch = try await cli.run(
            ["--format", "json", "--tenant", "sandbox", "--continue-on-error", "-f", "-"],
            stdin: lines.joined(separator: "\n"))
        #expect(batch.status != 0)
        let out = batch.lines.map { CLI.json($0) }
        #expect(out.count == lines.count, "every line gets its one stdout line")
        #expect(!batch.stdout.contains(refused))
        let withheld = out.filter { $0?["error"] != nil }
        #expect(!withheld.isEmpty)
        #expect(withheld.contains { $0?["line"] as? Int == 301 })
        #expect(try await cli.run(["--tenant", "sandbox", "audit", "verify"]).status == 0)
    }

    /// A script's reads made ahead check access once for the run (before and after it), not
    /// once each. A revocation that lands between two of them — at a checkpoint after the first
    /// — is honoured as if each read had checked: no answer of that run is shown, none of its
    /// entries is committed, and every line is refused as it would be on its own.
    @Test func aRevocationDuringTheReadsMadeAheadIsHonouredByEveryLine() async throws {
        var cli = CLI()
        defer { cli.cleanUp() }
        let ids = try await seeded(&cli)
        let added = try await cli.run([
            "--format", "json", "operator", "add", "vera", "--tenant", "sandbox", "--role", "viewer",
        ])
        let vera = try #require(CLI.json(added.stdout)?["token"] as? String, "\(added.stderr)")
        let script = ids.prefix(6).map { "lookup passkey \($0)" }.joined(separator: "\n")
        func lookupEntries() async throws -> [[String: Any]] {
            let audit = try await cli.run(["--format", "json", "audit", "list", "--limit", "500"])
            let entries = (CLI.json(audit.stdout)?["entries"] as? [[String: Any]]) ?? []
            return entries.filter { $0["action"] as? String == "backup.lookup" }
        }
        /// Runs the script as vera, paused after its first read until `meanwhile` has run.
        func paused(_ name: String, meanwhile: () async throws -> Void) async throws -> ChildResult {
            let resume = cli.directory.appendingPathComponent(name).path
            var environment = cli.environment
            environment["BACKUPCTL_TOKEN"] = vera
            environment["BACKUPCTL_PAUSE_AT"] = "read-ahead"
            environment["BACKUPCTL_RESUME_FILE"] = resume
            let console = try BackupctlBinary.start(
                ["--format", "json", "--tenant", "sandbox", "--continue-on-error", "-f", "-"],
                environment: environment, input: .data(Data(script.utf8)))
            defer { console.killNow() }
            #expect(await console.waitForStderr(#""paused":"read-ahead""#, seconds: 120), "\(console.stderr)")
            try await meanwhile()
            #expect(FileManager.default.createFile(atPath: resume, contents: Data()))
            return try await console.result(seconds: 120)
        }

        // Nothing changes while paused: the six answers are shown, and audited in order.
        let kept = try await paused("resume-1") {}
        #expect(kept.status == 0, "\(kept.stderr)")
        #expect(kept.lines.count == 6 && kept.stdout.components(separatedBy: "backup_account_").count == 7)
        #expect(try await lookupEntries().count == 6)

        // Vera's grant is revoked after the first read: all six lines are refused.
        let refused = try await paused("resume-2") {
            let revoked = try await cli.run(["operator", "revoke", "vera", "--tenant", "sandbox"])
            #expect(revoked.status == 0)
        }
        #expect(refused.status == 77, "\(refused.stderr)")
        let lines = refused.lines.map { CLI.json($0) }
        #expect(lines.count == 6, "\(refused.stdout)")
        #expect(lines.allSatisfy { ($0?["error"] as? [String: Any])?["code"] as? String == "permission_denied" })
        #expect(!refused.stdout.contains("backup_account_"), "\(refused.stdout)")
        #expect(try await lookupEntries().count == 6, "an entry of a read made under the revoked grant")
        #expect(try await cli.run(["audit", "verify"]).status == 0)
    }
}
