import BackupModel
import Foundation
import GRDB
import Testing

/// The hostile-input corpus in `Tests/Corpus`: bad script lines, bad global flags, bad exports
/// and bad index rows, each run through the real binary. Every case must end in one line of
/// error with a code (`error[code]: …`, or one JSON object in JSON mode) and a non-zero exit —
/// never a crash — and leave the store as it was apart from audited refusals.
@Suite(.serialized, .timeLimit(.minutes(10))) struct HostileInputCorpusTests {
    static let corpus = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Corpus")
    static let repoRoot = corpus.deletingLastPathComponent().deletingLastPathComponent()
    static let key = String(repeating: "0123456789abcdef", count: 4)

    static func cases(_ file: String) throws -> [[String: Any]] {
        let text = try String(contentsOf: corpus.appendingPathComponent(file), encoding: .utf8)
        return text.split(separator: "\n").compactMap {
            (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any]
        }
    }

    /// A store with the runbook fixture export imported and a viewer, so refusals have data to guard.
    func prepared() async throws -> (CLI, viewerToken: String) {
        var cli = CLI()
        _ = try await cli.bootstrap()
        let fixture = Self.repoRoot.appendingPathComponent("runbooks/fixtures/export").path
        let imported = try await cli.run(["import", fixture])
        #expect(imported.status == 0, "\(imported.stderr)")
        let added = try await cli.run([
            "--format", "json", "operator", "add", "vera", "--tenant", "sandbox", "--role", "viewer",
        ])
        let token = CLI.json(added.stdout)?["token"] as? String ?? ""
        #expect(!token.isEmpty, "\(added.stderr)")
        return (cli, token)
    }

    /// Every table's rows, the audit apart, plus the audit entries in order.
    struct Snapshot: Equatable {
        var tables: [String: [String]]
        var audit: [[String]]
    }

    func snapshot(_ cli: CLI) throws -> Snapshot {
        let queue = try DatabaseQueue(path: cli.dbPath)
        return try queue.read { db in
            var tables: [String: [String]] = [:]
            let names = try String.fetchAll(
                db, sql: "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")
            for name in names where name != "audit" {
                tables[name] = try Row.fetchAll(db, sql: "SELECT * FROM \"\(name)\"").map(\.description).sorted()
            }
            let audit = try Row.fetchAll(db, sql: "SELECT seq, action, details FROM audit ORDER BY seq").map {
                [String($0[0] as Int64), $0[1] as String, $0[2] as String]
            }
            return Snapshot(tables: tables, audit: audit)
        }
    }

    /// Unchanged, except new audit entries that record a refusal: `access.denied`, or an
    /// `import` run that imported nothing.
    func expectUnchanged(_ before: Snapshot, _ after: Snapshot, _ name: String) {
        #expect(after.tables == before.tables, "\(name): the store changed")
        #expect(Array(after.audit.prefix(before.audit.count)) == before.audit, "\(name): audit rewritten")
        for entry in after.audit.dropFirst(before.audit.count) {
            let refusal =
                entry[1] == "access.denied"
                || (entry[1] == "import" && entry[2].contains(#""imported":"0""#)
                    && entry[2].contains(#""lookupRows":"0""#))
            #expect(refusal, "\(name): audited \(entry[1]) \(entry[2])")
        }
    }

    /// One line on stderr naming a code, nothing that drives a terminal, nothing key-shaped.
    func expectOneLineError(_ result: CLI.Result, json: Bool, _ name: String) {
        #expect([1, 2, 64, 77, 78].contains(result.status), "\(name): exit \(result.status)\n\(result.stderr)")
        let lines = result.stderr.split(separator: "\n", omittingEmptySubsequences: true)
        #expect(lines.count == 1, "\(name): stderr \(result.stderr.debugDescription)")
        let line = String(lines.first ?? "")
        if json {
            let object = CLI.json(line)?["error"] as? [String: Any]
            #expect((object?["code"] as? String)?.isEmpty == false, "\(name): \(line)")
            #expect(object?["message"] is String, "\(name): \(line)")
        } else {
            // A batch names the script and line first: `-c:1: error[code]: …`.
            let located = line.range(of: #"^[^ ]+:[0-9]+: "#, options: .regularExpression).map {
                line[$0.upperBound...]
            }
            let body = located.map(String.init) ?? line
            #expect(body.hasPrefix("error[") && body.contains("]: "), "\(name): \(line)")
        }
        for text in [result.stderr, result.stdout] {
            #expect(!text.unicodeScalars.contains { $0 != "\n" && UntrustedText.isControl($0) }, "\(name)")
            #expect(!text.contains(Self.key.prefix(32)) && !text.contains(Self.key.suffix(32)), "\(name)")
        }
    }

    @Test("bad script lines") func badLines() async throws {
        var (cli, viewer) = try await prepared()
        defer { cli.cleanUp() }
        let before = try snapshot(cli)
        let cases = try Self.cases("lines.jsonl")
        #expect(cases.count >= 40)
        for (n, item) in cases.enumerated() {
            let name = item["case"] as? String ?? "?"
            let line = item["line"] as? String ?? ""
            let script = cli.directory.appendingPathComponent("case-\(n).txt")
            try Data((line + "\n").utf8).write(to: script)
            for json in [false, true] {
                let result = try await cli.run((json ? ["--format", "json"] : []) + ["-f", script.path])
                expectOneLineError(result, json: json, name)
            }
        }
        // The same lines from a viewer: refusals where the role is short, audited as such.
        cli.environment["BACKUPCTL_TOKEN"] = viewer
        for line in ["audit verify", "import /nonexistent", "operator add eve --tenant sandbox --role admin"] {
            let result = try await cli.run(["-c", line])
            expectOneLineError(result, json: false, line)
            #expect(result.status == 77, "\(line)")
        }
        let after = try snapshot(cli)
        expectUnchanged(before, after, "lines")
        #expect(after.audit.filter { $0[1] == "access.denied" }.count >= 5)
    }

    @Test("bad global flags") func badFlags() async throws {
        let (cli, _) = try await prepared()
        defer { cli.cleanUp() }
        let before = try snapshot(cli)
        for item in try Self.cases("flags.jsonl") {
            let name = item["case"] as? String ?? "?"
            let argv = item["argv"] as? [String] ?? []
            let result = try await cli.run(argv)
            expectOneLineError(result, json: argv.contains("json"), name)
        }
        expectUnchanged(before, try snapshot(cli), "flags")
    }

    @Test("bad exports and index rows are refused one by one") func badExports() async throws {
        let (cli, _) = try await prepared()
        defer { cli.cleanUp() }
        let before = try snapshot(cli)
        let id = "backup_account_030b2e4ce2de76318c0ef50964d225910b64019d8e43620d6d166b6bd100ad26e8"
        var seen = 0
        for (n, item) in (try Self.cases("exports.jsonl") + Self.cases("index.jsonl")).enumerated() {
            let name = item["case"] as? String ?? "?"
            let root = cli.directory.appendingPathComponent("export-\(n)")
            try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
            if let metadata = item["metadata"] {
                let dir = root.appendingPathComponent(id)
                try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
                try JSONSerialization.data(withJSONObject: metadata).write(to: dir.appendingPathComponent("metadata"))
            }
            if let row = item["row"] {
                try JSONSerialization.data(withJSONObject: row).write(
                    to: root.appendingPathComponent("factor_lookup.jsonl"))
            }
            for json in [false, true] {
                let result = try await cli.run((json ? ["--format", "json"] : []) + ["import", root.path])
                expectOneLineError(result, json: json, name)
                #expect(result.status == 1, "\(name)")
                if json {
                    let report = CLI.json(result.stdout)
                    let problems = report?["problems"] as? [[String: Any]] ?? []
                    #expect(problems.count == 1, "\(name): \(result.stdout)")
                    #expect(problems.first?["code"] as? String == item["code"] as? String, "\(name): \(result.stdout)")
                    #expect(report?["imported"] as? Int == 0)
                } else {
                    #expect(result.stdout.contains("Problems"), "\(name)")
                }
            }
            seen += 1
        }
        #expect(seen >= 25)
        expectUnchanged(before, try snapshot(cli), "exports")
    }

    @Test("teardown-request with an unwritable --out leaves no journal item and no audit entry")
    func teardownRequestUnwritableOut() async throws {
        let (cli, _) = try await prepared()
        defer { cli.cleanUp() }
        let before = try snapshot(cli)
        let subOrg = "7d3e0a52-2f7e-4c1e-9a36-0c4f6f0b8a99"
        let result = try await cli.run([
            "cleanup", "teardown-request", subOrg, "--out",
            cli.directory.appendingPathComponent("no/such/dir/body").path,
        ])
        expectOneLineError(result, json: false, "teardown-request")
        #expect(result.stderr.contains("invalid_file"))
        #expect(try snapshot(cli) == before)
        // A writable --out then works, and journals and audits once.
        let out = cli.directory.appendingPathComponent("body.json")
        let ok = try await cli.run(["cleanup", "teardown-request", subOrg, "--out", out.path])
        #expect(ok.status == 0, "\(ok.stderr)")
        #expect(try Data(contentsOf: out).starts(with: Data("{".utf8)))
        #expect(try snapshot(cli).audit.last?[1] == "cleanup.teardown_request")
    }
}
