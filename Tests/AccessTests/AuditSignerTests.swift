import Access
import BackupCrypto
import BackupModel
import BackupctlTestSupport
import ConsoleStore
import Foundation
import GRDB
import Testing

/// The signer the server runs: every N entries after a request, every T seconds while entries
/// arrive, and the key file it reads.
@Suite struct AuditSignerTests {
    let key = P256.generatePrivateKey()

    func verify(_ fixture: TempStore, _ signer: AuditSigner) async throws -> CheckpointVerification {
        try await AuditLog.verifyCheckpoints(
            store: fixture.store, checkpoints: try await fixture.store.auditCheckpoints(),
            publicKey: signer.publicKey.bytes)
    }

    @Test(arguments: TestBackend.available) func signsOnceEveryNEntriesAfterAppends(backend: TestBackend) async throws {
        let fixture = try await TempStore(backend)
        let (_, session) = try await fixture.bootstrap()
        let signer = try AuditSigner(privateKey: key, clock: fixture.clock, everyEntries: 4)
        // No checkpoint yet: the first call signs what the bootstrap wrote.
        let first = try #require(await signer.checkpointAfterAppends(store: fixture.store))
        var signedAt: [Int64] = []
        for i in 0..<13 {
            fixture.time.advance(byMillis: 10)
            try await fixture.store.appendAudit(session.audit("backup.show", target: "b\(i)"))
            if let checkpoint = await signer.checkpointAfterAppends(store: fixture.store) {
                signedAt.append(checkpoint.seq)
            }
        }
        #expect(signedAt == [first.seq + 4, first.seq + 8, first.seq + 12])
        // Time alone does not make the per-request check sign: that is the loop's job.
        fixture.time.advance(byMillis: 3_600_000)
        #expect(await signer.checkpointAfterAppends(store: fixture.store) == nil)
        let result = try await verify(fixture, signer)
        #expect(result.ok && result.checkpoints == 4 && result.uncoveredEntries == 1)
        #expect(signer.lastError == nil)
    }

    @Test(arguments: TestBackend.available) func readAuditsAreInTheChainAsSoonAsTheyAreAppended(backend: TestBackend)
        async throws
    {
        let fixture = try await TempStore(backend)
        let (_, session) = try await fixture.bootstrap()
        let signer = try AuditSigner(privateKey: key, clock: fixture.clock, everyEntries: 2)
        await signer.checkpointAfterAppends(store: fixture.store)
        for i in 0..<5 { try await fixture.store.appendAudit(session.audit("backup.lookup", target: "l\(i)")) }
        let checkpoint = try #require(await signer.checkpointAfterAppends(store: fixture.store))
        #expect(checkpoint.seq == (try await fixture.store.latestAuditEntries(tenant: nil, limit: 1).last?.seq))
        await #expect(try verify(fixture, signer).ok)
    }

    @Test(arguments: TestBackend.available) func theLoopSignsEachIntervalWhileEntriesArriveAndOnceMoreWhenStopped(
        backend: TestBackend
    ) async throws {
        let fixture = try await TempStore(backend)
        let (_, session) = try await fixture.bootstrap()
        let signer = try AuditSigner(privateKey: key, clock: fixture.clock, everyEntries: 1000)
        // What arrives during each interval; the sleep after the last one is cancelled, and
        // what arrived in it is signed on the way out.
        let arrivals = [2, 0, 0, 3, 1]
        var sleeps: [Int64] = []
        let start = fixture.time.now
        await signer.run(store: { fixture.store }, every: 30) { millis in
            sleeps.append(millis)
            let tick = sleeps.count - 1
            fixture.time.advance(byMillis: millis)
            for i in 0..<arrivals[tick] {
                try await fixture.store.appendAudit(session.audit("backup.show", target: "t\(tick)-\(i)"))
            }
            if tick == arrivals.count - 1 { throw CancellationError() }
        }
        #expect(sleeps == Array(repeating: 30_000, count: arrivals.count))
        let checkpoints = try await fixture.store.auditCheckpoints()
        // Tick 1 signs the bootstrap entries and its 2; ticks 2 and 3 find nothing new; tick 4
        // signs 3; the stop signs the last 1.
        #expect(checkpoints.map(\.atMillis) == [start + 30_000, start + 120_000, start + 150_000])
        let head = try #require(try await fixture.store.latestAuditEntries(tenant: nil, limit: 1).last)
        #expect(checkpoints.last?.seq == head.seq && checkpoints.last?.headHash == head.hash)
        let result = try await verify(fixture, signer)
        #expect(result.ok && result.checkpoints == 3 && result.uncoveredEntries == 0)
    }

