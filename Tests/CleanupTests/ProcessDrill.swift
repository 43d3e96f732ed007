import BackupModel
import BackupctlTestSupport
import Foundation
import Turnkey

@testable import TurnkeySandbox

/// A drill with real processes: `backupctl sandbox turnkey` serving a state file, and a console
/// store with a live tenant pointed at it, driven by running `backupctl` command lines.
final class ProcessDrill: @unchecked Sendable {
    let directory: URL
    let statePath: String
    var environment: [String: String]
    private(set) var server: ServerProcess?
    private(set) var url = ""

    init() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("drill-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        statePath = directory.appendingPathComponent("turnkey.json").path
        environment = [
            "PATH": "/usr/bin:/bin", "HOME": directory.path, "TERM": "dumb",
            "XDG_STATE_HOME": directory.appendingPathComponent("state").path,
            "XDG_DATA_HOME": directory.appendingPathComponent("data").path,
            "BACKUPCTL_DB": directory.appendingPathComponent("console.db").path,
        ]
    }

    var dbPath: String { environment["BACKUPCTL_DB"] ?? "" }

    /// Starts the standalone sandbox on an ephemeral loopback port and waits until it listens.
    func startServer() async throws {
        let started = try await ServerProcess.turnkeySandbox(
            arguments: ["--state", statePath], environment: environment)
        server = started
        url = started.url
    }

    /// SIGTERMs the server and returns its final state file.
    func stopServer() async throws -> SandboxStateFile {
        if let server {
            let end = await server.stop(seconds: 10)
            guard end == .exited(0) else {
                throw HarnessError("the sandbox did not stop cleanly (\(end)): \(server.stderr)")
            }
        }
        server = nil
        return try state()
    }

    func state() throws -> SandboxStateFile {
        try JSONDecoder().decode(SandboxStateFile.self, from: Data(contentsOf: URL(fileURLWithPath: statePath)))
    }

    /// Runs one `backupctl` command line to completion (bounded).
    func run(_ arguments: [String], seconds: Double = 60) async throws -> ChildResult {
        try await BackupctlBinary.run(arguments, environment: environment, seconds: seconds)
    }

    /// `init --admin root`, then `tenant create drill` as a live tenant of the sandbox server.
    func createLiveTenant(_ state: SandboxStateFile) async throws {
        let boot = try await run(["--format", "json", "init", "--admin", "root"])
        guard let object = Self.json(boot.stdout), let token = object["token"] as? String else {
            throw HarnessError("init failed: \(boot.stderr)")
        }
        environment["BACKUPCTL_TOKEN"] = token
        let created = try await run([
            "tenant", "create", "drill", "--turnkey-url", url, "--turnkey-org", state.parentOrgId,
            "--turnkey-api-key-file", state.apiKeyFile, "--cleanup-key-file", state.cleanupKeyFile,
        ])
        guard created.status == 0 else { throw HarnessError("tenant create failed: \(created.stderr)") }
    }

    func cleanUp() {
        server?.killNow()
        try? FileManager.default.removeItem(at: directory)
    }

    static func json(_ text: String) -> [String: Any]? {
        let line = text.split(separator: "\n").last.map(String.init) ?? ""
        return (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any]
    }
}
