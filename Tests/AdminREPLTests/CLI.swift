import BackupctlTestSupport
import ConsoleStore
import Foundation
import PostgresStore
import SQLiteStore
import Synchronization
import Testing

/// Runs the real `backupctl` binary and returns what it printed and its exit status — the
/// end-to-end helper of swift-argument-parser's AssertExecuteCommand, for a whole process.
struct CLI {
    /// Where the commands run: in the client process on the store file (the embedded default),
    /// on a `backupctl serve` on loopback that alone opens the store, or on a `serve` whose store
    /// is a PostgreSQL database of the test's own (on the private cluster of
    /// scripts/pg-test-cluster.sh). Command-level tests run in every mode with the same
    /// expectations; the PostgreSQL mode is left out when there is no cluster, except under CI.
    enum Mode: String, CaseIterable, Sendable, CustomTestStringConvertible {
        case inProcess, server, postgres
        var testDescription: String { rawValue }

        static var allCases: [Mode] {
            PostgresTestDatabase.enabled ? [.inProcess, .server, .postgres] : [.inProcess, .server]
        }

        /// Whether the commands go to a `backupctl serve`.
        var usesServer: Bool { self != .inProcess }
    }

    /// What a command printed and how it ended (the runner's one result shape).
    typealias Result = ChildResult

    /// The binary built next to the test bundle (`swift build --build-tests` builds both).
    static var binary: URL { BackupctlBinary.url }

    /// A fresh store directory; the environment points everything (db, state, data) inside it.
    let directory: URL
    var environment: [String: String]
    let mode: Mode
    /// The store file (the server's, in server mode: the client is pointed elsewhere), or in
    /// PostgreSQL mode the database's URL (with the cluster's password: never an argument).
    let dbPath: String
    /// PostgreSQL mode's database, dropped by ``cleanUp()``.
    let database: PostgresCLIDatabase?
    /// The `backupctl serve` of server mode, started by ``bootstrap(admin:)``.
    private(set) var server: ServerProcess?

    init(mode: Mode = .inProcess) {
        self.mode = mode
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("cli-\(UUID().uuidString)")
        try? FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        environment = [
            "PATH": "/usr/bin:/bin",
            "HOME": directory.path,
            "XDG_STATE_HOME": directory.appendingPathComponent("state").path,
            "XDG_DATA_HOME": directory.appendingPathComponent("data").path,
            "BACKUPCTL_DB": directory.appendingPathComponent("console.db").path,
            "TERM": "dumb",
        ]
        if mode == .postgres {
            do {
                let made = try PostgresCLIDatabase()
                database = made
                dbPath = made.url
            } catch {
                Issue.record("no PostgreSQL database for the test: \(error)")
                database = nil
                dbPath = "postgres://nobody@127.0.0.1:1/none"
            }
            environment["BACKUPCTL_DB"] = dbPath
        } else {
            database = nil
            dbPath = directory.appendingPathComponent("console.db").path
        }
    }

    /// Ends what the test started, without waiting (it runs in a `defer`): the server's process
    /// group is SIGKILLed, the directory removed, PostgreSQL mode's database dropped in the background.
    func cleanUp() {
        server?.killNow()
        // Every server-mode test also checks the client never opened (or made) a store.
        if mode.usesServer, !clientOpenedNoStore { Issue.record("the client opened a store in server mode") }
        try? FileManager.default.removeItem(at: directory)
        database?.drop()
    }

    /// Stops the server with SIGTERM (it drains and exits 0), if one runs; how it ended.
    @discardableResult
    func stopServer() async -> ChildTermination? {
        guard let server, server.isRunning else { return nil }
        return await server.stop()
    }

    /// Starts `backupctl serve` on the store and points the client at it. The client's own
    /// `BACKUPCTL_DB` then names a file in a directory that does not exist, so a command that
    /// opened a store on the client would fail (and ``clientOpenedNoStore`` would see it).
    mutating func startServer() async throws {
        var serverEnvironment = environment
        serverEnvironment["BACKUPCTL_TOKEN"] = nil
        try await database?.create()
        let started = try await ServerProcess.serve(
            db: dbPath, arguments: try serverPolicyArguments(), environment: serverEnvironment)
        server = started
        environment["BACKUPCTL_SERVER"] = started.url
        environment["BACKUPCTL_DB"] = clientStorePath
    }

