import BackupCrypto
import BackupModel
import BackupctlTestSupport
import Foundation
import Testing
import Turnkey

@testable import TurnkeySandbox

@Suite("`backupctl sandbox turnkey` as a real process")
struct SandboxCommandProcessTests {
    @Test(
        "serves on 127.0.0.1, writes its state while running, stops cleanly on the signal",
        arguments: [SIGTERM, SIGINT])
    func standaloneServer(signal: Int32) async throws {
        try #require(BackupctlProcess.binaryExists, "build the backupctl binary first (swift build --build-tests)")
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "sandbox-cmd-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let statePath = directory.appendingPathComponent("state.json").path
        let environment = [
            "PATH": "/usr/bin:/bin", "HOME": directory.path, "TERM": "dumb",
            "BACKUPCTL_DB": directory.appendingPathComponent("console.db").path,
        ]
        func start() async throws -> (BackupctlProcess, String) {
            let server = try BackupctlProcess(
                ["sandbox", "turnkey", "--listen", "127.0.0.1:0", "--state", statePath, "--suborgs", "5"],
                environment: environment)
            let listening = await BackupctlProcess.waitUntil(seconds: 20) {
                server.stderr.contains("Turnkey sandbox on http://")
            }
            guard listening,
                let range = server.stderr.range(of: #"http://127\.0\.0\.1:[0-9]+"#, options: .regularExpression)
            else {
                server.kill9()
                throw HarnessError("the sandbox did not start: \(server.stderr)")
            }
            return (server, String(server.stderr[range]))
        }

        let (server, url) = try await start()
        defer { server.kill9() }
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
        let written = await BackupctlProcess.waitUntil(seconds: 5) {
            guard let now = try? Self.load(statePath) else { return false }
            return now.subOrgs.count == 4 && now.deleteBodies[target] == [body]
        }
        #expect(written, "the state file was not updated while the server ran")

        server.signal(signal)
        let status = await server.waitExit(seconds: 10)
        #expect(status == 0, "exit \(String(describing: status)); stderr: \(server.stderr)")
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
        defer { again.kill9() }
        var listed: [String] = []
        let second = TurnkeyClient(
            baseURL: secondURL, transport: HTTPClientTransport(), policy: TurnkeyRetryPolicy(attempts: 1),
            timing: .system)
        for try await page in second.subOrganizations(of: state.parentOrgId, signer: .apiKey(apiKey)) { listed += page }
        #expect(listed == final.subOrgs)
        again.signal(SIGTERM)
        #expect(await again.waitExit(seconds: 10) == 0)
    }

    static func load(_ path: String) throws -> SandboxStateFile {
        let data = try Data(contentsOf: URL(fileURLWithPath: path))
        return try JSONDecoder().decode(SandboxStateFile.self, from: data)
    }
}
