import BackupModel
import BackupctlTestSupport
import ConsoleStore
import Foundation
import Testing

/// A real `backupctl serve` on 127.0.0.1 for the attack suites, started with ``ServerProcess``
/// over a store made here (``StoreSetup``: admin `root` of `sandbox`, tenant `beta`, `bob` a
/// viewer of `sandbox`), and the one check every attack ends with: the valid operator is
/// still served.
final class AttackServer: @unchecked Sendable {
    let directory: URL
    let db: String
    let setup: StoreSetup
    let environment: [String: String]
    let server: ServerProcess
    var process: ChildProcess { server.child }
    var url: String { server.url }
    let port: Int

    var rootToken: String { ServerFixture.text(setup.rootToken) }
    var bobToken: String { ServerFixture.text(setup.bobToken) }

    /// Starts `serve --listen 127.0.0.1:0 --db DB ARGUMENTS`; `prepare` runs first, in the
    /// workspace directory (import roots, key files), which `{dir}` in an argument names.
    static func start(
        _ arguments: [String] = [], environment extra: [String: String] = [:], prepare: (URL) throws -> Void = { _ in }
    ) async throws -> AttackServer {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("attack-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        try prepare(directory)
        let db = directory.appendingPathComponent("console.db").path
        let setup = try await StoreSetup(path: db)
        let environment = [
            "PATH": "/usr/bin:/bin", "HOME": directory.path, "TERM": "dumb",
            "XDG_STATE_HOME": directory.appendingPathComponent("state").path,
            "XDG_DATA_HOME": directory.appendingPathComponent("data").path,
            "XDG_CONFIG_HOME": directory.appendingPathComponent("config").path,
        ].merging(extra) { $1 }
        let server: ServerProcess
        do {
            server = try await ServerProcess.serve(
                db: db, arguments: arguments.map { $0.replacingOccurrences(of: "{dir}", with: directory.path) },
                environment: environment)
        } catch {
            try? FileManager.default.removeItem(at: directory)
            throw error
        }
        guard let port = URLComponents(string: server.url)?.port else {
            await server.stop()
            throw ServerProcess.DidNotStart(command: "backupctl serve", termination: nil, stderr: server.stderr)
        }
        return AttackServer(
            directory: directory, db: db, setup: setup, environment: environment, server: server, port: port)
    }

    private init(
        directory: URL, db: String, setup: StoreSetup, environment: [String: String], server: ServerProcess, port: Int
    ) {
        self.directory = directory
        self.db = db
        self.setup = setup
        self.environment = environment
        self.server = server
        self.port = port
    }

    /// Stops the server (SIGTERM, then SIGKILL after a bounded wait) and removes the workspace.
    func stop() async {
        await server.stop(seconds: 30)
        try? FileManager.default.removeItem(at: directory)
    }

    /// Runs `body` against a fresh server, then stops it (also when `body` throws).
    static func with(
        _ arguments: [String] = [], environment: [String: String] = [:], prepare: (URL) throws -> Void = { _ in },
        _ body: (AttackServer) async throws -> Void
    ) async throws {
        let server = try await start(arguments, environment: environment, prepare: prepare)
        do {
            try await body(server)
        } catch {
            await server.stop()
            throw error
        }
        await server.stop()
    }

    /// The acceptance check of every attack: `root`'s `whoami`, on a fresh connection from
    /// 127.0.0.1, is answered 200 within `seconds` (a bounded wait, not a measurement).
    func servesOperator(within seconds: Double = 1) async -> Bool {
        guard let connection = try? RawConnection(port: port) else { return false }
        defer { connection.close() }
        connection.send(Self.request("whoami", bearer: rootToken))
        guard let answer = await connection.answer(within: Int(seconds * 1000)) else { return false }
        return answer.status == 200 && answer.body.contains(#""operator":"root""#)
    }

    /// A whole `POST /v1/ops/NAME` request, kept alive.
    static func request(_ name: String, bearer: String?, tenant: String? = nil, body: String = "{}") -> String {
        var head = "POST /v1/ops/\(name) HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        if let bearer { head += "Authorization: Bearer \(bearer)\r\n" }
        if let tenant { head += "Backupctl-Tenant: \(tenant)\r\n" }
        return head + "Content-Length: \(body.utf8.count)\r\n\r\n" + body
    }

    /// Sends `request` on a new connection from `source` and waits (bounded) for the answer.
    func ask(_ request: String, from source: String = "127.0.0.1", within milliseconds: Int = 10_000) async throws
        -> (status: Int, headers: [String: String], body: String)?
    {
        let connection = try RawConnection(port: port, from: source)
        defer { connection.close() }
        connection.send(request)
        return await connection.answer(within: milliseconds)
    }

    /// `backupctl ARGUMENTS` as a client of this server (root's token unless `token` says).
    func client(_ arguments: [String], token: String? = nil, environment extra: [String: String] = [:]) async throws
        -> ChildResult
    {
        var environment = environment
        environment["BACKUPCTL_SERVER"] = url
        environment["BACKUPCTL_TOKEN"] = token ?? rootToken
        environment.merge(extra) { $1 }
        return try await BackupctlBinary.run(arguments, environment: environment, seconds: 120)
    }

    /// Every audit entry, read from the store file (not through the server).
    func audit() async throws -> [AuditEntry] {
        try await setup.store.auditEntries(tenant: nil, afterSeq: 0, limit: 1_000_000)
    }
}
