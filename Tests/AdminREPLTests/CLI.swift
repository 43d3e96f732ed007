import BackupctlTestSupport
import ConsoleStore
import Foundation
import PostgresStore
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

    struct Result {
        var stdout: String
        var stderr: String
        var status: Int32

        var lines: [String] { stdout.split(separator: "\n").map(String.init) }
    }

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
    private(set) var server: BackupctlProcess?

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
                let made = try PostgresCLIDatabase.create()
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

    func cleanUp() {
        stopServer()
        // Every server-mode test also checks the client never opened (or made) a store.
        if mode.usesServer, !clientOpenedNoStore { Issue.record("the client opened a store in server mode") }
        try? FileManager.default.removeItem(at: directory)
        database?.drop()
    }

    /// Stops the server (SIGTERM: it drains and exits 0), if one runs.
    func stopServer() {
        guard let server, server.isRunning else { return }
        server.signal(SIGTERM)
        // Polled on this thread: blocking a test's thread on a task could starve the pool.
        for _ in 0..<1000 where server.isRunning { Thread.sleep(forTimeInterval: 0.02) }
        server.kill9()
    }

    /// Starts `backupctl serve` on the store and points the client at it. The client's own
    /// `BACKUPCTL_DB` then names a file in a directory that does not exist, so a command that
    /// opened a store on the client would fail (and ``clientOpenedNoStore`` would see it).
    mutating func startServer() throws {
        var serverEnvironment = environment
        serverEnvironment["BACKUPCTL_TOKEN"] = nil
        // A database URL goes in the environment (it carries a password); a file in --db.
        serverEnvironment["BACKUPCTL_DB"] = dbPath
        let store = mode == .postgres ? [] : ["--db", dbPath]
        let process = try BackupctlProcess(
            ["serve", "--listen", "127.0.0.1:0"] + store + serverPolicyArguments(), environment: serverEnvironment)
        let deadline = Date().addingTimeInterval(60)
        var url: String?
        while url == nil, process.isRunning, Date() < deadline {
            if let line = process.stdout.split(separator: "\n").first,
                let object = Self.json(String(line)), let listening = object["listening"] as? String
            {
                url = listening
            } else {
                Thread.sleep(forTimeInterval: 0.02)
            }
        }
        guard let url else {
            process.kill9()
            throw ServerDidNotStart(stderr: process.stderr)
        }
        server = process
        environment["BACKUPCTL_SERVER"] = url
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

    /// Every tenant name a command-level test imports into or points at a sandbox.
    static let testTenants = ["sandbox", "prod", "qa", "scratch", "staging", "x", "k", "live", "beta", "alpha", "demo"]

    /// Where the client would create a store if it ever opened one in server mode.
    var clientStorePath: String { directory.appendingPathComponent("client-has-no-store/console.db").path }

    /// Server mode's guarantee: the client never opened (or created) a store.
    var clientOpenedNoStore: Bool {
        !FileManager.default.fileExists(atPath: directory.appendingPathComponent("client-has-no-store").path)
    }

    struct ServerDidNotStart: Error, CustomStringConvertible {
        var stderr: String
        var description: String { "backupctl serve did not start: \(stderr)" }
    }

    @discardableResult
    func run(_ arguments: [String], stdin: String? = nil, extraEnvironment: [String: String] = [:]) throws -> Result {
        let process = Process()
        process.executableURL = Self.binary
        process.arguments = arguments
        process.environment = environment.merging(extraEnvironment) { $1 }
        let out = Pipe()
        let err = Pipe()
        let input = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = input
        try process.run()
        if let stdin { input.fileHandleForWriting.write(Data(stdin.utf8)) }
        try input.fileHandleForWriting.close()
        // Read both pipes concurrently so a chatty child never blocks on a full pipe.
        let group = DispatchGroup()
        nonisolated(unsafe) var errData = Data()
        group.enter()
        DispatchQueue.global().async {
            errData = err.fileHandleForReading.readDataToEndOfFile()
            group.leave()
        }
        let outData = out.fileHandleForReading.readDataToEndOfFile()
        group.wait()
        process.waitUntilExit()
        return Result(
            stdout: String(decoding: outData, as: UTF8.self), stderr: String(decoding: errData, as: UTF8.self),
            status: process.terminationStatus)
    }

    /// `init --admin root` and export the token the way an operator would.
    mutating func bootstrap(admin: String = "root") throws -> String {
        let result = try run(["--format", "json", "init", "--admin", admin])
        let object = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: String]
        let token = object?["token"] ?? ""
        environment["BACKUPCTL_TOKEN"] = token
        if mode.usesServer { try startServer() }
        return token
    }

    /// Runs `body` on the store the commands use, opened by the test itself (to plant what no
    /// command would write): the SQLite file, or PostgreSQL mode's database.
    func withStore(_ body: (any ConsoleStore) async throws -> Void) async throws {
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

/// A database of one CLI test's own on the private PostgreSQL cluster, made and dropped with
/// `psql` (the CLI helper is synchronous, and a test thread must not block on a task).
struct PostgresCLIDatabase {
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    let name: String
    let url: String

    static func create() throws -> PostgresCLIDatabase {
        guard let server = PostgresTestDatabase.serverURL else { throw PostgresTestDatabase.Failure.noCluster }
        let name = "cli_" + String(format: "%016llx", UInt64.random(in: .min ... .max))
        try psql("CREATE DATABASE \(name)", server: server)
        return PostgresCLIDatabase(name: name, url: try PostgresAdmin.url(server, database: name))
    }

    /// Starts the drop without waiting for it: `DROP DATABASE` waits until every backend of the
    /// cluster has taken note, and a backend in the middle of a `COPY` from an async test of
    /// this same process would then wait for a thread this test holds. The cluster goes at the
    /// end of the run anyway.
    func drop() {
        guard let server = PostgresTestDatabase.serverURL else { return }
        try? Self.psql("DROP DATABASE \(name) WITH (FORCE)", server: server, wait: false)
    }

    /// Runs one statement with `psql`, the password in its environment rather than its arguments.
    static func psql(_ sql: String, server: String, wait: Bool = true) throws {
        guard var parts = URLComponents(string: server), let host = parts.host, let user = parts.user else {
            throw Failure(description: "BACKUPCTL_TEST_POSTGRES is not a URL")
        }
        let password = parts.password
        parts.password = nil
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-c", sql]
        var environment = ["PATH": "/usr/bin:/bin", "PGHOST": host, "PGUSER": user, "PGDATABASE": "postgres"]
        environment["PGPORT"] = parts.port.map(String.init)
        environment["PGPASSWORD"] = password
        environment["PGSSLMODE"] = "disable"
        process.environment = environment
        let err = Pipe()
        process.standardError = wait ? err : FileHandle.nullDevice
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        guard wait else { return }
        let message = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw Failure(description: "psql failed: \(String(decoding: message, as: UTF8.self).prefix(300))")
        }
    }
}