    @Test(arguments: TestBackend.available) func aFailingStoreIsKeptAsTheLastErrorAndTheLoopGoesOn(backend: TestBackend)
        async throws
    {
        let fixture = try await TempStore(backend)
        _ = try await fixture.bootstrap()
        let signer = try AuditSigner(privateKey: key, clock: fixture.clock)
        var calls = 0
        var opens = 0
        await signer.run(
            store: { () throws(ConsoleError) -> any AuditCheckpointStore in
                opens += 1
                if opens == 1 { throw ConsoleError.internalError("the store is not there") }
                return fixture.store
            }, every: 1
        ) { _ in
            calls += 1
            if calls == 1 { return }
            #expect(signer.lastError?.message == "the store is not there")
            throw CancellationError()
        }
        #expect(calls == 2 && opens == 2)
        #expect(signer.lastError == nil)
        #expect(try await fixture.store.auditCheckpoints().count == 1)
    }

    @Test(arguments: TestBackend.available) func aForgedCheckpointNeitherCrashesTheSignerNorIsSignedOver(
        backend: TestBackend
    ) async throws {
        let fixture = try await TempStore(backend)
        let (_, session) = try await fixture.bootstrap()
        try await fixture.store.appendAuditCheckpoint(
            AuditCheckpoint(
                seq: 1, headHash: String(repeating: "a", count: 64), atMillis: .min,
                prevCheckpointHash: AuditEntry.genesisHash, signature: "30"))
        try await fixture.store.appendAudit(session.audit("backup.show", target: "b"))
        let signer = try AuditSigner(privateKey: key, clock: fixture.clock, everyEntries: 100)
        // Chaining to it would vouch for it: the signer refuses, and says why (readiness shows it).
        #expect(await signer.checkpointAfterAppends(store: fixture.store) == nil)
        #expect(signer.lastError?.code == "audit_checkpoint_forged")
        #expect(await signer.checkpointIfBehind(store: fixture.store) == nil)
        #expect(try await fixture.store.auditCheckpoints().count == 1)
        let result = try await verify(fixture, signer)
        #expect(!result.ok && result.code == "bad_signature" && result.badSeq == 1)
    }

    @Test(arguments: TestBackend.available) func twoSignersNeverChainToTheSamePredecessor(backend: TestBackend)
        async throws
    {
        let fixture = try await TempStore(backend)
        let (_, session) = try await fixture.bootstrap()
        let signer = try AuditSigner(privateKey: key, clock: fixture.clock, everyEntries: 1)
        let store = fixture.store
        await withTaskGroup(of: Void.self) { group in
            for worker in 0..<4 {
                group.addTask {
                    for i in 0..<10 {
                        _ = try? await store.appendAudit(session.audit("backup.show", target: "w\(worker)-\(i)"))
                        await signer.checkpointAfterAppends(store: store)
                    }
                }
            }
        }
        let checkpoints = try await fixture.store.auditCheckpoints()
        #expect(checkpoints.count > 1)
        #expect(Set(checkpoints.map(\.prevCheckpointHash)).count == checkpoints.count)
        await #expect(try verify(fixture, signer).ok)
    }
}

@Suite struct AuditKeyFileTests {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("auditkey-\(UUID().uuidString)")

