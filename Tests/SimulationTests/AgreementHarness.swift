import Access
import BackupCrypto
import BackupModel
import BackupServiceSandbox
import BackupctlTestSupport
import ConsoleService
import ConsoleStore
import Foundation
import Inspect
import SQLiteStore
import Simulation
import Testing
import Turnkey
import TurnkeySandbox

/// A simulated world and a console over it, as an operator has it: either served by the
/// standalone sandboxes over loopback HTTP (`sandbox turnkey` over the simulation's state file,
/// `sandbox backup-service` over its export) with a live tenant on them, or landed in a sandbox
/// tenant by `sandbox simulate --tenant`.
final class AgreementHarness: @unchecked Sendable {
    enum Mode {
        /// Simulated in-process, then served over HTTP.
        case inProcess
        /// The users talk HTTP to the standalone sandboxes (started first, on an empty export
        /// and a fresh state file).
        case overHTTP
        /// `SandboxSimulateOperation` into an empty sandbox tenant.
        case sandboxTenant
    }

    let mode: Mode
    let out: String
    let truth: GroundTruth
    let report: SimulationReport
    let directory: URL
    let store: SQLiteConsoleStore
    let console: LocalConsole
    let caller: Caller
    let tenant: TenantName
    let turnkey: SandboxServer?
    let turnkeyDirectory: MemoryDirectory?
    let service: BackupServiceSandboxServer?

    init(_ options: SimulationOptions, mode: Mode = .inProcess) async throws {
        self.mode = mode
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("agree-\(UUID().uuidString)")
        out = directory.appendingPathComponent("month").path
        let path = directory.appendingPathComponent("console.db").path
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        store = try SQLiteConsoleStore(path: path)
        console = LocalConsole(store: store, path: path)
        let access = AccessService(store: store)
        let token = try await access.bootstrap(admin: try OperatorName("root"))
        let op = try await access.authenticate(token: token)
        tenant = try TenantName(mode == .sandboxTenant ? "simbox" : "sim")
        caller = Caller(token: token, tenant: tenant.rawValue)
        let policy = TenantPolicy(cleanupGraceSeconds: 0, retryCapMillis: 50, turnkeyRPS: 100_000)
        let now = Int64(Date().timeIntervalSince1970)
        if mode == .sandboxTenant {
            try await access.createTenant(
                TenantRecord(name: tenant, isSandbox: true, policy: policy, createdAt: now), by: op)
            report = try await console.perform(
                SandboxSimulateOperation(tenant: tenant.rawValue, options: options, out: out), as: caller)
            truth = try GroundTruth.load(out + "/" + Simulator.truthFile)
            (turnkey, turnkeyDirectory, service) = (nil, nil, nil)
            return
        }
        let export = out + "/" + Simulator.exportDirectory
        try FileManager.default.createDirectory(atPath: export, withIntermediateDirectories: true)
        var made: SimulationReport?
        if mode == .inProcess { made = try await Simulator.runInProcess(options, out: out, now: now) }
        let state = try SandboxStateFile.loadOrCreate(path: out + "/" + Simulator.turnkeyStateFile, subOrgCount: 0)
        let (sandbox, turnkeyDirectory) = try await state.makeSandbox()
        self.turnkeyDirectory = turnkeyDirectory
        let turnkey = try await SandboxServer.start(sandbox)
        self.turnkey = turnkey
        let emulator = BackupServiceEmulator(
            backend: try ServiceStorage(directory: export), key: Array(repeating: 5, count: 32))
        let service = try await BackupServiceSandboxServer.start(emulator)
        self.service = service
        if mode == .overHTTP {
            made = try await Simulator.runOverHTTP(
                options, serviceURL: service.baseURL, turnkeyURL: turnkey.baseURL, parentOrgId: state.parentOrgId,
                parentKey: try TurnkeyKeyFile.load(state.apiKeyFile, what: "API key"), out: out, now: now)
        }
        report = try #require(made)
        truth = try GroundTruth.load(out + "/" + Simulator.truthFile)
        try await access.createTenant(
            TenantRecord(
                name: tenant, isSandbox: false, turnkeyURL: turnkey.baseURL, turnkeyOrgId: state.parentOrgId,
                turnkeyAPIKeyFile: state.apiKeyFile, cleanupKeyFile: state.cleanupKeyFile,
                backupServiceURL: service.baseURL, policy: policy, createdAt: now), by: op)
    }

    func stop() async {
        await console.stopSandboxes()
        await turnkey?.stop()
        await service?.stop()
        try? FileManager.default.removeItem(at: directory)
    }

    /// The sub-orgs Turnkey holds now.
    func remainingSubOrgs() async throws -> Set<String> {
        if let turnkeyDirectory { return Set(turnkeyDirectory.all()) }
        var ids: [String] = []
        try await store.forEachSandboxSubOrg(tenant: tenant, batchSize: 1000) { ids += $0 }
        return Set(ids)
    }

    func perform<Op: ConsoleOperation>(_ operation: Op) async throws -> Op.Output {
        try await console.perform(operation, as: caller)
    }

    /// `(backupId, check, status)` of every listed finding.
    static func triples(_ findings: [CheckReport.Finding]) -> Set<GroundTruth.Finding> {
        Set(findings.map { GroundTruth.Finding(backupId: $0.backupId, check: $0.check, status: $0.status.rawValue) })
    }

