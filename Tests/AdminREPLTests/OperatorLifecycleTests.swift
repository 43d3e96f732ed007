import Foundation
import Testing

/// Issue 14 through the real binary: backup id prefixes, `check` filters, `backups list`,
/// operator and tenant lifecycle, audit filters, and the list formats.
@Suite(.timeLimit(.minutes(10))) struct OperatorLifecycleTests {
    static func error(_ result: CLI.Result) -> [String: Any]? {
        CLI.json(result.stderr.split(separator: "\n").last.map(String.init) ?? "")?["error"] as? [String: Any]
    }

    /// Two seeded backups whose ids share their first `digits` hex digits, in a 300-backup sandbox.
    static func sharedPrefix(_ cli: CLI, digits: Int) async throws -> (String, String) {
        #expect(try await cli.run(["seed", "--backups", "300", "--seed", "5"]).status == 0)
        let listed = CLI.json(try await cli.run(["--format", "json", "backups", "list", "--limit", "300"]).stdout)
        let ids = (listed?["backups"] as? [[String: Any]])?.compactMap { $0["backupId"] as? String } ?? []
        #expect(ids.count == 300)
        let prefix = "backup_account_".count
        for (a, b) in zip(ids, ids.dropFirst())
        where a.dropFirst(prefix).prefix(digits) == b.dropFirst(prefix).prefix(digits) {
            return (a, b)
        }
        Issue.record("no two of 300 seeded ids share \(digits) hex digits")
        return ("", "")
    }

    @Test(arguments: CLI.Mode.allCases) func uniquePrefixesResolveAndAmbiguousOnesListTheCandidates(_ mode: CLI.Mode)
        async throws
    {
        var cli = CLI(mode: mode)
        defer { cli.cleanUp() }
        _ = try await cli.bootstrap()
        let (first, second) = try await Self.sharedPrefix(cli, digits: 4)
        let short = String(first.dropFirst("backup_account_".count).prefix(4))

        let ambiguous = try await cli.run(["--format", "json", "show", short])
        #expect(ambiguous.status == 1 && ambiguous.stdout.isEmpty)
        let error = Self.error(ambiguous)
        #expect(error?["code"] as? String == "ambiguous_id")
        let message = error?["message"] as? String ?? ""
        #expect(message.contains(first) && message.contains(second))

        // Enough digits to tell them apart: `show` answers with the full id in JSON.
        var digits = 5
        while first.dropFirst(15).prefix(digits) == second.dropFirst(15).prefix(digits) { digits += 1 }
        for typed in [String(first.dropFirst(15).prefix(digits)), String(first.prefix(15 + digits)), first] {
            let shown = try await cli.run(["--format", "json", "show", typed])
            #expect(shown.status == 0, "\(typed): \(shown.stderr)")
            #expect(CLI.json(shown.stdout)?["backupId"] as? String == first)
        }
        // The shortened form tables print is accepted as typed.
        let abbreviated = String(first.prefix(23)) + "…" + String(first.suffix(4))
        #expect(
            CLI.json(try await cli.run(["--format", "json", "check", abbreviated]).stdout)?["scope"] as? String
                == "backup")

        let missing = try await cli.run(["--format", "json", "show", "ffffffff"])
        #expect(missing.status == 1 && Self.error(missing)?["code"] as? String == "not_found")
        for bad in ["03", "xyz123", "backup_account_zz99"] {
            let invalid = try await cli.run(["--format", "json", "show", bad])
            #expect(invalid.status == 1 && Self.error(invalid)?["code"] as? String == "invalid_backup_account_id")
        }
    }

    @Test(arguments: CLI.Mode.allCases) func checkFiltersListOnlyWhatWasAskedAndStillCountEverything(_ mode: CLI.Mode)
        async throws
    {
        var cli = CLI(mode: mode)
        defer { cli.cleanUp() }
        _ = try await cli.bootstrap()
        #expect(try await cli.run(["seed", "--backups", "1000", "--seed", "5"]).status == 0)
        let all = try await cli.run(["--format", "json", "check"])
        let report = CLI.json(all.stdout)
        let failing = report?["backupsFailing"] as? Int ?? 0
        #expect(failing > 0 && all.status == 1)

        let onlyFailing = try await cli.run(["--format", "json", "check", "--failing", "--limit", "3"])
        #expect(onlyFailing.status == 1)
        let filtered = CLI.json(onlyFailing.stdout)
        let findings = filtered?["findings"] as? [[String: Any]] ?? []
        #expect(findings.count == 3 && findings.allSatisfy { $0["status"] as? String == "fail" })
        #expect(filtered?["backupsFailing"] as? Int == failing)
        #expect((filtered?["findingsTotal"] as? Int ?? 0) < (report?["findingsTotal"] as? Int ?? 0))

        let byCheck = CLI.json(
            try await cli.run(["--format", "json", "check", "--check", "lookup_rows_missing"]).stdout)
        let checks = Set((byCheck?["findings"] as? [[String: Any]] ?? []).compactMap { $0["check"] as? String })
        #expect(checks == ["lookup_rows_missing"])

        let unknown = try await cli.run(["--format", "json", "check", "--check", "nope"])
        #expect(unknown.status == 1 && Self.error(unknown)?["code"] as? String == "unknown_check")
        #expect(try await cli.run(["check", "--limit", "0"]).status == 1)

        // Every listed failing backup is one `backups list --health fail` lists too.
        let listed = CLI.json(
            try await cli.run(["--format", "json", "backups", "list", "--health", "fail", "--limit", "1000"]).stdout)
        let failingIds = Set((listed?["backups"] as? [[String: Any]] ?? []).compactMap { $0["backupId"] as? String })
        #expect(failingIds.count == failing)
        #expect(Set(findings.compactMap { $0["backupId"] as? String }).isSubset(of: failingIds))
        let csv = try await cli.run(["--format", "csv", "check", "--failing"])
        #expect(csv.stdout.hasPrefix("backupId,check,status,detail\n"))
    }

    @Test(arguments: CLI.Mode.allCases) func backupsListFiltersAndRejectsBadFilters(_ mode: CLI.Mode) async throws {
        var cli = CLI(mode: mode)
        defer { cli.cleanUp() }
        _ = try await cli.bootstrap()
        #expect(try await cli.run(["seed", "--backups", "60", "--seed", "9"]).status == 0)
        let passkeys = CLI.json(
            try await cli.run(["--format", "json", "backups", "list", "--factor-kind", "passkey", "--limit", "100"])
                .stdout)
        let rows = passkeys?["backups"] as? [[String: Any]] ?? []
        #expect(!rows.isEmpty && rows.count < 60)
        #expect(rows.allSatisfy { ($0["factors"] as? [String])?.contains("PASSKEY") == true })
        let limited = CLI.json(try await cli.run(["--format", "json", "backups", "list", "--limit", "5"]).stdout)
        #expect((limited?["backups"] as? [Any])?.count == 5 && limited?["truncated"] as? Bool == true)
        // Seeded factors are spread over two years: newer and older than 400 days split the 60.
        func count(_ filter: [String]) async throws -> Int {
            let listed = CLI.json(
                try await cli.run(["--format", "json", "backups", "list", "--limit", "100"] + filter).stdout)
            return (listed?["backups"] as? [Any])?.count ?? -1
        }
        let newer = try await count(["--newer-than", "400d"])
        let older = try await count(["--older-than", "400d"])
        #expect(newer > 0 && older > 0 && newer + older == 60)
        await #expect(try count(["--older-than", "3650d"]) == 0)
        for bad in [
            ["--factor-kind", "sms"], ["--health", "bad"], ["--older-than", "soon"], ["--limit", "0"],
        ] {
            let result = try await cli.run(["--format", "json", "backups", "list"] + bad)
            #expect(result.status == 1, "\(bad)")
            #expect(result.stdout.isEmpty)
        }
        #expect(try await cli.run(["--format", "csv", "whoami"]).status == 64)
        #expect(try await cli.run(["--format", "xml", "whoami"]).status == 64)
    }

    @Test(arguments: CLI.Mode.allCases) func rotatedTokenReplacesTheOldOneAtOnce(_ mode: CLI.Mode) async throws {
        var cli = CLI(mode: mode)
        defer { cli.cleanUp() }
        let rootToken = try await cli.bootstrap()
        let added = CLI.json(
            try await cli.run(["--format", "json", "operator", "add", "bob", "--tenant", "sandbox", "--role", "viewer"])
                .stdout)
        let bobOld = try #require(added?["token"] as? String)
        let rotated = try await cli.run(["--format", "json", "operator", "token", "rotate", "bob"])
        #expect(rotated.status == 0)
        let bobNew = try #require(CLI.json(rotated.stdout)?["token"] as? String)
        #expect(bobNew != bobOld)
        #expect(try await cli.run(["whoami"], extraEnvironment: ["BACKUPCTL_TOKEN": bobOld]).status == 77)
        #expect(try await cli.run(["whoami"], extraEnvironment: ["BACKUPCTL_TOKEN": bobNew]).status == 0)
        // bob may rotate his own token, but not root's.
        let own = try await cli.run(
            ["--format", "json", "operator", "token", "rotate", "bob"], extraEnvironment: ["BACKUPCTL_TOKEN": bobNew])
        #expect(own.status == 0)
        let other = try await cli.run(
            ["operator", "token", "rotate", "root"],
            extraEnvironment: ["BACKUPCTL_TOKEN": CLI.json(own.stdout)?["token"] as? String ?? ""])
        #expect(other.status == 77)
        #expect(try await cli.run(["whoami"], extraEnvironment: ["BACKUPCTL_TOKEN": rootToken]).status == 0)
        let audit = try await cli.run(["--format", "json", "audit", "list", "--action", "operator.token_rotate"])
        let entries = CLI.json(audit.stdout)?["entries"] as? [[String: Any]] ?? []
        #expect(entries.count == 2)
        // No token in the audit log.
        let everything = try await cli.run(["--format", "json", "audit", "list", "--limit", "1000"]).stdout
        #expect(!everything.contains(bobNew) && !everything.contains(bobOld))
    }

    @Test(arguments: CLI.Mode.allCases) func operatorRemoveAndTenantDeleteAreConfirmedAndAudited(_ mode: CLI.Mode)
        async throws
    {
        var cli = CLI(mode: mode)
        defer { cli.cleanUp() }
        _ = try await cli.bootstrap()
        let added = CLI.json(
            try await cli.run([
                "--format", "json", "operator", "add", "carol", "--tenant", "sandbox", "--role", "support",
            ])
            .stdout)
        let carol = try #require(added?["token"] as? String)
        #expect(try await cli.run(["operator", "remove", "carol"]).status == 64)
        #expect(try await cli.run(["whoami"], extraEnvironment: ["BACKUPCTL_TOKEN": carol]).status == 0)
        #expect(try await cli.run(["--yes", "operator", "remove", "carol"]).status == 0)
        #expect(try await cli.run(["whoami"], extraEnvironment: ["BACKUPCTL_TOKEN": carol]).status == 77)
        #expect(try await cli.run(["--yes", "operator", "remove", "root"]).status == 1)

        #expect(try await cli.run(["tenant", "create", "scratch", "--sandbox"]).status == 0)
        #expect(try await cli.run(["--tenant", "scratch", "seed", "--backups", "5"]).status == 0)
        #expect(try await cli.run(["tenant", "delete", "scratch"]).status == 64)
        let deleted = try await cli.run(["--format", "json", "--yes", "tenant", "delete", "scratch"])
        #expect(deleted.status == 0)
        #expect(CLI.json(deleted.stdout)?["backups"] as? Int == 5)
        let tenants = try await cli.run(["--format", "json", "tenant", "list"]).stdout
        #expect(!tenants.contains("scratch"))
        #expect(try await cli.run(["--yes", "tenant", "delete", "scratch"]).status != 0)
        // The chain still verifies, and the deletion is in it.
        #expect(try await cli.run(["audit", "verify"]).status == 0)
        let log = try await cli.run([
            "--format", "json", "audit", "list", "--operator", "root", "--action", "operator.",
        ])
        let actions = (CLI.json(log.stdout)?["entries"] as? [[String: Any]] ?? []).compactMap {
            $0["action"] as? String
        }
        #expect(actions.contains("operator.remove") && actions.allSatisfy { $0.hasPrefix("operator.") })
        let since = try await cli.run(["--format", "json", "audit", "list", "--since", "1h", "--limit", "500"])
        #expect((CLI.json(since.stdout)?["entries"] as? [Any])?.isEmpty == false)
        let future = try await cli.run(["--format", "json", "audit", "list", "--since", "2999-01-01"])
        #expect((CLI.json(future.stdout)?["entries"] as? [Any])?.isEmpty == true)
        #expect(try await cli.run(["audit", "list", "--since", "yesterday"]).status == 1)
        #expect(try await cli.run(["audit", "list", "--action", "a b"]).status == 1)
    }
}
