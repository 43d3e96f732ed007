import BackupCrypto
import BackupModel
import BackupctlTestSupport
import Foundation
import Testing
import Turnkey

@testable import Cleanup
@testable import ConsoleStore
@testable import TurnkeySandbox

/// Real processes: the console SIGKILLed mid-run against a standalone sandbox server that outlives it.
@Suite("cleanup as real processes against `backupctl sandbox turnkey`", .serialized)
struct CrashResumeProcessTests {
    static let runCommand = [
        "--tenant", "drill", "--yes", "--format", "json", "cleanup", "run", "--execute", "--grace", "0", "--max",
        "1000",
        "--concurrency", "4",
    ]

    /// Polls (synchronously, so a busy task pool cannot stretch the wait) until the sandbox has
    /// received `count` deletion bodies or the console has exited; at most 20 s.
    static func waitUntil(_ console: BackupctlProcess, bodiesBeyond count: Int, _ drill: ProcessDrill) throws {
        for _ in 0..<1000 where console.isRunning {
            if try drill.bodiesReceived() >= count { return }
            usleep(20_000)
        }
    }

    /// The live tenant's proof: a scan records when the orphans were first seen unreferenced,
    /// then a complete snapshot taken no earlier says they still are (what importing a fresh
    /// export with `--complete` records).
    static func freshSnapshot(_ drill: ProcessDrill) async throws {
        let scan = try await drill.run(["--tenant", "drill", "--format", "json", "cleanup", "scan", "--grace", "0"])
        #expect(scan.status == 0, "\(scan.stderr)")
        let store = try SQLiteConsoleStore(path: drill.dbPath)
        let now = Int64(Date().timeIntervalSince1970)
        try await store.recordSnapshot(
            tenant: try TenantName("drill"),
            SnapshotRecord(snapshotAt: now, complete: true, importedAt: now, backups: 4),
            audit: nil)
    }