    /// Import, check, check --turnkey, ingest-log, scan (after a fresh complete snapshot), run
    /// --execute: each must agree with the ground truth exactly.
    func agree() async throws {
        // The month's export, as the operator imports it (export.json: complete, taken at the end;
        // over HTTP the sandbox's directory is live: a complete copy taken now).
        // (`sandbox simulate --tenant` imported it already.)
        let export = out + "/" + Simulator.exportDirectory
        let manifest = FileManager.default.fileExists(atPath: export + "/export.json")
        if mode != .sandboxTenant {
            let imported = try await perform(
                ImportOperation(
                    directory: export, dryRun: false,
                    snapshotAt: manifest ? nil : Timestamp.format(Int64(Date().timeIntervalSince1970)),
                    complete: !manifest))
            #expect(imported.problems.isEmpty, "\(imported.problems.prefix(3))")
            #expect(imported.imported == truth.backups.count)
            let drift = Set(
                imported.drift.map { GroundTruth.Drift(backupId: $0.backupId, pk: $0.pk, kind: $0.kind.rawValue) })
            #expect(drift == Set(truth.drift), "index drift")
        }

        // check: every expected finding, nothing else (precision and recall 1.0).
        let check = try await perform(CheckOperation(backupId: nil, filter: FindingFilter(), limit: 100_000))
        #expect(check.backups == truth.backups.count)
        #expect(check.findingsOmitted == 0)
        Self.compare(Self.triples(check.findings), Set(truth.findings), "check")

        // check --turnkey: the same, plus the live findings.
        let live = try await perform(
            CheckOperation(backupId: nil, filter: FindingFilter(), limit: 100_000, turnkey: true))
        let liveNames = Set(LiveCheckName.allCases.map(\.rawValue))
        let liveFound = Self.triples(live.findings.filter { liveNames.contains($0.check) })
        Self.compare(liveFound, Set(truth.turnkeyFindings), "check --turnkey")
        Self.compare(
            Self.triples(live.findings.filter { !liveNames.contains($0.check) }), Set(truth.findings),
            "check (with --turnkey)")

        // cleanup ingest-log: exactly the logged orphans.
        let log = try String(contentsOfFile: out + "/" + Simulator.logFile, encoding: .utf8)
        let ingested = try await perform(CleanupIngestLogOperation(text: log))
        #expect(ingested.found == truth.logged.count)
        #expect(ingested.new == truth.logged.count)

        // cleanup scan: every orphan, nothing else; eligible once a fresh complete snapshot follows.
        let first = try await perform(CleanupScanOperation(graceSeconds: 0))
        Self.compare(Set(first.report.orphans.map(\.subOrgId)), Set(truth.orphans.map(\.subOrgId)), "scan")
        // A logged sub-org the user's next OIDC enrollment reused, or a reset tore down, is no
        // orphan by the end; the others keep the reason they were ingested with.
        let logged = Set(first.report.orphans.filter { $0.reason == "service_log" }.map(\.subOrgId))
        #expect(
            logged == Set(truth.orphans.filter(\.logged).map(\.subOrgId)), "scan keeps the ingested orphans' reason")
        #expect(first.report.listed == truth.subOrgs.count)
        try await Task.sleep(nanoseconds: 1_100_000_000)
        _ = try await perform(
            ImportOperation(
                directory: out + "/" + Simulator.exportDirectory, dryRun: false,
                snapshotAt: Timestamp.format(Int64(Date().timeIntervalSince1970)), complete: true))
        let second = try await perform(CleanupScanOperation(graceSeconds: 0))
        Self.compare(
            Set(second.report.orphans.map(\.subOrgId)), Set(truth.orphans.map(\.subOrgId)), "scan after the snapshot")
        #expect(
            second.report.orphans.filter { !$0.eligible }.isEmpty,
            "every orphan eligible after a fresh complete snapshot")

        // cleanup run --execute: deletes exactly the orphans.
        let run = try await perform(
            CleanupRunOperation(
                execute: true, max: max(1, truth.orphans.count), concurrency: 8, graceSeconds: 0, confirmed: true))
        #expect(run.report.failed == 0 && run.report.needsUser == 0)
        Self.compare(
            Set(run.report.items.filter { $0.outcome == "deleted" }.map(\.subOrgId)),
            Set(truth.orphans.map(\.subOrgId)),
            "deleted")
        let left = try await remainingSubOrgs()
        #expect(left == Set(truth.subOrgs).subtracting(truth.orphans.map(\.subOrgId)), "only the orphans are gone")
    }

    /// Set equality with the differences named (a few of each).
    static func compare<T: Hashable>(
        _ found: Set<T>, _ expected: Set<T>, _ what: String, sourceLocation: SourceLocation = #_sourceLocation
    ) {
        let extra = found.subtracting(expected)
        let missing = expected.subtracting(found)
        #expect(
            extra.isEmpty && missing.isEmpty,
            "\(what): \(extra.count) unexpected \(Array(extra.prefix(3))), \(missing.count) missed \(Array(missing.prefix(3)))",
            sourceLocation: sourceLocation)
    }
}
