import Access
import BackupCrypto
import BackupModel
import BackupctlTestSupport
import ConsoleService
import ConsoleStore
import Foundation
import SQLiteStore
import Testing

/// A console with an audit key signs checkpoints after requests and in its loop; without one
/// it signs nothing. The audit operations only read.
@Suite struct AuditSigningConsoleTests {
    struct Setup {
        let directory: URL
        let time = ManualTime(1_800_000_000_000)
        let path: String
        let keyPath: String
        let publicKey: AuditPublicKey
        let caller: Caller

        init() async throws {
            directory = FileManager.default.temporaryDirectory.appendingPathComponent("signing-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            path = directory.appendingPathComponent("console.db").path
            keyPath = directory.appendingPathComponent("audit.key").path
            publicKey = try AuditKeyFile.generate(to: keyPath, random: SystemRandom())
            let store = try SQLiteConsoleStore(path: path, clock: WallClock.manual(time).millis)
            let token = try await AccessService(store: store, clock: .manual(time)).bootstrap(
                admin: try OperatorName("root"))
            caller = Caller(token: token, tenant: "sandbox")
        }

        func console(signing: Bool, every: Int64 = 100) throws -> LocalConsole {
            try LocalConsole(
                storePath: path, clock: .manual(time), auditKeyPath: signing ? keyPath : nil,
                auditCheckpointEvery: every)
        }

        func checkpoints() async throws -> [AuditCheckpoint] {
            try await SQLiteConsoleStore(path: path, clock: WallClock.manual(time).millis).auditCheckpoints()
        }

        func cleanUp() { try? FileManager.default.removeItem(at: directory) }
    }

    /// How many times the injected sleep ran (the loop's closure is `@Sendable`).
    typealias Ticks = Counter

    @Test func requestsSignACheckpointEveryNEntries() async throws {
        let setup = try await Setup()
        defer { setup.cleanUp() }
        let console = try setup.console(signing: true, every: 3)
        #expect(console.auditSigner?.publicKey == setup.publicKey)
        // `stats` writes one read audit; the bootstrap wrote entry 1.
        for _ in 0..<7 { _ = try await console.perform(StatsOperation(), as: setup.caller) }
        await #expect(try setup.checkpoints().map(\.seq) == [2, 5, 8])
        // A refused request is audited too, and counts.
        let stranger = Caller(token: setup.caller.token, tenant: "elsewhere")
        for _ in 0..<3 { _ = try? await console.perform(StatsOperation(), as: stranger) }
        await #expect(try setup.checkpoints().map(\.seq) == [2, 5, 8, 11])

        // `audit verify` without a key checks with the console's own.
        let result = try await console.perform(AuditVerifyOperation(), as: setup.caller)
        #expect(result.ok && result.checkpointsVerified == 4 && result.keyFingerprint == setup.publicKey.fingerprint)
        #expect(result.lastCheckpointSeq == 11 && result.uncoveredEntries == 0)
        // With another key every checkpoint is refused.
        let other = try P256.publicKey(privateKey: P256.generatePrivateKey(), compressed: true)
        let forged = try await console.perform(AuditVerifyOperation(publicKey: Hex.encode(other)), as: setup.caller)
        #expect(!forged.ok && forged.finding == "bad_signature" && forged.firstBadSeq == 2)
        do {
            _ = try await console.perform(AuditVerifyOperation(publicKey: "not a key"), as: setup.caller)
            Issue.record("a malformed public key was accepted")
        } catch {
            #expect(error.code == "invalid_public_key")
        }
    }

    @Test func theLoopSignsWhatArrivedEachIntervalAndOnStop() async throws {
        let setup = try await Setup()
        defer { setup.cleanUp() }
        let console = try setup.console(signing: true)
        let ticks = Ticks()
        let start = setup.time.now
        let caller = setup.caller
        let time = setup.time
        await console.checkpointLoop(every: 60) { millis in
            #expect(millis == 60_000)
            let tick = ticks.next()
            time.advance(byMillis: millis)
            switch tick {
            case 1:
                // The first request finds no checkpoint and signs at once; the second waits for the tick.
                for _ in 0..<2 { _ = try await console.perform(StatsOperation(), as: caller) }
            case 2:
                break
            default:
                _ = try await console.perform(StatsOperation(), as: caller)
                throw CancellationError()
            }
        }
        #expect(ticks.value == 3)
        let checkpoints = try await setup.checkpoints()
        #expect(checkpoints.map(\.seq) == [2, 3, 4])
        #expect(checkpoints.map(\.atMillis) == [start + 60_000, start + 60_000, start + 180_000])
        #expect(console.auditSigner?.lastError == nil)
    }