    @Test("killed at many points mid-run, then run again: nothing lost, one body per sub-org, journal consistent")
    func killedMidRunThenResumed() async throws {
        try #require(BackupctlProcess.binaryExists, "build the backupctl binary first (swift build --build-tests)")
        let drill = try ProcessDrill()
        defer { drill.cleanUp() }
        // 120 orphans at the tenant's 10 RPS: ~12 s of deleting to interrupt. Plus the sub-orgs
        // that four backups reference, which must survive every run.
        var state = try SandboxStateFile.loadOrCreate(
            path: drill.statePath, subOrgCount: 120, random: SeededRandom(seed: 8))
        let orphans = state.subOrgs
        let backups = try SandboxSeeder.make(seed: 21, range: 0..<4, now: 1_790_000_000).map(\.write)
        let referenced = Set(backups.flatMap(\.record.metadata.turnkeySubOrgIds))
        #expect(!referenced.isEmpty)
        state.subOrgs = (orphans + referenced).sorted()
        state.faults = SandboxFaults(latencyMillis: 10)
        try state.save(to: drill.statePath)
        try await drill.startServer()
        try await drill.createLiveTenant(state)
        do {
            let store = try SQLiteConsoleStore(path: drill.dbPath)
            try await store.writeBackups(
                tenant: try TenantName("drill"), backups,
                audit: AuditDraft(operatorName: "root", tenant: "drill", action: "test.import"))
        }

        try await Self.freshSnapshot(drill)

        var killedMidRun = 0
        var early: [String] = []
        var progressAtKill: [Int] = []
        for round in 0..<10 {
            // The checkpoint: this round's console has had 1–3 more deletions accepted by the
            // sandbox (its state file, saved every 200 ms). A fixed delay drifted when the test
            // pool was busy, and the consoles finished the work before their kills.
            let before = try drill.bodiesReceived()
            let console = try BackupctlProcess(Self.runCommand, environment: drill.environment)
            try Self.waitUntil(console, bodiesBeyond: before + 1 + round % 3, drill)
            if console.isRunning {
                console.signal(SIGKILL)
                killedMidRun += 1
                _ = await console.waitExit(seconds: 30)
            } else if let status = await console.waitExit(seconds: 30), status != 0 {
                early.append("round \(round): exit \(status): \(console.stderr.prefix(300))")
            }
            progressAtKill.append(try drill.bodiesReceived())
        }
        #expect(early.isEmpty, "runs that failed before their kill: \(early)")
        #expect(killedMidRun >= 6, "only \(killedMidRun) of 10 kills hit a running console; \(early)")
        #expect(progressAtKill.last ?? 0 > 0, "no deletion happened before the final run")
        #expect(progressAtKill.last ?? 0 < orphans.count * 2, "the kills did not interrupt the work")

        let final = try await drill.run(Self.runCommand)
        #expect(final.status == 0, "final run failed: \(final.stderr)")
        let report = try #require(ProcessDrill.json(final.stdout))
        #expect(report["failed"] as? Int == 0 && report["needsUser"] as? Int == 0)

        let ended = try await drill.stopServer()
        #expect(Set(ended.subOrgs) == referenced, "left: \(Set(ended.subOrgs).subtracting(referenced).count) orphans")
        for id in referenced { #expect(ended.deleteBodies[id] == nil, "referenced \(id) was sent a deletion") }

        let store = try SQLiteConsoleStore(path: drill.dbPath)
        let tenant = try TenantName("drill")
        let audit = try await store.latestAuditEntries(tenant: tenant, limit: 100_000)
        for id in orphans {
            let bodies = ended.deleteBodies[id] ?? []
            let item = try await store.cleanupItem(tenant: tenant, subOrgId: id)
            #expect(item?.state == .deleted || item?.state == .alreadyGone, "\(id): \(String(describing: item?.state))")
            if !bodies.isEmpty {
                #expect(Set(bodies).count == 1, "\(id) got \(Set(bodies).count) different bodies")
                #expect(item?.body == bodies[0], "journaled body differs from the one sent for \(id)")
            }
            let endings = audit.filter {
                $0.target == id && ($0.action == "cleanup.delete" || $0.action == "cleanup.already_gone")
            }
            #expect(endings.count == 1, "\(id) has \(endings.count) terminal audit entries")
        }
        let counts = try await store.cleanupCounts(tenant: tenant)
        #expect((counts[.deleted] ?? 0) + (counts[.alreadyGone] ?? 0) == orphans.count)
        #expect(counts[.pending] == nil && counts[.failed] == nil)
        let verify = try await drill.run(["--tenant", "drill", "--format", "json", "audit", "verify"])
        #expect(
            ProcessDrill.json(verify.stdout)?["ok"] as? Bool == true, "audit verify: \(verify.stdout) \(verify.stderr)")
    }

