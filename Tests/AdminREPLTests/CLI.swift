import BackupctlTestSupport
import Foundation
import Testing

/// Runs the real `backupctl` binary and returns what it printed and its exit status — the
/// end-to-end helper of swift-argument-parser's AssertExecuteCommand, for a whole process.
struct CLI {
    /// Where the commands run: in the client process on the store file (the embedded default),
    /// or on a `backupctl serve` on loopback that alone opens the store. Command-level tests run
    /// in both with the same expectations.
    enum Mode: String, CaseIterable, Sendable, CustomTestStringConvertible {
        case inProcess, server
        var testDescription: String { rawValue }
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
    /// The store file (the server's, in server mode: the client is pointed elsewhere).
    let dbPath: String
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
        dbPath = directory.appendingPathComponent("console.db").path
    }

    func cleanUp() {
        stopServer()
        // Every server-mode test also checks the client never opened (or made) a store.
        if mode == .server, !clientOpenedNoStore { Issue.record("the client opened a store in server mode") }
        try? FileManager.default.removeItem(at: directory)
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
        let process = try BackupctlProcess(
            ["serve", "--listen", "127.0.0.1:0", "--db", dbPath], environment: serverEnvironment)
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
        if mode == .server { try startServer() }
        return token
    }

    static func json(_ line: String) -> [String: Any]? {
        (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any]
    }
}