    init() throws { try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true) }

    func path(_ name: String) -> String { directory.appendingPathComponent(name).path }

    func mode(_ path: String) throws -> Int {
        try #require(try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int)
    }

    @Test func generatedKeyIsOwnerOnlyAndLoadsToTheSamePublicKey() throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = path("audit.key")
        let publicKey = try AuditKeyFile.generate(to: file, random: SeededRandom(seed: 3))
        #expect(try mode(file) == 0o600)
        let text = try String(contentsOfFile: file, encoding: .utf8)
        #expect(text.count == 65 && text.hasSuffix("\n"))
        let signer = try AuditSigner(keyFile: file, clock: .system)
        #expect(signer.publicKey == publicKey)
        #expect(publicKey.publicKey.count == 66 && publicKey.fingerprint.hasPrefix("sha256:"))
        #expect(!publicKey.publicKey.contains(text.dropLast()) && !publicKey.fingerprint.contains(text.dropLast()))
        // The public half reads back from hex or from keygen's JSON.
        #expect(try AuditPublicKey(text: " \(publicKey.publicKey)\n") == publicKey)
        #expect(try AuditPublicKey(text: #"{"publicKey":"\#(publicKey.publicKey)"}"#) == publicKey)
        let uncompressed = Hex.encode(try P256.decompress(publicKey.bytes))
        #expect(try AuditPublicKey(text: uncompressed) == publicKey)
        #expect(throws: ConsoleError.self) { try AuditPublicKey(text: "zz") }
    }

    @Test func anExistingFileIsNeverOverwritten() throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = path("audit.key")
        try Data("keep me\n".utf8).write(to: URL(fileURLWithPath: file))
        let error = #expect(throws: ConsoleError.self) {
            try AuditKeyFile.generate(to: file, random: SystemRandom())
        }
        #expect(error?.code == "key_file_exists")
        #expect(try String(contentsOfFile: file, encoding: .utf8) == "keep me\n")
    }

    @Test func aKeyOthersCanReadOrABadKeyIsRefusedInOneLine() throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = path("audit.key")
        _ = try AuditKeyFile.generate(to: file, random: SystemRandom())
        let secret = try String(contentsOfFile: file, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        for mode in [0o644, 0o640, 0o604, 0o700] {
            chmod(file, mode_t(mode))
            let error = #expect(throws: ConsoleError.self) { try AuditKeyFile.load(file) }
            #expect(error?.code == "insecure_key_file", "mode \(String(mode, radix: 8))")
            #expect(error.map { !$0.message.contains("\n") && !$0.message.contains(secret) } == true)
        }
        chmod(file, 0o400)
        #expect((try? AuditKeyFile.load(file)) != nil)

        let garbage = path("garbage.key")
        _ = FileManager.default.createFile(
            atPath: garbage, contents: Data("not a key\n".utf8), attributes: [.posixPermissions: 0o600])
        #expect(throws: ConsoleError.self) { try AuditKeyFile.load(garbage) }
        let missing = #expect(throws: ConsoleError.self) { try AuditKeyFile.load(path("missing.key")) }
        #expect(missing?.code == "invalid_key_file")
        let zero = path("zero.key")
        _ = FileManager.default.createFile(
            atPath: zero, contents: Data((String(repeating: "0", count: 64) + "\n").utf8),
            attributes: [.posixPermissions: 0o600])
        let invalid = #expect(throws: ConsoleError.self) { try AuditKeyFile.load(zero) }
        #expect(invalid?.code == "invalid_private_key")
    }
}

@Suite struct SignedAuditLogTests {
    let key = P256.generatePrivateKey()

