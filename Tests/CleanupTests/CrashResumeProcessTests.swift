import BackupCrypto
import BackupModel
import BackupctlTestSupport
import Foundation
import SQLiteStore
import Testing
import Turnkey

@testable import Cleanup
@testable import ConsoleStore
@testable import TurnkeySandbox

/// Real processes: the console SIGKILLed mid-run against a standalone sandbox server that outlives it.
@Suite("cleanup as real processes against `backupctl sandbox turnkey`", .serialized, .timeLimit(.minutes(10)))
struct CrashResumeProcessTests {
    static let runCommand = [
        "--tenant", "drill", "--yes", "--format", "json", "cleanup", "run", "--execute", "--grace", "0", "--max",
        "1000",
        "--concurrency", "4",
    ]

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
        try #require(BackupctlBinary.exists, "\(BackupctlBinary.missing)")
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

        // Each round's console stops for good at a named checkpoint — right after journaling the
        // body of its Nth new deletion, before sending it — and is SIGKILLed there. Deletions of
        // the earlier items of the round (and bodies journaled by earlier rounds) have gone out.
        var resent: [String] = []
        for round in 0..<10 {
            var environment = drill.environment
            environment["BACKUPCTL_PAUSE_AT"] = "cleanup.journaled"
            environment["BACKUPCTL_PAUSE_AFTER"] = String(1 + round % 4)
            let console = try BackupctlBinary.start(Self.runCommand, environment: environment)
            defer { console.killNow() }
            let paused = await console.waitForStdout(#""paused":"cleanup.journaled""#, seconds: 120)
            #expect(paused, "round \(round) did not reach its checkpoint: \(console.stderr.suffix(400))")
            #expect(await console.kill() == .signaled(SIGKILL), "round \(round) ended before its kill")
            resent.append(contentsOf: ProcessDrill.pausedSubOrgs(console.stdout))
        }
        // A body journaled at a checkpoint is sent by a later run without passing it again.
        #expect(resent.count >= 10 && Set(resent).count == resent.count, "\(resent)")
        let progress = try drill.bodiesReceived()
        #expect(progress > 0, "no deletion happened before the final run")
        #expect(progress < orphans.count, "the kills did not interrupt the work")

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
        try #require(BackupctlBinary.exists, "\(BackupctlBinary.missing)")
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
        let console = try BackupctlBinary.start(Self.runCommand, environment: drill.environment)
        defer { console.killNow() }
        // The checkpoint: the sandbox has received a deletion (a bounded wait). The tenant's rate
        // limit (10 a second) keeps the 60 deletions going for six seconds at least.
        let received = await eventually(seconds: 30) { (try? drill.bodiesReceived()) ?? 0 > 0 || !console.isRunning }
        #expect(received && console.isRunning, "the run ended before it could be stopped")
        console.signal(SIGTERM)
        let status = await console.wait(seconds: 30)
        // Stopped early is never success: 143, and the report says it was interrupted and what is left.
        #expect(status == .exited(143), "SIGTERM should stop the run cleanly: \(String(describing: status))")
        let report = try #require(ProcessDrill.json(console.stdout), "no report: \(console.stdout)")
        #expect((report["deleted"] as? Int ?? orphans.count) < orphans.count, "the run was not stopped early")
        #expect(report["interrupted"] as? Bool == true && (report["left"] as? Int ?? 0) > 0, "\(report)")
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
        try #require(BackupctlBinary.exists, "\(BackupctlBinary.missing)")
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
            stamp, "--grace", "0",
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
    /// The sub-orgs of the `{"paused":…,"subOrgId":…}` lines a console printed at its checkpoint.
    static func pausedSubOrgs(_ stdout: String) -> [String] {
        stdout.split(separator: "\n").compactMap { line in
            guard line.contains(#""paused""#) else { return nil }
            return ((try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: String])?["subOrgId"]
        }
    }

    /// Deletion bodies the server has recorded so far (its state file is written as it changes).
    func bodiesReceived() throws -> Int {
        try state().deleteBodies.values.reduce(0) { $0 + $1.count }
    }
}
