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
        let world = try await simulate(options, as: nil, now: now, progress: progress)
        try world.writeExport(out)
        let statePath = (out as NSString).appendingPathComponent(turnkeyStateFile)
        try TurnkeyKeyFile.write(world.identity.apiKey, to: statePath + ".api-key")
        try TurnkeyKeyFile.write(world.identity.cleanupKey, to: statePath + ".cleanup-key")
        let state = SandboxStateFile(
            parentOrgId: world.identity.parentOrgId, apiKeyFile: statePath + ".api-key",
            cleanupKeyFile: statePath + ".cleanup-key", subOrgs: world.directory.all(), users: [:],
            missingDefaultUsersPerMille: 0, faults: .none, seed: options.seed,
            subOrgDetails: await world.sandbox.details)
        try state.save(to: statePath)
        return try finish(
            world.engine, truth: world.truth, out: out, mode: "in-process", started: world.started,
            requests: world.requests)
    }

    /// The app backend's Turnkey identity: its parent org, its API key, and the cleanup key every
    /// sub-org is given (`sync_factor_user_cleanup`).
    struct Identity {
        var parentOrgId: String
        var apiKey: SecretBytes
        var cleanupKey: SecretBytes
    }

    /// A world simulated in-process: the emulators' state at the end and its ground truth.
    struct World {
        var engine: SimulationEngine
        var truth: GroundTruth
        var storage: ServiceStorage
        var sandbox: TurnkeySandbox
        var directory: MemoryDirectory
        var identity: Identity
        var started: Date
        /// Requests the clients sent to both emulators (every attempt).
        var requests: Int

        /// `out/export` (the service's storage in the export layout) with `export.json` naming
        /// the end as a complete snapshot.
        func writeExport(_ out: String) throws(ConsoleError) {
            try prepare(out)
            let export = (out as NSString).appendingPathComponent(exportDirectory)
            try storage.export(to: export)
            try write(
                Data(#"{"complete":true,"snapshotAt":"\#(Timestamp.format(truth.end))"}"#.utf8),
                to: (export as NSString).appendingPathComponent("export.json"))
        }
    }

    /// Fresh emulators on a simulated clock (day 0 … `days`), no sockets; `identity` (a sandbox
    /// tenant's) or keys of the seed's own.
    static func simulate(
        _ options: SimulationOptions, as identity: Identity?, now: Int64, progress: (@Sendable (Int) -> Void)?
    ) async throws(ConsoleError) -> World {
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
        // Drawn either way, so a tenant's world takes the same random stream as the seed's own.
        let ownAPIKey = P256.generatePrivateKey(using: random)
        let ownCleanupKey = P256.generatePrivateKey(using: random)
        let keys = identity ?? Identity(parentOrgId: random.uuid(), apiKey: ownAPIKey, cleanupKey: ownCleanupKey)
        if identity != nil { _ = random.uuid() }
        let directory = try MemoryDirectory()
        let sandbox = TurnkeySandbox(
            parentOrgId: keys.parentOrgId, directory: directory,
            parentUsers: [try SandboxTenant.user("sandbox_api_key", keys.apiKey, canDelete: false)],
            defaultSubOrgUsers: [try SandboxTenant.user("sync_factor_user_cleanup", keys.cleanupKey, canDelete: true)],
            timing: TurnkeyTiming(clock: clock, sleep: { _ in }), seed: options.seed)
        let transport = CountingTransport(InProcessTransport(service: emulator, turnkey: sandbox))
        let engine = SimulationEngine(
            options: options, service: ServiceCaller(transport: transport, clock: { time.now }),
            turnkey: TurnkeyCaller(
                transport: transport, parentOrgId: keys.parentOrgId, parentKey: keys.apiKey, clock: { time.now },
                wait: { time.advance(byMillis: $0) }), time: time, start: start)
        try await engine.run(progress: progress)
        return World(
            engine: engine, truth: engine.truth(), storage: storage, sandbox: sandbox, directory: directory,
            identity: keys, started: started, requests: transport.requests)
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
        let http = HTTPTransport(serviceURL: serviceURL, turnkeyURL: turnkeyURL)
        let transport = CountingTransport(http)
        let realClock: @Sendable () -> Int64 = { Int64(Date().timeIntervalSince1970 * 1000) }
        let engine = SimulationEngine(
            options: options, service: ServiceCaller(transport: transport, clock: realClock),
            turnkey: TurnkeyCaller(
                transport: transport, parentOrgId: parentOrgId, parentKey: parentKey, clock: realClock, wait: { _ in }),
            time: nil, start: options.startSeconds(now: now))
        do {
            try await engine.run(progress: progress)
        } catch {
            await http.shutdown()
            throw error
        }
        await http.shutdown()
        let truth = engine.truth()
        try prepare(out)
        return try finish(
            engine, truth: truth, out: out, mode: "http", started: started, requests: transport.requests)
    }

    static func finish(
        _ engine: SimulationEngine, truth: GroundTruth, out: String, mode: String, started: Date, requests: Int
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
            requests: requests,
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