    /// Bootstrap, a tenant `acme` with its own admin, entries in both tenants, checkpoints every 4.
    func fixture() async throws -> (TempStore, root: Session, acmeAdmin: Session, AuditSigner) {
        let fixture = try TempStore()
        let (rootOp, root) = try await fixture.bootstrap()
        let access = fixture.access(seed: 11)
        try await access.createTenant(
            TenantRecord(name: try TenantName("acme"), isSandbox: true, createdAt: 1), by: rootOp)
        let acmeRoot = try await access.session(operator: rootOp, tenant: try TenantName("acme"))
        let token = try await access.addOperator(try OperatorName("ada"), role: .admin, session: acmeRoot)
        let ada = try await access.session(
            operator: try await access.authenticate(token: token), tenant: try TenantName("acme"))
        let signer = try AuditSigner(privateKey: key, clock: fixture.clock, everyEntries: 4)
        for i in 0..<10 {
            fixture.time.advance(byMillis: 1001)
            try await fixture.store.appendAudit((i % 2 == 0 ? root : ada).audit("backup.show", target: "b\(i)"))
            await signer.checkpointAfterAppends(store: fixture.store)
        }
        return (fixture, root, ada, signer)
    }

    @Test func verifyNamesATruncatedTailForTheGlobalAdminOnly() async throws {
        let (fixture, root, ada, signer) = try await fixture()
        let log = SignedAuditLog(store: fixture.store)
        let intact = try await log.verify(session: root, publicKey: signer.publicKey)
        let checkpoints = try await fixture.store.auditCheckpoints()
        #expect(intact.ok && intact.finding == nil && intact.checkpoints == checkpoints.count)
        #expect(
            intact.checkpointsVerified == checkpoints.count && intact.keyFingerprint == signer.publicKey.fingerprint)
        #expect(intact.lastCheckpointSeq == checkpoints.last?.seq)
        // Without a key the checkpoints are counted, not checked.
        let keyless = try await log.verify(session: root, publicKey: nil)
        #expect(keyless.ok && keyless.checkpoints == checkpoints.count && keyless.checkpointsVerified == nil)

