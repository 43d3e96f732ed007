import Access
import BackupCrypto
import BackupModel
import ConsoleStore
import Foundation
import Inspect
import SQLiteStore
import Simulation
import Turnkey
import TurnkeySandbox

/// The population simulator's speed, and `check --turnkey`'s sub-orgs per second beside the
/// tenant's rate limit.
///
/// Simulate: N users through D days in-process (emulators on a simulated clock, faults on):
/// simulated user·days per second of wall time.
///
/// Cross-check: that world's Turnkey state served by the sandbox server over loopback HTTP, its
/// export imported into a store, and the live checks (one `list_users` per backup with a
/// sub-org) run twice: with the tenant's rate limit at 50 RPS (the figure should sit just under
/// it: the limiter, not the console, sets the pace) and effectively unlimited (what the console
/// and the sandbox manage).
struct SimulationBench: BenchSuite {
    let name = "simulation"

    func run(_ scale: BenchScale) async throws -> [String: BenchValue] {
        let directory = scratchDirectory("simulation")
        defer { try? FileManager.default.removeItem(at: directory) }
        let options = SimulationOptions(
            users: scale.pick(10_000, quick: 500), days: scale.pick(30, quick: 10), seed: 26, turnkeyOutages: 0.05)
        let out = directory.appendingPathComponent("world").path
        let report = try await Simulator.runInProcess(options, out: out, now: Int64(Date().timeIntervalSince1970))
        var results: [String: BenchValue] = [
            "simulate.users": .integer(options.users), "simulate.days": .integer(options.days),
            "simulate.seconds": .number(report.elapsedSeconds),
            "simulate.userDaysPerSecond": .number(report.userDaysPerSecond),
            "simulate.requests": .integer(report.requests), "simulate.orphans": .integer(report.orphans),
        ]
        let store = try SQLiteConsoleStore(path: directory.appendingPathComponent("c.db").path)
        let access = AccessService(store: store)
        let op = try await access.authenticate(token: try await access.bootstrap(admin: try OperatorName("bench")))
        let tenant = try TenantName("bench")
        try await access.createTenant(TenantRecord(name: tenant, isSandbox: false, createdAt: 0), by: op)
        _ = try await store.importExport(
            directory: URL(fileURLWithPath: out + "/" + Simulator.exportDirectory), tenant: tenant, dryRun: false,
            operatorName: "bench", setAside: [], snapshotAt: nil, clock: { Int64(Date().timeIntervalSince1970) },
            progress: nil)
        let state = try SandboxStateFile.loadOrCreate(path: out + "/" + Simulator.turnkeyStateFile, subOrgCount: 0)
        let (sandbox, _) = try await state.makeSandbox()
        let server = try await SandboxServer.start(sandbox)
        defer { Task { await server.stop() } }
        let apiKey = try TurnkeyKeyFile.load(state.apiKeyFile, what: "API key")
        for (label, rps) in [("limited", 50.0), ("unlimited", 1_000_000.0)] {
            let client = TurnkeyClient(baseURL: server.baseURL, transport: HTTPClientTransport(), rps: rps)
            let check = TurnkeyCrossCheck(store: store, client: client, signer: .apiKey(apiKey))
            var outcome: TurnkeyCrossCheck.Outcome?
            let seconds = try await timeSeconds { outcome = try await check.run(tenant: tenant) }
            let read = outcome?.subOrgsRead ?? 0
            results["crossCheck.\(label).tenantRPS"] = .number(rps)
            results["crossCheck.\(label).subOrgs"] = .integer(read)
            results["crossCheck.\(label).seconds"] = .number(seconds)
            results["crossCheck.\(label).subOrgsPerSecond"] = .number(Double(read) / max(seconds, 0.001))
            results["crossCheck.\(label).findings"] = .integer(outcome?.results.count ?? 0)
        }
        return results
    }
}
