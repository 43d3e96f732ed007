import Foundation
import Testing

/// `context add|use|list|remove` and how a run picks its server: the config file's mode, the
/// precedence of flags over contexts, and that a context sends commands to its server.
@Suite("Client contexts", .timeLimit(.minutes(10)))
struct ContextTests {
    /// A CLI whose config home is inside its directory.
    func cli() -> CLI {
        var cli = CLI()
        cli.environment["XDG_CONFIG_HOME"] = cli.directory.appendingPathComponent("config").path
        return cli
    }

    var configPath: (CLI) -> String = { $0.directory.appendingPathComponent("config/backupctl/config").path }

    @Test("add writes a 0600 config with the token file's path, never the token")
    func addWritesPrivateConfig() async throws {
        var cli = cli()
        defer { cli.cleanUp() }
        let token = try await cli.bootstrap()
        let tokenFile = cli.directory.appendingPathComponent("prod.token")
        try Data(token.utf8).write(to: tokenFile)
        chmod(tokenFile.path, 0o600)
        let added = try await cli.run(
            [
                "--format", "json", "context", "add", "prod", "--server", "http://127.0.0.1:1", "--token-file",
                tokenFile.path, "--tenant", "sandbox",
            ])
        #expect(added.status == 0, "\(added.stderr)")
        let attributes = try FileManager.default.attributesOfItem(atPath: configPath(cli))
        #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o600)
        let text = try String(contentsOfFile: configPath(cli), encoding: .utf8)
        #expect(text.contains(tokenFile.path))
        #expect(!text.contains(token))
        let listed = try await cli.run(["--format", "json", "context", "list"])
        let contexts = CLI.json(listed.stdout)?["contexts"] as? [[String: Any]]
        #expect(contexts?.count == 1)
        #expect(contexts?.first?["current"] as? Bool == true)
        #expect(contexts?.first?["server"] as? String == "http://127.0.0.1:1")
    }

    @Test("a named context sends commands to its server, and its store is never opened")
    func contextRoutesToServer() async throws {
        var cli = cli()
        defer { cli.cleanUp() }
        _ = try await cli.bootstrap()
        try await cli.run(["context", "add", "dead", "--server", "http://127.0.0.1:1"])
        // Nothing listens on port 1: the command must fail as a remote failure, not run locally.
        let missing = cli.directory.appendingPathComponent("absent/console.db").path
        let result = try await cli.run(["--context", "dead", "stats"], extraEnvironment: ["BACKUPCTL_DB": missing])
        #expect(result.status == 2, "\(result.stderr)")
        #expect(result.stderr.contains("server_unavailable"))
        #expect(!FileManager.default.fileExists(atPath: missing))
        // The current context does not capture a run that names its own store.
        let local = try await cli.run(["whoami"])
        #expect(local.status == 0, "\(local.stderr)")
        // --server beats the context.
        let flagged = try await cli.run(["--server", "http://127.0.0.1:2", "--context", "dead", "stats"])
        #expect(flagged.stderr.contains("127.0.0.1:2"), "\(flagged.stderr)")
    }

    @Test("an explicit --db wins over $BACKUPCTL_SERVER, and --db with --server is a usage error")
    func explicitStoreWinsOverTheServerVariable() async throws {
        var cli = cli()
        defer { cli.cleanUp() }
        _ = try await cli.bootstrap()
        let db = cli.environment["BACKUPCTL_DB", default: ""]
        // Nothing listens on port 1: a run that went there would fail with exit 2.
        let local = try await cli.run(
            ["--db", db, "--format", "json", "whoami"], extraEnvironment: ["BACKUPCTL_SERVER": "http://127.0.0.1:1"])
        #expect(local.status == 0, "\(local.stderr)")
        let remote = try await cli.run(["whoami"], extraEnvironment: ["BACKUPCTL_SERVER": "http://127.0.0.1:1"])
        #expect(remote.status == 2, "\(remote.stderr)")
        let both = try await cli.run(["--db", db, "--server", "http://127.0.0.1:1", "whoami"])
        #expect(both.status == 64 && both.stderr.contains("--db and --server"), "\(both.stderr)")
    }

    @Test("a config others can read or write is refused with its own code")
    func insecureConfigRefused() async throws {
        var cli = cli()
        defer { cli.cleanUp() }
        _ = try await cli.bootstrap()
        try await cli.run(["context", "add", "prod", "--server", "http://127.0.0.1:1"])
        chmod(configPath(cli), 0o644)
        let result = try await cli.run(["--context", "prod", "whoami"])
        #expect(result.status == 78)
        #expect(result.stderr.hasPrefix("error[insecure_config]:"), "\(result.stderr)")
        #expect(result.stderr.split(separator: "\n").count == 1)
        // A directory others may write (they could swap the file) is refused the same way.
        chmod(configPath(cli), 0o600)
        let directory = (configPath(cli) as NSString).deletingLastPathComponent
        chmod(directory, 0o777)
        let open = try await cli.run(["--context", "prod", "whoami"])
        #expect(open.status == 78 && open.stderr.hasPrefix("error[insecure_config]:"), "\(open.stderr)")
    }

    @Test("bad input: unknown context, bad server URL, bad name; use and remove")
    func badInputAndLifecycle() async throws {
        var cli = cli()
        defer { cli.cleanUp() }
        _ = try await cli.bootstrap()
        let badURL = try await cli.run(["context", "add", "x", "--server", "ftp://host"])
        #expect(badURL.status == 78)  // a configuration mistake (EX_CONFIG)
        #expect(badURL.stderr.contains("invalid_server"))
        let badName = try await cli.run(["context", "add", "a b", "--server", "http://127.0.0.1:1"])
        #expect(badName.stderr.contains("invalid_context"))
        #expect(!FileManager.default.fileExists(atPath: configPath(cli)))
        try await cli.run(["context", "add", "prod", "--server", "http://127.0.0.1:1"])
        try await cli.run(["context", "add", "staging", "--server", "http://127.0.0.1:2"])
        let unknown = try await cli.run(["--context", "prdo", "whoami"])
        #expect(unknown.status == 1)
        #expect(unknown.stderr.contains("unknown_context"))
        #expect(unknown.stderr.contains("did you mean 'prod'"))
        #expect(try await cli.run(["context", "use", "staging"]).status == 0)
        let listed = try await cli.run(["--format", "json", "context", "list"])
        let current = (CLI.json(listed.stdout)?["contexts"] as? [[String: Any]])?.first {
            $0["current"] as? Bool == true
        }
        #expect(current?["name"] as? String == "staging")
        #expect(try await cli.run(["context", "remove", "staging"]).status == 0)
        #expect(try await cli.run(["context", "remove", "staging"]).status == 1)
    }
}
