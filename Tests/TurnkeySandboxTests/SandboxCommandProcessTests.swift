import BackupCrypto
import BackupModel
import BackupctlTestSupport
import Foundation
import Testing
import Turnkey

@testable import TurnkeySandbox

@Suite("`backupctl sandbox turnkey` as a real process", .timeLimit(.minutes(10)))
struct SandboxCommandProcessTests {
    @Test(
        "serves on 127.0.0.1, writes its state while running, stops cleanly on the signal",
        arguments: [SIGTERM, SIGINT])
    func standaloneServer(signal: Int32) async throws {
        try #require(BackupctlBinary.exists, "\(BackupctlBinary.missing)")
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "sandbox-cmd-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let statePath = directory.appendingPathComponent("state.json").path
        let environment = [
            "PATH": "/usr/bin:/bin", "HOME": directory.path, "TERM": "dumb",
            "BACKUPCTL_DB": directory.appendingPathComponent("console.db").path,
        ]
        func start() async throws -> (ServerProcess, String) {
            let server = try await ServerProcess.turnkeySandbox(
                arguments: ["--state", statePath, "--suborgs", "5"], environment: environment)
            return (server, server.url)
        }

        let (server, url) = try await start()
        defer { server.killNow() }
        let state = try Self.load(statePath)
        #expect(state.subOrgs.count == 5)
        let client = TurnkeyClient(
            baseURL: url, transport: HTTPClientTransport(), policy: TurnkeyRetryPolicy(attempts: 1), timing: .system)
        let apiKey = try TurnkeyKeyFile.load(state.apiKeyFile)
        let cleanupKey = try TurnkeyKeyFile.load(state.cleanupKeyFile)
        let who = try await client.whoami(organizationId: state.parentOrgId, signer: .apiKey(apiKey))
        #expect(who.organizationId == state.parentOrgId)

        let target = state.subOrgs[2]
        let body = try TurnkeyActivityBody.deleteSubOrganization(subOrgId: target, timestampMs: 1_790_000_000_000).text
        let deleted = try await client.deleteSubOrganization(
            subOrgId: target, body: body, signer: .apiKey(cleanupKey), pollSigner: .apiKey(apiKey))
        guard case .deleted = deleted.outcome else {
            Issue.record("expected a deletion, got \(deleted.outcome)")
            return
        }
        // Durable while running: the state file catches up without a shutdown.
        let written = await eventually(seconds: 5) {
            guard let now = try? Self.load(statePath) else { return false }
            return now.subOrgs.count == 4 && now.deleteBodies[target] == [body]
        }
        #expect(written, "the state file was not updated while the server ran")

        server.child.signal(signal)
        let status = await server.child.wait(seconds: 10)
        #expect(status == .exited(0), "\(String(describing: status)); stderr: \(server.stderr)")
        #expect(server.stdout.contains("sandbox stopped; 4 sub-orgs saved"))
        #expect(!server.stderr.lowercased().contains("error"), "stderr: \(server.stderr)")
        let final = try Self.load(statePath)
        #expect(final.subOrgs == state.subOrgs.filter { $0 != target })
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: directory.path).filter {
            $0.contains(".tmp-")
        }
        #expect(leftovers.isEmpty)

        // The state outlives the process: a new server serves the same sub-orgs and keys.
        let (again, secondURL) = try await start()
        defer { again.killNow() }
        var listed: [String] = []
        let second = TurnkeyClient(
            baseURL: secondURL, transport: HTTPClientTransport(), policy: TurnkeyRetryPolicy(attempts: 1),
            timing: .system)
        for try await page in second.subOrganizations(of: state.parentOrgId, signer: .apiKey(apiKey)) { listed += page }
        #expect(listed == final.subOrgs)
        #expect(await again.stop(seconds: 10) == .exited(0))
    }

    static func load(_ path: String) throws -> SandboxStateFile {
        let data = try Data(contentsOf: URL(fileURLWithPath: path))
        return try JSONDecoder().decode(SandboxStateFile.self, from: data)
    }
}
