import BackupctlTestSupport
import Foundation
import Testing

/// What an operator of a real `backupctl serve` needs beyond the attacks: rotating a live
/// tenant's Turnkey credentials in place, tokens written to files rather than printed, a
/// rotated own token that keeps the context working, and a prompt and `whoami` that name the
/// server.
@Suite(.serialized) struct OperatorToolsTests {
    static func json(_ text: String) -> [String: Any]? {
        try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any]
    }

    @Test func aLiveTenantsTurnkeyCredentialsRotateInPlaceCheckedWithWhoami() async throws {
        try await AttackServer.with(["--allow-private-host", "127.0.0.1"]) { server in
            let state = server.directory.appendingPathComponent("turnkey.json").path
            let turnkey = try await ServerProcess.turnkeySandbox(
                arguments: ["--state", state, "--suborgs", "1"], environment: server.environment)
            defer { turnkey.killNow() }
            #expect(await turnkey.child.waitForStderr("Ctrl-C stops", seconds: 60), "\(turnkey.stderr)")
            let line = turnkey.stderr
            let url = turnkey.url
            let org = try #require(
                line.range(of: #"parent org [^,]+"#, options: .regularExpression).map {
                    String(line[$0].dropFirst("parent org ".count))
                })
            let created = try await server.client([
                "--format", "json", "tenant", "create", "prod", "--turnkey-url", url, "--turnkey-org", org,
                "--turnkey-api-key-file", state + ".api-key",
            ])
            #expect(created.status == 0, "\(created.stderr)")
            // The same key under a new path (a rotation's new file): checked with whoami, saved, audited.
            let rotated = server.directory.appendingPathComponent("prod-api-2.key").path
            try FileManager.default.copyItem(atPath: state + ".api-key", toPath: rotated)
            chmod(rotated, 0o600)
            let updated = try await server.client([
                "--format", "json", "tenant", "update", "prod", "--turnkey-api-key-file", rotated, "--cleanup-key-file",
                state + ".cleanup-key",
            ])
            #expect(updated.status == 0, "\(updated.stderr)")
            #expect(Self.json(updated.stdout)?["cleanupKey"] as? Bool == true, "\(updated.stdout)")
            let audit = try await server.audit().filter { $0.action == "tenant.update" && $0.tenant == "prod" }
            #expect(audit.last?.details["turnkeyAPIKeyFile"] == rotated)
            // A key Turnkey does not know is refused before anything changes.
            let stranger = server.directory.appendingPathComponent("stranger.key").path
            try (String(repeating: "1f", count: 32) + "\n").write(toFile: stranger, atomically: true, encoding: .utf8)
            chmod(stranger, 0o600)
            let refused = try await server.client([
                "--format", "json", "tenant", "update", "prod", "--turnkey-api-key-file", stranger,
            ])
            #expect(refused.status != 0, "\(refused.stdout)")
            let after = try await server.audit().filter { $0.action == "tenant.update" && $0.tenant == "prod" }
            #expect(after.count == audit.count)
            // A tenant admin without tenants:create may not name the server's key files.
            let added = try await server.client([
                "--format", "json", "operator", "add", "pat", "--tenant", "prod", "--role", "admin",
            ])
            let pat = try #require(Self.json(added.stdout)?["token"] as? String, "\(added.stderr)")
            let denied = try await server.client(
                ["--format", "json", "tenant", "update", "prod", "--turnkey-api-key-file", rotated], token: pat)
            #expect(denied.status == 77 && denied.stderr.contains("permission_denied"), "\(denied.stderr)")
            #expect(await server.servesOperator(within: 1))
        }
    }

    @Test func tokensGoToFilesAndARotatedOwnTokenKeepsTheContextWorking() async throws {
        try await AttackServer.with { server in
            let carolFile = server.directory.appendingPathComponent("carol.token").path
            let added = try await server.client([
                "--format", "json", "operator", "add", "carol", "--tenant", "sandbox", "--role", "viewer",
                "--token-out",
                carolFile,
            ])
            #expect(added.status == 0, "\(added.stderr)")
            #expect(!added.stdout.contains("bctl_") && Self.json(added.stdout)?["tokenFile"] as? String == carolFile)
            let attributes = try FileManager.default.attributesOfItem(atPath: carolFile)
            #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o600)
            // A context whose token file is root's; rotating root's own token rewrites it.
            let rootFile = server.directory.appendingPathComponent("root.token").path
            try (server.rootToken + "\n").write(toFile: rootFile, atomically: true, encoding: .utf8)
            chmod(rootFile, 0o600)
            var environment = server.environment
            environment["BACKUPCTL_TOKEN"] = nil
            let run = { (arguments: [String]) async throws -> ChildResult in
                try await BackupctlBinary.run(arguments, environment: environment, seconds: 120)
            }
            let saved = try await run([
                "context", "add", "prod", "--server", server.url, "--token-file", rootFile, "--tenant", "sandbox",
            ])
            #expect(saved.status == 0, "\(saved.stderr)")
            let whoami = try await run(["--format", "json", "whoami"])
            #expect(Self.json(whoami.stdout)?["context"] as? String == "prod", "\(whoami.stdout) \(whoami.stderr)")
            #expect(Self.json(whoami.stdout)?["server"] as? String == server.url)
            let rotation = try await run(["--format", "json", "operator", "token", "rotate", "root"])
            #expect(rotation.status == 0, "\(rotation.stderr)")
            #expect(!rotation.stdout.contains("bctl_"), "\(rotation.stdout)")
            let fresh = try String(contentsOfFile: rootFile, encoding: .utf8).trimmingCharacters(
                in: .whitespacesAndNewlines)
            #expect(fresh != server.rootToken && fresh.hasPrefix("bctl_"))
            #expect(try await run(["whoami"]).status == 0)
            // The old token is dead.
            let old = try await server.client(["whoami"])
            #expect(old.status == 77, "\(old.stderr)")
            // The REPL's prompt names the context.
            let terminal = try PseudoTerminal()
            let repl = try BackupctlBinary.start([], environment: environment, terminal: terminal)
            #expect(await repl.waitForStdout("root@prod:sandbox>", seconds: 60), "\(repl.stdout)")
            repl.write("quit\r")
            _ = await repl.wait(seconds: 30)
            // Refused outright (401), not merely slow: the old token no longer works.
            let refused = try await server.ask(AttackServer.request("whoami", bearer: server.rootToken))
            #expect(refused?.status == 401, "\(String(describing: refused))")
        }
    }
}
