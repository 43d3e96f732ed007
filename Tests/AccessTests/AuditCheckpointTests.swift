import Access
import BackupCrypto
import BackupModel
import BackupctlTestSupport
import ConsoleStore
import Foundation
import GRDB
import Testing

@Suite struct AuditCheckpointTests {
    /// A store with `n` entries beyond the bootstrap ones, and checkpoints signed every `every` entries.
    func signed(_ n: Int, every: Int64, key: SecretBytes, _ backend: TestBackend) async throws
        -> (TempStore, [AuditCheckpoint])
    {
        let fixture = try await TempStore(backend)
        let (_, session) = try await fixture.bootstrap()
        for i in 0..<n {
            fixture.time.advance(byMillis: 1000)
            try await fixture.store.appendAudit(
                session.audit("backup.show", target: "backup_\(i)", details: ["i": "\(i)"]))
        }
        let entries = try await fixture.store.auditEntries(tenant: nil, afterSeq: 0, limit: 10_000)
        var checkpoints: [AuditCheckpoint] = []
        for entry in entries where entry.seq % every == 0 {
            checkpoints.append(
                try AuditCheckpoint.sign(
                    seq: entry.seq, headHash: entry.hash, atMillis: entry.seq * 1000, previous: checkpoints.last,
                    privateKey: key))
        }
        return (fixture, checkpoints)
    }

    /// Runs `sql` (statements separated by `;`) straight on the store's tables, as a tamperer would.
    func raw(_ fixture: TempStore, _ sql: String) async throws {
        for statement in sql.split(separator: ";") where !statement.allSatisfy(\.isWhitespace) {
            _ = try await storeSQL(fixture.store, SQLStatement(stringLiteral: String(statement)))
        }
    }

    let key = P256.generatePrivateKey()
    func publicKey() throws -> [UInt8] { try P256.publicKey(privateKey: key, compressed: true) }

