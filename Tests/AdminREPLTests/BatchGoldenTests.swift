import Foundation
import Testing

/// Issue 14 item 5: a batch's output lines up with its commands. In JSON mode every command
/// gives exactly one stdout line — its result or `{"error": {…}, "line": N}` — and every error
/// on stderr names the script and line. Compared byte for byte with `Goldens/batch-*`
/// (`UPDATE_GOLDENS=1` rewrites them; the script's path reads `SCRIPT` there).
@Suite(.serialized, .timeLimit(.minutes(10))) struct BatchGoldenTests {
    static let script = """
        # a support script run with --continue-on-error
        whoami
        use nowhere
        lookup passkey w6hZIQi3LVcwPvQekJSl_Q

        show nope   # not found, and this comment is not an argument
        lookup passkey AAAAAAAAAAAAAAAAAAAAAA
        show backup_account_030b2e4ce2de76318c0ef50964d225910b64019d8e43620d6d166b6bd100ad26e8
        lookup account not-an-id
        quit
        """

    /// The 1-based numbers of the script's command lines (not comments, not blank).
    static var commandLines: [Int] {
        script.split(separator: "\n", omittingEmptySubsequences: false).enumerated().compactMap { index, line in
            let text = line.trimmingCharacters(in: .whitespaces)
            return text.isEmpty || text.hasPrefix("#") ? nil : index + 1
        }
    }

    @Test(arguments: ["json", "table"], CLI.Mode.allCases)
    func aScriptWithFailuresLinesUp(_ format: String, _ mode: CLI.Mode) async throws {
        var cli = CLI(mode: mode)
        defer { cli.cleanUp() }
        _ = try await cli.bootstrap()
        cli.environment["NO_COLOR"] = "1"
        let export = GoldenTests.repoRoot.appendingPathComponent("runbooks/fixtures/export").path
        #expect(try await cli.run(["import", export]).status == 0)
        let path = cli.directory.appendingPathComponent("support.bctl").path
        try Self.script.write(toFile: path, atomically: true, encoding: .utf8)
        let result = try await cli.run(["--continue-on-error", "--format", format, "-f", path])
        #expect(result.status == 77, "the first failure's code (use nowhere): \(result.stderr)")
        let stderr = result.stderr.replacingOccurrences(of: path, with: "SCRIPT")

        if format == "json" {
            let lines = result.lines
            #expect(lines.count == Self.commandLines.count, "one stdout line per command: \(result.stdout)")
            for (line, number) in zip(lines, Self.commandLines) {
                let object = try #require(CLI.json(line), "not JSON: \(line)")
                if object["error"] != nil { #expect(object["line"] as? Int == number, "\(line)") }
            }
            for line in stderr.split(separator: "\n") {
                let object = CLI.json(String(line))
                #expect(object?["file"] as? String == "SCRIPT" && object?["line"] is Int, "\(line)")
            }
        } else {
            for line in stderr.split(separator: "\n") {
                #expect(line.hasPrefix("SCRIPT:") && line.contains(": error["), "\(line)")
            }
        }
        // `whoami` names the server it ran on (server modes only): the golden is the in-process one.
        var stdout = result.stdout
        if let server = cli.environment["BACKUPCTL_SERVER"] {
            stdout = stdout.replacingOccurrences(of: #","server":"\#(server)""#, with: "")
                .split(separator: "\n", omittingEmptySubsequences: false).filter { !$0.hasPrefix("server:") }
                .joined(separator: "\n")
        }
        try Self.compare(stdout, "batch-continue.stdout.\(format == "json" ? "json" : "txt")")
        try Self.compare(stderr, "batch-continue.stderr.\(format == "json" ? "json" : "txt")")
    }

    @Test(arguments: CLI.Mode.allCases) func pipedStdinAndDashCNameTheirLines(_ mode: CLI.Mode) async throws {
        var cli = CLI(mode: mode)
        defer { cli.cleanUp() }
        _ = try await cli.bootstrap()
        let piped = try await cli.run(["--continue-on-error"], stdin: "whoami\nfrobnicate\n")
        #expect(piped.stderr.hasPrefix("stdin:2: error[usage]:"), "\(piped.stderr)")
        let dashC = try await cli.run(["--format", "json", "-c", "whoami", "-c", "use nowhere"])
        #expect(dashC.status == 77)
        #expect(dashC.lines.count == 2)
        let error = CLI.json(dashC.lines.last ?? "")
        #expect(error?["line"] as? Int == 2)
        #expect((error?["error"] as? [String: Any])?["code"] as? String == "permission_denied")
        let stderr = CLI.json(dashC.stderr.trimmingCharacters(in: .newlines))
        #expect(stderr?["file"] as? String == "-c")
    }

    static func compare(_ actual: String, _ name: String) throws {
        let golden = GoldenTests.goldens.appendingPathComponent(name)
        if ProcessInfo.processInfo.environment["UPDATE_GOLDENS"] == "1" {
            try actual.write(to: golden, atomically: true, encoding: .utf8)
        }
        let expected = try String(contentsOf: golden, encoding: .utf8)
        #expect(actual == expected, "\(name) differs from its golden file; UPDATE_GOLDENS=1 rewrites it")
    }
}