    @Test func withoutAKeyNothingIsSignedAndTheLoopOnlyWaits() async throws {
        let setup = try await Setup()
        defer { setup.cleanUp() }
        let console = try setup.console(signing: false)
        #expect(console.auditSigner == nil)
        let ticks = Ticks()
        let caller = setup.caller
        await console.checkpointLoop(every: 5) { _ in
            _ = try await console.perform(StatsOperation(), as: caller)
            if ticks.next() == 3 { throw CancellationError() }
        }
        #expect(ticks.value == 3)
        await #expect(try setup.checkpoints().isEmpty)
        let result = try await console.perform(AuditVerifyOperation(), as: setup.caller)
        #expect(result.ok && result.checkpoints == nil && result.keyFingerprint == nil)
    }

    @Test func aKeyFileOthersCanReadIsRefusedInOneLine() async throws {
        let setup = try await Setup()
        defer { setup.cleanUp() }
        let secret = try String(contentsOfFile: setup.keyPath, encoding: .utf8)
            .trimmingCharacters(in: .whitespacesAndNewlines)
        chmod(setup.keyPath, 0o644)
        let insecure = #expect(throws: ConsoleError.self) {
            try LocalConsole(storePath: setup.path, auditKeyPath: setup.keyPath)
        }
        #expect(insecure?.code == "insecure_key_file")
        #expect(insecure.map { !$0.message.contains("\n") && !$0.message.contains(secret) } == true)
        #expect(insecure?.message.contains(setup.keyPath) == true)
        let missing = #expect(throws: ConsoleError.self) {
            try LocalConsole(storePath: setup.path, auditKeyPath: setup.keyPath + ".missing")
        }
        #expect(missing?.code == "invalid_key_file")
    }

    @Test func theAuditOperationsOnlyReadAndRoundTrip() throws {
        // No operation writes an entry or a checkpoint: the audit ones are these three readers.
        let auditNames = ConsoleOperations.all.map { $0.name }.filter { $0.hasPrefix("audit") }
        #expect(Set(auditNames) == ["audit.list", "audit.verify", "audit.export"])
        #expect(ConsoleOperations.byName.count == ConsoleOperations.all.count)

        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        func roundTrip<T: Codable>(_ value: T) throws -> Bool {
            let json = try encoder.encode(value)
            return try encoder.encode(try JSONDecoder().decode(T.self, from: json)) == json
        }
        #expect(
            try roundTrip(
                AuditListOperation(operatorName: "bob", action: "reset.", sinceMillis: 5, afterSeq: 3, limit: 10)))
        #expect(try roundTrip(AuditListOperation(operatorName: nil, action: nil, sinceMillis: nil, limit: 1)))
        #expect(try roundTrip(AuditVerifyOperation(publicKey: "02ab")))
        #expect(try roundTrip(AuditVerifyOperation()))
        #expect(try roundTrip(AuditExportOperation(sinceMillis: 7, afterSeq: 9, limit: 2)))
        let entry = AuditEntry(
            seq: 1, at: 2, draft: AuditDraft(operatorName: "root", tenant: nil, action: "a", details: ["k": "v"]),
            prevHash: AuditEntry.genesisHash, hash: String(repeating: "1", count: 64))
        #expect(try roundTrip(AuditListOperation.Output(entries: [entry])))
        let checkpoint = AuditCheckpoint(
            seq: 1, headHash: entry.hash, atMillis: 3, prevCheckpointHash: AuditEntry.genesisHash, signature: "30")
        #expect(try roundTrip(AuditExportPage(entries: [entry], checkpoint: checkpoint, more: false)))
        #expect(try roundTrip(AuditExportPage(entries: [], checkpoint: nil, more: true)))
    }
}