    @Test(arguments: TestBackend.available) func aRotatedKeyVerifiesWithTheRetiredKeyBesideIt(backend: TestBackend)
        async throws
    {
        let fixture = try await TempStore(backend)
        let (_, session) = try await fixture.bootstrap()
        let newKey = P256.generatePrivateKey()
        var checkpoints: [AuditCheckpoint] = []
        for i in 0..<6 {
            let entry = try await fixture.store.appendAudit(session.audit("backup.show", target: "backup_\(i)"))
            // The first three checkpoints under the old key, then the rotation.
            checkpoints.append(
                try AuditCheckpoint.sign(
                    seq: entry.seq, headHash: entry.hash, atMillis: entry.at, previous: checkpoints.last,
                    privateKey: i < 3 ? key : newKey))
        }
        let newPublic = try P256.publicKey(privateKey: newKey, compressed: true)
        let onlyNew = try await AuditLog.verifyCheckpoints(
            store: fixture.store, checkpoints: checkpoints, publicKeys: [newPublic])
        #expect(!onlyNew.ok && onlyNew.code == "bad_signature" && onlyNew.badSeq == checkpoints[0].seq)
        let both = try await AuditLog.verifyCheckpoints(
            store: fixture.store, checkpoints: checkpoints, publicKeys: [try publicKey(), newPublic])
        #expect(both.ok && both.checkpoints == 6)
        // A key that signed none of them does not help a forged checkpoint through.
        let stranger = try P256.publicKey(privateKey: P256.generatePrivateKey(), compressed: true)
        await #expect(
            !(try AuditLog.verifyCheckpoints(
                store: fixture.store, checkpoints: checkpoints, publicKeys: [newPublic, stranger]
            ).ok))
    }

    @Test(arguments: TestBackend.available) func intactChainAndCheckpointsVerify(backend: TestBackend) async throws {
        let (fixture, checkpoints) = try await signed(20, every: 5, key: key, backend)
        let result = try await AuditLog.verifyCheckpoints(
            store: fixture.store, checkpoints: checkpoints, publicKey: try publicKey())
        let head = try #require(try await fixture.store.latestAuditEntries(tenant: nil, limit: 1).last).seq
        #expect(result.ok && result.code == nil && result.checkpoints == checkpoints.count)
        #expect(result.lastCheckpointSeq == head - head % 5)
        #expect(result.uncoveredEntries == Int(head % 5))
    }

    @Test(arguments: TestBackend.available) func rewrittenEntryWithRecomputedChainIsDetected(backend: TestBackend)
        async throws
    {
        let (fixture, checkpoints) = try await signed(12, every: 5, key: key, backend)
        // Rewrite entry 3 and recompute every later hash: the chain alone verifies again.
        var entries = try await fixture.store.auditEntries(tenant: nil, afterSeq: 0, limit: 100)
        var prev = AuditEntry.genesisHash
        for index in entries.indices {
            if entries[index].seq == 3 { entries[index].target = "forged" }
            entries[index].prevHash = prev
            entries[index].hash = SHA256.hex(Array(prev.utf8) + Array(entries[index].canonicalBytes))
            prev = entries[index].hash
        }
        for entry in entries {
            _ = try await storeSQL(
                fixture.store,
                """
                UPDATE audit SET target = \(entry.target), prev_hash = \(entry.prevHash), hash = \(entry.hash)
                WHERE seq = \(entry.seq)
                """)
        }
        await #expect(try AuditLog.verify(store: fixture.store).ok)
        let result = try await AuditLog.verifyCheckpoints(
            store: fixture.store, checkpoints: checkpoints, publicKey: try publicKey())
        #expect(!result.ok && result.code == "recomputed_chain" && result.badSeq == 5)
    }

    @Test(arguments: TestBackend.available) func truncatedTailIsDetected(backend: TestBackend) async throws {
        let (fixture, checkpoints) = try await signed(12, every: 5, key: key, backend)
        let last = try #require(checkpoints.last)
        try await raw(fixture, "DELETE FROM audit WHERE seq >= \(last.seq - 1)")
        await #expect(try AuditLog.verify(store: fixture.store).ok)
        let result = try await AuditLog.verifyCheckpoints(
            store: fixture.store, checkpoints: checkpoints, publicKey: try publicKey())
        #expect(!result.ok && result.code == "truncated_tail" && result.badSeq == last.seq)
    }

    @Test(arguments: TestBackend.available) func deletedCheckpointIsDetected(backend: TestBackend) async throws {
        let (fixture, checkpoints) = try await signed(16, every: 5, key: key, backend)
        #expect(checkpoints.count >= 3)
        var remaining = checkpoints
        remaining.remove(at: 1)
        let result = try await AuditLog.verifyCheckpoints(
            store: fixture.store, checkpoints: remaining, publicKey: try publicKey())
        #expect(!result.ok && result.code == "checkpoint_missing" && result.badSeq == checkpoints[2].seq)
    }

    @Test(arguments: TestBackend.available) func checkpointSignedByAnotherKeyIsRefused(backend: TestBackend)
        async throws
    {
        let other = P256.generatePrivateKey()
        let (fixture, checkpoints) = try await signed(10, every: 5, key: other, backend)
        let result = try await AuditLog.verifyCheckpoints(
            store: fixture.store, checkpoints: checkpoints, publicKey: try publicKey())
        #expect(!result.ok && result.code == "bad_signature" && result.badSeq == checkpoints.first?.seq)
        #expect(
            checkpoints.allSatisfy {
                $0.isSigned(by: (try? P256.publicKey(privateKey: other, compressed: false)) ?? [])
            })
    }

    @Test(arguments: TestBackend.available) func alteredSignedFieldBreaksTheSignature(backend: TestBackend) async throws
    {
        let (fixture, checkpoints) = try await signed(10, every: 5, key: key, backend)
        var altered = checkpoints
        altered[0].atMillis += 1
        let result = try await AuditLog.verifyCheckpoints(
            store: fixture.store, checkpoints: altered, publicKey: try publicKey())
        #expect(!result.ok && result.code == "bad_signature")
    }
}