        let last = try #require(checkpoints.last)
        let queue = try DatabaseQueue(path: fixture.path)
        try await queue.write { try $0.execute(sql: "DELETE FROM audit WHERE seq >= ?", arguments: [last.seq - 1]) }
        await #expect(try log.verify(session: root, publicKey: nil).ok, "the chain alone cannot see it")
        let truncated = try await log.verify(session: root, publicKey: signer.publicKey)
        #expect(!truncated.ok && truncated.finding == "truncated_tail" && truncated.firstBadSeq == last.seq)
        #expect(truncated.checkpointsVerified == checkpoints.count - 1)
        let scoped = try await log.verify(session: ada, publicKey: signer.publicKey)
        #expect(!scoped.ok && scoped.finding == "truncated_tail" && scoped.firstBadSeq == nil)
        #expect(scoped.lastCheckpointSeq == nil && scoped.uncoveredEntries == nil && scoped.scope == "acme")
        #expect(scoped.problem?.contains("\(last.seq)") == false)
    }

    @Test func aChainBreakIsReportedBeforeTheCheckpoints() async throws {
        let (fixture, root, _, signer) = try await fixture()
        let queue = try DatabaseQueue(path: fixture.path)
        try await queue.write { try $0.execute(sql: "UPDATE audit SET target = 'forged' WHERE seq = 3") }
        let result = try await SignedAuditLog(store: fixture.store).verify(session: root, publicKey: signer.publicKey)
        #expect(!result.ok && result.finding == "rewritten_entry" && result.firstBadSeq == 3)
        #expect(result.checkpointsVerified != nil)

        let (other, otherRoot, _, otherSigner) = try await self.fixture()
        let otherQueue = try DatabaseQueue(path: other.path)
        try await otherQueue.write { try $0.execute(sql: "DELETE FROM audit WHERE seq = 5") }
        let removed = try await SignedAuditLog(store: other.store).verify(
            session: otherRoot, publicKey: otherSigner.publicKey)
        #expect(!removed.ok && removed.finding == "removed_entry" && removed.firstBadSeq == 6)
    }

    @Test func aViewerCannotVerifyOrExport() async throws {
        let (fixture, root, _, signer) = try await fixture()
        let access = fixture.access(seed: 12)
        let token = try await access.addOperator(try OperatorName("vera"), role: .viewer, session: root)
        let vera = try await access.session(
            operator: try await access.authenticate(token: token), tenant: root.tenantName)
        let log = SignedAuditLog(store: fixture.store)
        await #expect(throws: ConsoleError.self) { try await log.verify(session: vera, publicKey: signer.publicKey) }
        await #expect(throws: ConsoleError.self) {
            try await log.export(session: vera, sinceMillis: 0, afterSeq: 0, limit: 10)
        }
    }

    @Test func exportPagesTheWholeChainAndEndsWithTheNewestCheckpoint() async throws {
        let (fixture, root, ada, _) = try await fixture()
        let log = SignedAuditLog(store: fixture.store)
        let all = try await fixture.store.auditEntries(tenant: nil, afterSeq: 0, limit: 1000)
        var exported: [AuditEntry] = []
        var afterSeq: Int64 = 0
        var checkpoint: AuditCheckpoint?
        for _ in 0..<100 {
            let page = try await log.export(session: root, sinceMillis: 0, afterSeq: afterSeq, limit: 3)
            #expect(page.entries.count <= 3)
            #expect(page.checkpoint == nil || !page.more)
            exported += page.entries
            checkpoint = page.checkpoint
            guard page.more, let last = page.entries.last else { break }
            afterSeq = last.seq
        }
        #expect(exported == all)
        #expect(checkpoint == (try await fixture.store.latestAuditCheckpoint()))
        // --since keeps the later entries only; a tenant admin gets theirs and no checkpoint.
        let since = all[all.count - 3].at
        await #expect(
            try log.export(session: root, sinceMillis: since, afterSeq: 0, limit: 100).entries == all.suffix(3))
        let scoped = try await log.export(session: ada, sinceMillis: 0, afterSeq: 0, limit: 100)
        #expect(scoped.entries == all.filter { $0.tenant == "acme" } && scoped.checkpoint == nil && !scoped.more)
        await #expect(throws: ConsoleError.self) {
            try await log.export(session: root, sinceMillis: 0, afterSeq: 0, limit: 0)
        }
    }

    @Test func exportLinesAndVerificationRoundTripExactly() async throws {
        let (fixture, root, _, signer) = try await fixture()
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let entries = try await fixture.store.auditEntries(tenant: nil, afterSeq: 0, limit: 1000)
        let checkpoint = try #require(try await fixture.store.latestAuditCheckpoint())
        for line in entries.map(AuditExportLine.entry) + [.checkpoint(checkpoint)] {
            let json = try encoder.encode(line)
            let back = try JSONDecoder().decode(AuditExportLine.self, from: json)
            let again = try encoder.encode(back)
            #expect(back == line && again == json)
        }
        let bootstrap = try #require(entries.first)
        let text = String(decoding: try encoder.encode(AuditExportLine.entry(bootstrap)), as: UTF8.self)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
        #expect(
            Set(object.keys) == [
                "type", "seq", "time", "operator", "tenant", "action", "target", "details", "hash", "prevHash",
            ])
        #expect(AuditExportLine.time(1_790_000_001_234) == "2026-09-21T14:13:21.234Z")
        #expect(AuditExportLine.millis("2026-09-21T14:13:21.234Z") == 1_790_000_001_234)
        #expect(AuditExportLine.time(5) == "1970-01-01T00:00:00.005Z")

        let log = SignedAuditLog(store: fixture.store)
        let page = try await log.export(session: root, sinceMillis: 0, afterSeq: 0, limit: 100)
        var broken = try await log.verify(session: root, publicKey: signer.publicKey)
        for value in await [broken, try log.verify(session: root, publicKey: nil)] {
            let json = try encoder.encode(value)
            #expect(try encoder.encode(try JSONDecoder().decode(AuditVerification.self, from: json)) == json)
        }
        broken.ok = false
        broken.finding = "truncated_tail"
        broken.problem = "gone"
        broken.firstBadSeq = 9
        let json = try encoder.encode(broken)
        #expect(try JSONDecoder().decode(AuditVerification.self, from: json) == broken)
        let pageJSON = try encoder.encode(page)
        #expect(try encoder.encode(try JSONDecoder().decode(AuditExportPage.self, from: pageJSON)) == pageJSON)
    }
}