    /// The tests import exports from anywhere (fixtures in the source tree, temporary
    /// directories) and point live tenants at sandboxes on loopback. So the server's import
    /// root holds, for each tenant name the tests use, a link to `/` (its import directory is
    /// the whole disk: `import` takes the same absolute paths as in-process), and loopback
    /// hosts are allowed as outbound targets.
    func serverPolicyArguments() throws -> [String] {
        let root = directory.appendingPathComponent("import-root")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        for tenant in Self.testTenants {
            try FileManager.default.createSymbolicLink(
                atPath: root.appendingPathComponent(tenant).path, withDestinationPath: "/")
        }
        return ["--import-root", root.path, "--allow-private-host", "127.0.0.1", "--allow-private-host", "localhost"]
    }

    /// Every tenant name a command-level test imports into, simulates into or points at a sandbox.
    static let testTenants = [
        "sandbox", "prod", "qa", "scratch", "staging", "x", "k", "live", "beta", "alpha", "demo", "simbox",
    ]

    /// Where the client would create a store if it ever opened one in server mode.
    var clientStorePath: String { directory.appendingPathComponent("client-has-no-store/console.db").path }

    /// Server mode's guarantee: the client never opened (or created) a store.
    var clientOpenedNoStore: Bool {
        !FileManager.default.fileExists(atPath: directory.appendingPathComponent("client-has-no-store").path)
    }

    /// Runs `backupctl ARGUMENTS` to completion in this test's environment (PostgreSQL mode's
    /// database made first).
    @discardableResult
    func run(_ arguments: [String], stdin: String? = nil, extraEnvironment: [String: String] = [:]) async throws
        -> Result
    {
        try await database?.create()
        return try await BackupctlBinary.run(
            arguments, environment: environment.merging(extraEnvironment) { $1 }, stdin: stdin)
    }

    /// `init --admin root` and export the token the way an operator would.
    mutating func bootstrap(admin: String = "root") async throws -> String {
        let result = try await run(["--format", "json", "init", "--admin", admin])
        let object = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: String]
        let token = object?["token"] ?? ""
        environment["BACKUPCTL_TOKEN"] = token
        if mode.usesServer { try await startServer() }
        return token
    }

    /// Runs `body` on the store the commands use, opened by the test itself (to plant what no
    /// command would write): the SQLite file, or PostgreSQL mode's database.
    func withStore(_ body: (any ConsoleStore) async throws -> Void) async throws {
        try await database?.create()
        guard mode == .postgres else {
            try await body(try SQLiteConsoleStore(path: dbPath))
            return
        }
        let database = PostgresStoreDatabase(
            configuration: try PostgresStoreConfiguration(url: dbPath, environment: [:]))
        try await database.start()
        do {
            try await body(try await PostgresConsoleStore.open(database))
            await database.shutdown()
        } catch {
            await database.shutdown()
            throw error
        }
    }

    static func json(_ line: String) -> [String: Any]? {
        (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any]
    }
}

/// A database of one CLI test's own on the private PostgreSQL cluster: named at once, made
/// before the first command, dropped (in the background) when the test cleans up.
final class PostgresCLIDatabase: Sendable {
    let name: String
    let url: String
    private let server: String
    private let made = Mutex(false)

    init() throws {
        guard let server = PostgresTestDatabase.serverURL else { throw PostgresTestDatabase.Failure.noCluster }
        self.server = server
        name = "cli_" + String(format: "%016llx", UInt64.random(in: .min ... .max))
        url = try PostgresAdmin.url(server, database: name)
    }

    /// `CREATE DATABASE`, once.
    func create() async throws {
        guard !made.withLock({ $0 }) else { return }
        try await PostgresAdmin.execute("CREATE DATABASE \(name)", on: server)
        made.withLock { $0 = true }
    }

    /// Starts `DROP DATABASE … WITH (FORCE)` without waiting for it; the cluster goes at the end
    /// of the run anyway.
    func drop() {
        guard made.withLock({ $0 }) else { return }
        let (name, server) = (name, server)
        Task.detached { try? await PostgresAdmin.execute("DROP DATABASE \(name) WITH (FORCE)", on: server) }
    }
}
