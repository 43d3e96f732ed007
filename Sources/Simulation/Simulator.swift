import BackupCrypto
import BackupModel
import BackupServiceSandbox
import Foundation
import Turnkey
import TurnkeySandbox

/// `backupctl sandbox simulate`: a population of users living through the flows BF-1…BF-8 and
/// `/reset` against the Backup Service and Turnkey sandboxes, with faults, leaving the world in
/// the sandboxes' storage and its ground truth beside it. Same options, same world.
public enum Simulator {
    public static let truthFile = "ground-truth.json"
    public static let logFile = "service.log"
    public static let exportDirectory = "export"
    public static let turnkeyStateFile = "turnkey.json"

    /// In-process: fresh emulators on a simulated clock (day 0 … `days`), no sockets. Writes
    /// into `out`: `export/` (the service's storage in the export layout, with `export.json`
    /// naming the end as a complete snapshot), `turnkey.json` (+ `.api-key`, `.cleanup-key`: a
    /// state file `sandbox turnkey --state` serves), `ground-truth.json` and `service.log`.
    public static func runInProcess(
        _ options: SimulationOptions, out: String, now: Int64, progress: (@Sendable (Int) -> Void)? = nil
    ) async throws(ConsoleError) -> SimulationReport {
        try options.validate()
        let started = Date()
        let start = options.startSeconds(now: now)
        let time = ManualTime(start * 1000)
        let clock = WallClock.manual(time)
        let random = SeededRandom(seed: options.seed ^ 0x5EED_5EED)
        let storage = ServiceStorage()
        let emulator = BackupServiceEmulator(
            backend: storage, key: SHA256.hash(Array("backupctl-simulation-service|\(options.seed)".utf8)),
            clock: clock,
            random: random)
        let apiKey = P256.generatePrivateKey(using: random)
        let cleanupKey = P256.generatePrivateKey(using: random)
        let parentOrgId = random.uuid()
        let directory = try MemoryDirectory()
        let sandbox = TurnkeySandbox(
            parentOrgId: parentOrgId, directory: directory,
            parentUsers: [try SandboxTenant.user("sandbox_api_key", apiKey, canDelete: false)],
            defaultSubOrgUsers: [try SandboxTenant.user("sync_factor_user_cleanup", cleanupKey, canDelete: true)],
            timing: TurnkeyTiming(clock: clock, sleep: { _ in }), seed: options.seed)
        let transport = InProcessTransport(service: emulator, turnkey: sandbox)
        let engine = SimulationEngine(
            options: options, service: ServiceCaller(transport: transport, clock: { time.now }),
            turnkey: TurnkeyCaller(
                transport: transport, parentOrgId: parentOrgId, parentKey: apiKey, clock: { time.now },
                wait: { time.advance(byMillis: $0) }), time: time, start: start)
        try await engine.run(progress: progress)
        let truth = engine.truth()
        try prepare(out)
        let export = (out as NSString).appendingPathComponent(exportDirectory)
        try storage.export(to: export)
        try write(
            Data(#"{"complete":true,"snapshotAt":"\#(Timestamp.format(truth.end))"}"#.utf8),
            to: (export as NSString).appendingPathComponent("export.json"))
        let statePath = (out as NSString).appendingPathComponent(turnkeyStateFile)
        try TurnkeyKeyFile.write(apiKey, to: statePath + ".api-key")
        try TurnkeyKeyFile.write(cleanupKey, to: statePath + ".cleanup-key")
        let state = SandboxStateFile(
            parentOrgId: parentOrgId, apiKeyFile: statePath + ".api-key", cleanupKeyFile: statePath + ".cleanup-key",
            subOrgs: directory.all(), users: [:], missingDefaultUsersPerMille: 0, faults: .none, seed: options.seed,
            subOrgDetails: await sandbox.details)
        try state.save(to: statePath)
        return try finish(
            engine, truth: truth, out: out, mode: "in-process", started: started, requests: await sandbox.stats.requests
        )
    }

    /// Over HTTP against `sandbox backup-service` and `sandbox turnkey` (the app backend's
    /// parent org and API key from the Turnkey sandbox's state). Protocol times are the real
    /// clock; the days are the simulation's own count. The world stays in the sandboxes' storage;
    /// `ground-truth.json` and `service.log` go to `out`.
    public static func runOverHTTP(
        _ options: SimulationOptions, serviceURL: String, turnkeyURL: String, parentOrgId: String,
        parentKey: SecretBytes, out: String, now: Int64, progress: (@Sendable (Int) -> Void)? = nil
    ) async throws(ConsoleError) -> SimulationReport {
        try options.validate()
        let started = Date()
        let transport = HTTPTransport(serviceURL: serviceURL, turnkeyURL: turnkeyURL)
        let realClock: @Sendable () -> Int64 = { Int64(Date().timeIntervalSince1970 * 1000) }
        let engine = SimulationEngine(
            options: options, service: ServiceCaller(transport: transport, clock: realClock),
            turnkey: TurnkeyCaller(
                transport: transport, parentOrgId: parentOrgId, parentKey: parentKey, clock: realClock, wait: { _ in }),
            time: nil, start: options.startSeconds(now: now))
        do {
            try await engine.run(progress: progress)
        } catch {
            await transport.shutdown()
            throw error
        }
        await transport.shutdown()
        let truth = engine.truth()
        try prepare(out)
        return try finish(engine, truth: truth, out: out, mode: "http", started: started, requests: nil)
    }

    static func finish(
        _ engine: SimulationEngine, truth: GroundTruth, out: String, mode: String, started: Date, requests: Int?
    ) throws(ConsoleError) -> SimulationReport {
        try write(truth.encoded(), to: (out as NSString).appendingPathComponent(truthFile))
        let log = engine.log.joined(separator: "\n") + (engine.log.isEmpty ? "" : "\n")
        try write(Data(log.utf8), to: (out as NSString).appendingPathComponent(logFile))
        let elapsed = max(Date().timeIntervalSince(started), 0.001)
        let options = engine.options
        return SimulationReport(
            users: options.users, days: options.days, seed: options.seed, mode: mode, backups: truth.backups.count,
            subOrgs: truth.subOrgs.count, orphans: truth.orphans.count, loggedOrphans: truth.logged.count,
            findings: truth.findings.count, turnkeyFindings: truth.turnkeyFindings.count,
            requests: requests ?? engine.counts["service.requests", default: 0]
                + engine.counts["turnkey.activities", default: 0],
            elapsedSeconds: (elapsed * 1000).rounded() / 1000,
            userDaysPerSecond: (Double(options.users * options.days) / elapsed).rounded(), out: out,
            snapshotAt: Timestamp.format(truth.end), counts: truth.counts)
    }

    static func prepare(_ out: String) throws(ConsoleError) {
        do {
            try FileManager.default.createDirectory(atPath: out, withIntermediateDirectories: true)
        } catch {
            throw .invalid("invalid_out", "Cannot create the output directory \(out): \(error.localizedDescription)")
        }
    }

    static func write(_ data: Data, to path: String) throws(ConsoleError) {
        do {
            try data.write(to: URL(fileURLWithPath: path), options: .atomic)
        } catch {
            throw .internalError("Writing \(path) failed: \(error.localizedDescription)")
        }
    }
}