    @Test("SIGTERM stops a run like Ctrl-C: in-flight calls finish and are recorded; the next run finishes")
    func sigtermStopsTheRunCleanly() async throws {
        try #require(BackupctlProcess.binaryExists, "build the backupctl binary first (swift build --build-tests)")
        let drill = try ProcessDrill()
        defer { drill.cleanUp() }
        var state = try SandboxStateFile.loadOrCreate(
            path: drill.statePath, subOrgCount: 60, random: SeededRandom(seed: 12))
        let orphans = state.subOrgs
        state.faults = SandboxFaults(latencyMillis: 20)
        try state.save(to: drill.statePath)
        try await drill.startServer()
        try await drill.createLiveTenant(state)
        try await Self.freshSnapshot(drill)
        let console = try BackupctlProcess(Self.runCommand, environment: drill.environment)
        // The checkpoint: the sandbox has received a deletion (bounded wait, no timing assertion).
        var received = 0
        for _ in 0..<400 where received == 0 && console.isRunning {
            try await Task.sleep(nanoseconds: 25_000_000)
            received = try drill.bodiesReceived()
        }
        #expect(received > 0 && console.isRunning, "the run ended before it could be stopped")
        console.signal(SIGTERM)
        let status = await console.waitExit(seconds: 30)
        #expect(status == 0, "SIGTERM should stop the run cleanly: \(status.map(String.init) ?? "still running")")
        let report = try #require(ProcessDrill.json(console.stdout), "no report: \(console.stdout)")
        #expect((report["deleted"] as? Int ?? orphans.count) < orphans.count, "the run was not stopped early")
        // What was in flight is recorded: no item is left failed, and the next run finishes the rest.
        #expect(report["failed"] as? Int == 0)
        let final = try await drill.run(Self.runCommand)
        #expect(final.status == 0, "\(final.stderr)")
        let ended = try await drill.stopServer()
        #expect(ended.subOrgs.isEmpty, "left: \(ended.subOrgs.count)")
        for id in orphans { #expect(Set(ended.deleteBodies[id] ?? []).count == 1, "\(id): one body") }
    }

    @Test("break-glass by command line: needsUser, teardown-request, recovery stamp, submit → deleted")
    func breakGlassCommandLine() async throws {
        try #require(BackupctlProcess.binaryExists, "build the backupctl binary first (swift build --build-tests)")
        let drill = try ProcessDrill()
        defer { drill.cleanUp() }
        var state = try SandboxStateFile.loadOrCreate(
            path: drill.statePath, subOrgCount: 3, random: SeededRandom(seed: 9))
        let target = state.subOrgs[1]
        // The user's Root Key, as `recovery stamp` reads it; its Backup Account Key is the break-glass user.
        let secret = SeededRandom(seed: 77).bytes(32)
        let rootKeyPath = drill.directory.appendingPathComponent("root-key.json").path
        #expect(
            FileManager.default.createFile(
                atPath: rootKeyPath, contents: Data(#"{"version":"V1","key":"\#(Hex.encode(secret))"}"#.utf8),
                attributes: [.posixPermissions: 0o600]))
        let signer = try Secp256k1StampSigner(rootKey: RootKey(version: .v1, secret: SecretBytes(secret)))
        state.users[target] = [SandboxUser.breakGlass(publicKeyHex: Hex.encode(try signer.compressedPublicKey()))]
        try state.save(to: drill.statePath)
        try await drill.startServer()
        try await drill.createLiveTenant(state)
        try await Self.freshSnapshot(drill)

        let run = try await drill.run(Self.runCommand)
        #expect(run.status == 0, "\(run.stderr)")
        let items = ProcessDrill.json(run.stdout)?["items"] as? [[String: Any]] ?? []
        #expect(items.first { $0["subOrgId"] as? String == target }?["outcome"] as? String == "needsUser")
        #expect(ProcessDrill.json(run.stdout)?["deleted"] as? Int == 2)

        let request = try await drill.run([
            "--tenant", "drill", "--format", "json", "cleanup", "teardown-request", target,
        ])
        let body = try #require(ProcessDrill.json(request.stdout)?["body"] as? String, "\(request.stderr)")
        let bodyPath = drill.directory.appendingPathComponent("teardown.json").path
        #expect(FileManager.default.createFile(atPath: bodyPath, contents: Data(body.utf8)))
        let stamped = try await drill.run([
            "--format", "json", "recovery", "stamp", "--body-file", bodyPath, "--root-key-file", rootKeyPath,
        ])
        let stamp = try #require(ProcessDrill.json(stamped.stdout)?["stamp"] as? String, "\(stamped.stderr)")
        let submit = try await drill.run([
            "--tenant", "drill", "--yes", "--format", "json", "cleanup", "submit", "--body-file", bodyPath, "--stamp",
            stamp,
        ])
        #expect(submit.status == 0, "\(submit.stderr)")
        #expect(ProcessDrill.json(submit.stdout)?["outcome"] as? String == "deleted", "\(submit.stdout)")

        let ended = try await drill.stopServer()
        #expect(ended.subOrgs.isEmpty)
        let sent = ended.deleteBodies[target] ?? []
        #expect(sent.count == 3 && Set(sent) == [body])
        #expect(!stamped.stdout.contains(Hex.encode(secret)) && !submit.stderr.contains(Hex.encode(secret)))
    }
}

extension ProcessDrill {
    /// Deletion bodies the server has recorded so far (its state file is written as it changes).
    func bodiesReceived() throws -> Int {
        try state().deleteBodies.values.reduce(0) { $0 + $1.count }
    }
}
