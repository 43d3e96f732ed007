import ArgumentParser
import BackupModel
import ConsoleService
import Foundation
import Simulation
import Turnkey
import TurnkeySandbox

/// `sandbox simulate`: a population living through the backup flows, with faults, and the
/// ground truth of what it left behind (token-free, like the other sandbox commands).
struct SimulateCommand: ConsoleCommand {
    static let configuration = CommandConfiguration(
        commandName: "simulate",
        abstract:
            "Simulate users living through BF-1…BF-8 and /reset against the sandboxes, with faults; write the ground truth.",
        discussion: """
            In-process (the default): fresh emulators on a simulated clock from --start (default:
            --days before today, 00:00 UTC). DIR/export holds the Backup Service's storage as an
            export (with export.json: a complete snapshot taken at the end), DIR/turnkey.json the
            Turnkey sandbox's state (serve it with `sandbox turnkey --state DIR/turnkey.json`),
            DIR/ground-truth.json each orphaned sub-org with the flow step that orphaned it and each
            backup's expected findings, DIR/service.log the log lines `cleanup ingest-log` reads.
            With --backup-service, --turnkey and --turnkey-state the users talk HTTP to running
            `sandbox backup-service` and `sandbox turnkey` instead; the world stays there.
            With --tenant T (an empty sandbox tenant; an admin's token, and --db or --server) the
            users talk to T's own Turnkey identity and the world lands in T: its backups imported
            as the complete snapshot taken at the end, its sub-orgs with their users and keys, so
            check --turnkey and cleanup on T meet it; DIR is on the console's (server's) machine.
            The same options and seed give the same world.
            Example: backupctl sandbox simulate --users 1000 --days 30 --seed 7 --turnkey-faults 0.05 --out month
            """)

    @Option(help: "Users in the population.") var users: Int
    @Option(help: "Days to simulate.") var days: Int = 30
    @Option(help: "The seed (same seed, same world).") var seed: UInt64 = 1
    @Option(help: "Day 0 as an RFC 3339 time (truncated to 00:00 UTC).") var start: String?
    @Option(help: "Fraction of Turnkey requests that fail transiently.") var turnkeyFaults: Double = 0.05
    @Option(help: "Fraction of days Turnkey is down.") var turnkeyOutages: Double = 0.02
    @Option(help: "Fraction of Backup Service requests that fail (deletions also after their S3 step).")
    var serviceFaults: Double = 0.01
    @Option(help: "Per device and day: the device is lost.") var lostDevices: Double = 0.002
    @Option(help: "Per user and day: the account is deleted (BF-8).") var accountDeletions: Double = 0.0005
    @Option(help: "Per user and day: every factor is lost and the user resets.") var lostEverything: Double = 0.0003
    @Option(help: "Per device and day: the app syncs a change (BF-4).") var syncs: Double = 0.15
    @Option(help: "Per user and day: an OIDC account is added (BF-3).") var factorAdds: Double = 0.004
    @Option(help: "Per user and day: a main factor is deleted (BF-7).") var factorDeletes: Double = 0.003
    @Option(help: "Per user and day: another device joins (BF-6).") var deviceAdds: Double = 0.002
    @Option(
        help:
            "Share of users on an older client (Turnkey before the service, no TURNKEY key with the last OIDC factor).")
    var oldClients: Double = 0.1
    @Option(help: "Share of users whose sub-org has no break-glass user.") var withoutBreakGlass: Double = 0.2
    @Option(help: "The output directory.") var out: String
    @Option(help: "A running `sandbox backup-service` (with --turnkey and --turnkey-state).") var backupService: String?
    @Option(help: "A running `sandbox turnkey`.") var turnkey: String?
    @Option(help: "That Turnkey sandbox's state file (its parent org and API key: the app backend's).")
    var turnkeyState: String?
    @Option(help: "An empty sandbox tenant to land the world in (needs an admin's token).") var tenant: String?

    func execute(_ ctx: CommandContext) async throws -> CommandOutput {
        var options = SimulationOptions(
            users: users, days: days, seed: seed, turnkeyFaults: turnkeyFaults, turnkeyOutages: turnkeyOutages,
            serviceFaults: serviceFaults, lostDevices: lostDevices, accountDeletions: accountDeletions,
            lostEverything: lostEverything, syncs: syncs, factorAdds: factorAdds, factorDeletes: factorDeletes,
            deviceAdds: deviceAdds, oldClients: oldClients, withoutBreakGlass: withoutBreakGlass)
        if let start {
            guard let time = Timestamp(rfc3339: start) else {
                throw ConsoleError.invalid(
                    "invalid_simulation",
                    "--start must be an RFC 3339 time, got \(SecretShape.excerpt(start, limit: 40)).")
            }
            options.start = time.seconds / 86_400 * 86_400
        }
        let report: SimulationReport
        if let tenant {
            guard backupService == nil, turnkey == nil, turnkeyState == nil else {
                throw ConsoleError.usage(
                    "--tenant lands the world in a sandbox tenant; --backup-service, --turnkey and --turnkey-state do not go with it."
                )
            }
            report = try await ctx.performJob(
                SandboxSimulateOperation(tenant: tenant, options: options, out: out), label: "simulate", total: days)
            return Self.render(report)
        }
        let progress = Progress(label: "simulate", total: days)
        defer { progress.finish() }
        let now = ctx.clock.seconds
        switch (backupService, turnkey, turnkeyState) {
        case (nil, nil, nil):
            report = try await Simulator.runInProcess(options, out: out, now: now) { progress.set(done: $0) }
        case (let service?, let turnkey?, let state?):
            guard FileManager.default.fileExists(atPath: state) else {
                throw ConsoleError.invalid(
                    "invalid_state_file", "The Turnkey sandbox state file \(state) does not exist.")
            }
            let file = try SandboxStateFile.loadOrCreate(path: state, subOrgCount: 0)
            let key = try TurnkeyKeyFile.load(file.apiKeyFile, what: "sandbox API key file")
            report = try await Simulator.runOverHTTP(
                options, serviceURL: service, turnkeyURL: turnkey, parentOrgId: file.parentOrgId, parentKey: key,
                out: out, now: now
            ) { progress.set(done: $0) }
        default:
            throw ConsoleError.usage("--backup-service, --turnkey and --turnkey-state go together (or none of them).")
        }
        return Self.render(report)
    }

    static func render(_ report: SimulationReport) -> CommandOutput {
        CommandOutput(json: report) { style in
            TextTable(
                ["", ""],
                (report.tenant.map { [["tenant", $0]] } ?? []) + [
                    ["mode", report.mode], ["users", "\(report.users)"], ["days", "\(report.days)"],
                    ["seed", "\(report.seed)"], ["backups", "\(report.backups)"], ["sub-orgs", "\(report.subOrgs)"],
                    ["orphaned sub-orgs", "\(report.orphans) (\(report.loggedOrphans) in the log)"],
                    ["findings", "\(report.findings) (+\(report.turnkeyFindings) with --turnkey)"],
                    ["requests", "\(report.requests)"],
                    ["user·days/s", "\(Int(report.userDaysPerSecond))"], ["snapshot at", report.snapshotAt],
                    ["out", report.out],
                ]
            ).render(style)
        }
    }
}
