import BackupctlTestSupport
import Foundation
import Testing

/// Secrets typed or passed to a console of a real `backupctl serve` never reach the history
/// file, an error message or the pager's environment. Each case ends with the valid operator
/// served within 1 s.
@Suite(.serialized) struct SecretLeakAttackTests {
    static let key = String(repeating: "0123456789abcdef", count: 4)
    static let resetToken = "sbx.eyJiYWNrdXBJZCI6ImJhY2t1cF9hY2NvdW50XzAzIn0.c2lnbmF0dXJlLWJ5dGVz."
    static let jwe = "eyJhbGciOiJSU0EtT0FFUC0yNTYiLCJlbmMiOiJBMjU2R0NNIn0.a2V5.aXY.Y2lwaGVydGV4dA.dGFn"

    /// Lines an operator might type or paste, each carrying a secret in some shape.
    static var secretLines: [String] {
        let quarters = stride(from: 0, to: 64, by: 16).map { String(key.dropFirst($0).prefix(16)) }
        var lines = ["-", ",", ".", "/", "_", "|"].map { "lookup keypair " + quarters.joined(separator: $0) }
        lines += [String(key.prefix(32)), String(key.suffix(32))]  // one key over two lines
        lines += [
            "lookup passkey " + Data(repeating: 0xA5, count: 32).base64EncodedString(),
            "reset complete --signature-file x " + resetToken, "show " + jwe,
            "use " + Data(repeating: 0x5A, count: 32).base64EncodedString().replacingOccurrences(of: "/", with: "_"),
        ]
        return lines
    }

    /// A stretch of each secret in `secretLines` long enough that no error text holds it by chance.
    static var secretPieces: [String] {
        [
            String(key.prefix(16)), String(resetToken.dropFirst(4).prefix(16)), String(jwe.prefix(16)),
            String(Data(repeating: 0xA5, count: 32).base64EncodedString().prefix(16)),
            String(Data(repeating: 0x5A, count: 32).base64EncodedString().prefix(16)),
        ]
    }

    @Test func historyKeepsNoSecretInAnyShape() async throws {
        try await AttackServer.with { server in
            var environment = server.environment
            environment["BACKUPCTL_SERVER"] = server.url
            environment["BACKUPCTL_TOKEN"] = server.rootToken
            environment["BACKUPCTL_PAGER"] = ""
            let terminal = try PseudoTerminal()
            let repl = try BackupctlBinary.start(["--tenant", "sandbox"], environment: environment, terminal: terminal)
            #expect(await repl.waitForStdout("root@", seconds: 60), "\(repl.stdout)")
            repl.write("whoami\r")
            #expect(await repl.waitForStdout("operator:", seconds: 60))
            for (index, line) in Self.secretLines.enumerated() {
                repl.write(line + "\r")
                // Each line answered (an error) before the next is typed.
                #expect(
                    await repl.waitFor(seconds: 60) {
                        $0.stdoutText.components(separatedBy: "error[").count > index + 1
                    })
            }
            repl.write("stats\r")
            #expect(await repl.waitForStdout("backups", seconds: 60))
            repl.write("quit\r")
            #expect(await repl.wait(seconds: 60) != nil)
            let history = try String(
                contentsOfFile: server.directory.appendingPathComponent("state/backupctl/history").path,
                encoding: .utf8)
            #expect(history.contains("whoami") && history.contains("stats"), "\(history)")
            for line in Self.secretLines { #expect(!history.contains(line), "kept: \(line)") }
            #expect(!history.contains(String(Self.key.prefix(16))))
            // The terminal never showed a secret back in an error either. Only the error lines are
            // read: the terminal's echo of what the operator typed holds the secret by design (and
            // whole or split at the screen's edge, depending on how readline took the keys in).
            let errors = repl.stdout.split(whereSeparator: \.isNewline).filter { $0.contains("error[") }
            #expect(errors.count >= Self.secretLines.count, "\(repl.stdout)")
            for error in errors {
                for piece in Self.secretPieces { #expect(!error.contains(piece), "shown: \(error)") }
            }
            #expect(await server.servesOperator(within: 1))
        }
    }

    @Test func aResetTokenGivenToTheWrongOptionIsNeverEchoed() async throws {
        try await AttackServer.with { server in
            for arguments in [
                ["--token-file", Self.resetToken, "whoami"], ["cleanup", "ingest-log", Self.resetToken],
                ["--format", "json", "--token-file", Self.jwe, "whoami"],
                ["recovery", "derive", "--root-key-file", Self.key],
            ] {
                let result = try await server.client(["--tenant", "sandbox"] + arguments)
                #expect(result.status != 0)
                #expect(
                    !result.stderr.contains(Self.resetToken) && !result.stderr.contains(Self.jwe), "\(result.stderr)")
                #expect(!result.stderr.contains(Self.key) && !result.stdout.contains(Self.key), "\(result.stderr)")
                #expect(await server.servesOperator(within: 1))
            }
            // In-process too: a store path that is a token.
            let local = try await BackupctlBinary.run(
                ["--db", server.directory.appendingPathComponent(Self.resetToken).path, "whoami"],
                environment: server.environment, seconds: 60)
            #expect(local.status != 0 && !local.stderr.contains(Self.resetToken), "\(local.stderr)")
        }
    }

    @Test func thePagerGetsNoSecretFromTheEnvironment() async throws {
        try await AttackServer.with { server in
            let seen = server.directory.appendingPathComponent("pager-env").path
            var environment = server.environment
            environment["BACKUPCTL_SERVER"] = server.url
            environment["BACKUPCTL_TOKEN"] = server.rootToken
            environment["TERM"] = "xterm"
            environment["PAGER"] = "sh -c 'env > \(seen); cat > /dev/null'"
            environment["DATABASE_URL"] = "postgres://u:HUNTER2@db:5432/x"
            environment["GH_PAT"] = "ghp_pat"
            environment["SESSION_COOKIE"] = "cookie-value"
            environment["UPSTREAM"] = "https://user:pw@proxy.internal:3128"
            environment["HARMLESS"] = "kept"
            let terminal = try PseudoTerminal(columns: 80, rows: 10)
            let console = try BackupctlBinary.start(["help"], environment: environment, terminal: terminal)
            #expect(await console.wait(seconds: 60) != nil)
            let passed = try String(contentsOfFile: seen, encoding: .utf8)
            #expect(passed.contains("HARMLESS=kept"), "\(passed)")
            for secret in ["HUNTER2", "ghp_pat", "cookie-value", "user:pw", "bctl_", "BACKUPCTL_"] {
                #expect(!passed.contains(secret), "the pager saw \(secret)")
            }
            #expect(await server.servesOperator(within: 1))
        }
    }
}
