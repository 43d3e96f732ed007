import BackupctlTestSupport
import Foundation
import Testing

/// Key files are paths on the console's own machine: `tenant list` says whether a live tenant
/// has them, never where they are (a client must not read key paths back).
@Suite(.serialized, .timeLimit(.minutes(10))) struct TenantKeyPathTests {
    @Test(arguments: CLI.Mode.allCases)
    func tenantListOfALiveTenantNeverShowsItsKeyPaths(_ mode: CLI.Mode) async throws {
        var cli = CLI(mode: mode)
        defer { cli.cleanUp() }
        _ = try await cli.bootstrap()
        let statePath = cli.directory.appendingPathComponent("turnkey.json").path
        let server = try await ServerProcess.turnkeySandbox(
            arguments: ["--state", statePath], environment: cli.environment)
        defer { server.killNow() }
        let url = server.url
        let state = try #require(
            try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: statePath)))
                as? [String: Any])
        let apiKeyFile = try #require(state["apiKeyFile"] as? String)
        let cleanupKeyFile = try #require(state["cleanupKeyFile"] as? String)
        let org = try #require(state["parentOrgId"] as? String)
        let created = try await cli.run([
            "tenant", "create", "prod", "--turnkey-url", url, "--turnkey-org", org,
            "--turnkey-api-key-file", apiKeyFile, "--cleanup-key-file", cleanupKeyFile,
        ])
        #expect(created.status == 0, "\(created.stderr)")

        let json = try await cli.run(["--format", "json", "tenant", "list"])
        #expect(json.status == 0, "\(json.stderr)")
        let rows = try #require(CLI.json(json.stdout)?["tenants"] as? [[String: Any]])
        let prod = try #require(rows.first { $0["name"] as? String == "prod" })
        #expect(prod["turnkeyOrg"] as? String == org && prod["sandbox"] as? Bool == false)
        #expect(prod["turnkeyApiKey"] as? Bool == true && prod["cleanupKey"] as? Bool == true)
        let sandbox = try #require(rows.first { $0["name"] as? String == "sandbox" })
        #expect(sandbox["turnkeyApiKey"] as? Bool == false && sandbox["cleanupKey"] as? Bool == false)

        let table = try await cli.run(["tenant", "list"])
        #expect(table.status == 0, "\(table.stderr)")
        let prodLine = try #require(table.stdout.split(separator: "\n").first { $0.contains("prod") })
        #expect(prodLine.hasSuffix("api+cleanup"))

        let csv = try await cli.run(["--format", "csv", "tenant", "list"])
        #expect(csv.status == 0, "\(csv.stderr)")
        for output in [json, table, csv] {
            for text in [output.stdout, output.stderr] {
                // Neither the paths nor the directory they live in.
                #expect(!text.contains(apiKeyFile) && !text.contains(cleanupKeyFile))
                #expect(!text.contains(cli.directory.lastPathComponent))
            }
        }
    }
}