@Suite struct AuditCheckpointStoreTests {
    @Test func checkpointsRoundTripThroughTheStoreAndADeletedRowIsDetected() async throws {
        let fixture = try TempStore()
        let (_, session) = try await fixture.bootstrap()
        let key = P256.generatePrivateKey()
        var previous: AuditCheckpoint?
        for i in 0..<3 {
            let entry = try await fixture.store.appendAudit(session.audit("backup.show", target: "backup_\(i)"))
            let checkpoint = try AuditCheckpoint.sign(
                seq: entry.seq, headHash: entry.hash, atMillis: entry.at, previous: previous, privateKey: key)
            try await fixture.store.appendAuditCheckpoint(checkpoint)
            previous = checkpoint
        }
        let stored = try await fixture.store.auditCheckpoints()
        #expect(stored.count == 3 && stored.last == previous)
        let publicKey = try P256.publicKey(privateKey: key, compressed: true)
        await #expect(
            try AuditLog.verifyCheckpoints(store: fixture.store, checkpoints: stored, publicKey: publicKey).ok)

        let queue = try DatabaseQueue(path: fixture.path)
        try await queue.write { try $0.execute(sql: "DELETE FROM audit_checkpoints WHERE id = 2") }
        let result = try await AuditLog.verifyCheckpoints(
            store: fixture.store, checkpoints: try await fixture.store.auditCheckpoints(), publicKey: publicKey)
        #expect(!result.ok && result.code == "checkpoint_missing" && result.badSeq == stored[2].seq)
    }
}

@Suite struct AuditCheckpointPolicyTests {
    @Test(arguments: TestBackend.available) func checkpointsAreWrittenEveryNEntriesAndAfterAQuietPeriod(
        backend: TestBackend
    ) async throws {
        let fixture = try await TempStore(backend)
        let (_, session) = try await fixture.bootstrap()
        let key = P256.generatePrivateKey()
        let now: Int64 = 1_000_000
        // The first call signs the bootstrap entries (no checkpoint yet).
        await #expect(
            try AuditLog.checkpointIfDue(store: fixture.store, privateKey: key, nowMillis: now, every: 5) != nil)
        var written = 0
        for i in 0..<10 {
            try await fixture.store.appendAudit(session.audit("backup.show", target: "backup_\(i)"))
            if try await AuditLog.checkpointIfDue(store: fixture.store, privateKey: key, nowMillis: now, every: 5)
                != nil
            {
                written += 1
            }
        }
        #expect(written == 2)
        // Quiet: nothing new, nothing due even much later; one new entry after T is due.
        await #expect(
            try AuditLog.checkpointIfDue(store: fixture.store, privateKey: key, nowMillis: now + 600_000, every: 5)
                == nil)
        try await fixture.store.appendAudit(session.audit("backup.show", target: "late"))
        await #expect(
            try AuditLog.checkpointIfDue(store: fixture.store, privateKey: key, nowMillis: now + 299_999, every: 5)
                == nil)
        await #expect(
            try AuditLog.checkpointIfDue(store: fixture.store, privateKey: key, nowMillis: now + 300_000, every: 5)
                != nil)
        await #expect(
            try AuditLog.checkpointIfDue(
                store: fixture.store, privateKey: key, nowMillis: now + 300_001, every: 5, force: true) != nil)
        let stored = try await fixture.store.auditCheckpoints()
        #expect(stored.count == 5)
        let publicKey = try P256.publicKey(privateKey: key, compressed: false)
        await #expect(
            try AuditLog.verifyCheckpoints(store: fixture.store, checkpoints: stored, publicKey: publicKey).ok)
    }
}
