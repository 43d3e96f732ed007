import Access
import BackupCrypto
import BackupModel
import ConsoleStore
import Foundation
import Testing

/// What a signer accepts at start and before it signs, beyond the chain extending its
/// high-water mark: the store's newest checkpoint must be genuine, a store with checkpoints
/// needs the mark, entries past the newest checkpoint are adopted only on the record, and a
/// rollback is accepted only by an explicit, recorded rebase.
@Suite struct AuditAnchorStartTests {
    typealias Signed = AuditTamperTests.Signed

    /// A checkpoint row as a database writer would forge one: any seq, any head, no real signature.
    func forge(
        _ s: Signed, seq: Int64, head: String = String(repeating: "0", count: 64), signedBy key: SecretBytes? = nil
    )
        async throws
    {
        var checkpoint = AuditCheckpoint(
            seq: seq, headHash: head, atMillis: 0,
            prevCheckpointHash: try #require(try await s.checkpoints().last).hash,
            signature: "00")
        if let key {
            checkpoint = try AuditCheckpoint.sign(
                seq: seq, headHash: head, atMillis: 0, previous: try await s.checkpoints().last, privateKey: key)
        }
        try await s.file.store().appendAuditCheckpoint(checkpoint)
    }

    @Test("a forged checkpoint past the head stops the signer, loudly, instead of silencing it")
    func forgedPastTheHead() async throws {
        let s = try await Signed()
        try await forge(s, seq: .max)
        try await s.fixture.store.appendAudit(s.session.audit("operator.grant", target: "mallory"))
        #expect(await s.signer.checkpointAfterAppends(store: s.fixture.store) == nil)
        #expect(s.signer.lastError?.code == "audit_checkpoint_forged")
        #expect(await s.signer.checkpointIfBehind(store: s.fixture.store) == nil)
        #expect(s.signer.lastError?.code == "audit_checkpoint_forged")
        let error = await #expect(throws: ConsoleError.self) { try await s.signer.checkStart(store: s.fixture.store) }
        #expect(error?.code == "audit_checkpoint_forged")
    }

    @Test("a checkpoint signed by another key over the real head is not chained to")
    func forgedByAnotherKey() async throws {
        let s = try await Signed()
        try await s.fixture.store.appendAudit(s.session.audit("operator.grant", target: "mallory"))
        let head = try #require(try await s.file.entries().last)
        try await forge(s, seq: head.seq, head: head.hash, signedBy: P256.generatePrivateKey())
        for _ in 0..<5 { try await s.fixture.store.appendAudit(s.session.audit("backup.show", target: "b")) }
        #expect(await s.signer.checkpointAfterAppends(store: s.fixture.store) == nil)
        #expect(s.signer.lastError?.code == "audit_checkpoint_forged")
    }

    @Test("a store with checkpoints needs the high-water mark, and a mark must be signed by the key")
    func markMissingOrAltered() async throws {
        let s = try await Signed()
        let line = try String(contentsOfFile: s.mark, encoding: .utf8)
        try FileManager.default.removeItem(atPath: s.mark)
        let missing = await #expect(throws: ConsoleError.self) { try await s.signer.checkStart(store: s.fixture.store) }
        #expect(missing?.code == "audit_anchor_missing")
        #expect(missing?.message.contains("--audit-rebase") == true)

        let mark = try #require(try AuditAnchor.checkpoints(inFile: s.witness).last)
        let other = try AuditCheckpoint.sign(
            seq: mark.seq, headHash: mark.headHash, atMillis: mark.atMillis, previous: nil,
            privateKey: P256.generatePrivateKey())
        try Data((AuditAnchor.line(other) + "\n").utf8).write(to: URL(fileURLWithPath: s.mark))
        let altered = await #expect(throws: ConsoleError.self) { try await s.signer.checkStart(store: s.fixture.store) }
        #expect(altered?.code == "invalid_anchor" && altered?.message.contains(s.mark) == true)

        try Data(line.utf8).write(to: URL(fileURLWithPath: s.mark))
        try await s.signer.checkStart(store: s.fixture.store)
    }

    @Test("entries past the newest checkpoint at start are recorded, then signed with the record")
    func unsignedTailAdopted() async throws {
        let s = try await Signed()
        let signed = try #require(try await s.checkpoints().last).seq
        try await s.file.appendUnsigned(3)
        let adopted = try await s.signer.checkStart(store: s.fixture.store)
        #expect(adopted == (signed + 1)...(signed + 3))
        let record = try #require(try await s.file.entries().last)
        #expect(record.action == "audit.unsigned_tail" && record.operatorName == "-")
        #expect(record.details["firstSeq"] == String(signed + 1) && record.details["lastSeq"] == String(signed + 3))
        #expect(record.details["entries"] == "3")
        #expect(try await s.checkpoints().last?.seq == record.seq)
        #expect(try await s.verify().ok)
        // A clean restart adopts nothing.
        #expect(try await s.signer.checkStart(store: s.fixture.store) == nil)
    }

    @Test("a store restored from an older copy is refused until rebased; the witness still shows the cut")
    func restoreThenRebase() async throws {
        let s = try await Signed()
        let before = try #require(try s.signer.highWaterMark())
        let cut = try await s.checkpoints()[1].seq
        try s.file.sql("DELETE FROM audit WHERE seq > \(cut)", "DELETE FROM audit_checkpoints WHERE seq > \(cut)")
        let refused = await #expect(throws: ConsoleError.self) { try await s.signer.checkStart(store: s.fixture.store) }
        #expect(refused?.code == "audit_chain_diverged" && refused?.message.contains("--audit-rebase") == true)

        let details = try await s.signer.rebase(store: s.fixture.store)
        #expect(details["anchorSeq"] == String(before.seq) && details["storeHeadSeq"] == String(cut))
        let record = try #require(try await s.file.entries().last)
        #expect(record.seq == cut + 1 && record.action == "audit.rebased")
        // The mark moved back to the rebased head; the signer starts and signs on.
        #expect(try s.signer.highWaterMark()?.seq == cut + 1)
        try await s.signer.checkStart(store: s.fixture.store)
        #expect(try await s.verify(anchored: false).ok)
        // The witness keeps its older lines: the rollback stays visible.
        let witnessed = try await s.verify()
        #expect(!witnessed.ok && witnessed.finding == "truncated_tail")
    }

    @Test("a rebase accepts a rollback only: not an intact store, a rewrite, or a store with no checkpoint")
    func rebaseRefusesWhatIsNotARollback() async throws {
        let s = try await Signed()
        let intact = await #expect(throws: ConsoleError.self) { try await s.signer.rebase(store: s.fixture.store) }
        #expect(intact?.code == "audit_rebase_refused" && intact?.message.contains("nothing to rebase") == true)
        let mark = try #require(try s.signer.highWaterMark())
        try await s.file.rewriteAndRecompute(mark.seq)
        let rewritten = await #expect(throws: ConsoleError.self) { try await s.signer.rebase(store: s.fixture.store) }
        #expect(rewritten?.code == "audit_rebase_refused" && rewritten?.message.contains("rewrite") == true)
        try s.file.sql("DELETE FROM audit WHERE seq > 12", "DELETE FROM audit_checkpoints")
        let bare = await #expect(throws: ConsoleError.self) { try await s.signer.rebase(store: s.fixture.store) }
        #expect(bare?.code == "audit_rebase_refused" && bare?.message.contains("no signed checkpoint") == true)
        #expect(try await s.file.entries().allSatisfy { $0.action != "audit.rebased" })
    }

    @Test("a rollback whose own checkpoints were rewritten is refused")
    func rebaseRefusesARewrittenCopy() async throws {
        let s = try await Signed()
        let checkpoints = try await s.checkpoints()
        let cut = checkpoints[2].seq
        try s.file.sql("DELETE FROM audit WHERE seq > \(cut)", "DELETE FROM audit_checkpoints WHERE seq > \(cut)")
        try await s.file.rewriteAndRecompute(checkpoints[0].seq)
        try s.file.sql("DELETE FROM audit_checkpoints WHERE seq = \(cut)")
        let error = await #expect(throws: ConsoleError.self) { try await s.signer.rebase(store: s.fixture.store) }
        // Its newest checkpoint no longer matches its entry, or an older one does not verify.
        #expect(
            ["audit_rebase_refused", "audit_chain_diverged"].contains(error?.code), "\(String(describing: error))")
        #expect(try await s.file.entries().allSatisfy { $0.action != "audit.rebased" })
    }

    @Test("a replayed older checkpoint as the newest is refused before anything is recorded")
    func replayedCheckpointRecordsNothing() async throws {
        let s = try await Signed()
        let old = try await s.checkpoints()[1]
        try await s.file.store().appendAuditCheckpoint(old)
        let before = try await s.file.entries().count
        let error = await #expect(throws: ConsoleError.self) { try await s.signer.checkStart(store: s.fixture.store) }
        #expect(error?.code == "audit_chain_diverged")
        #expect(try await s.file.entries().count == before)
    }

    @Test("an audit row at the largest seq is refused, not a crash")
    func headAtTheLargestSeq() async throws {
        let s = try await Signed()
        try s.file.sql("UPDATE audit SET seq = 9223372036854775807 WHERE seq = (SELECT max(seq) FROM audit)")
        let error = await #expect(throws: ConsoleError.self) {
            try await s.fixture.store.appendAudit(s.session.audit("backup.show", target: "b"))
        }
        #expect(error?.message.contains("largest") == true)
    }

    @Test("a rebase does not accept a forged newest checkpoint")
    func rebaseRefusesAForgery() async throws {
        let s = try await Signed()
        try await forge(s, seq: .max)
        let error = await #expect(throws: ConsoleError.self) { try await s.signer.rebase(store: s.fixture.store) }
        #expect(error?.code == "audit_checkpoint_forged")
    }

    @Test("a rotated key starts with the old key's mark carried over and the old key trusted")
    func rotation() async throws {
        let s = try await Signed()
        let newMark = s.fixture.directory.appendingPathComponent("audit-2.key.hwm").path
        let rotated = try AuditSigner(
            privateKey: P256.generatePrivateKey(), clock: s.fixture.clock, everyEntries: 5,
            highWaterMarkPath: newMark, witnessPath: s.witness)
        let missing = await #expect(throws: ConsoleError.self) { try await rotated.checkStart(store: s.fixture.store) }
        #expect(missing?.code == "audit_anchor_missing")
        try FileManager.default.copyItem(atPath: s.mark, toPath: newMark)
        let untrusted = await #expect(throws: ConsoleError.self) {
            try await rotated.checkStart(store: s.fixture.store)
        }
        #expect(untrusted?.code == "invalid_anchor")
        rotated.trustRetired([s.publicKey])
        try await rotated.checkStart(store: s.fixture.store)
        for _ in 0..<5 { try await s.fixture.store.appendAudit(s.session.audit("backup.show", target: "b")) }
        #expect(await rotated.checkpointAfterAppends(store: s.fixture.store) != nil)
        let result = try await SignedAuditLog(store: s.fixture.store).verify(
            session: s.session, publicKeys: [s.publicKey, rotated.publicKey],
            anchors: try AuditAnchor.checkpoints(inFile: s.witness), maxUnsigned: 5)
        #expect(result.ok, "\(result)")

        // The retired key, leaked, signs a checkpoint after the rotation: it no longer counts.
        try await s.fixture.store.appendAudit(s.session.audit("operator.grant", target: "mallory"))
        let head = try #require(try await s.file.entries().last)
        try await s.file.store().appendAuditCheckpoint(
            try AuditCheckpoint.sign(
                seq: head.seq, headHash: head.hash, atMillis: 0, previous: try await s.checkpoints().last,
                privateKey: s.key))
        let leaked = try await SignedAuditLog(store: s.fixture.store).verify(
            session: s.session, publicKeys: [s.publicKey, rotated.publicKey], maxUnsigned: 5)
        #expect(!leaked.ok && leaked.finding == "bad_signature" && leaked.firstBadSeq == head.seq, "\(leaked)")
        // The new key's signer will not chain to it either.
        for _ in 0..<5 { try await s.fixture.store.appendAudit(s.session.audit("backup.show", target: "b")) }
        #expect(await rotated.checkpointAfterAppends(store: s.fixture.store) == nil)
        #expect(rotated.lastError?.code == "audit_checkpoint_forged")
        #expect(rotated.lastError?.message.contains("retired key") == true)
    }

    @Test("a witness whose last append a crash cut short still anchors the start")
    func cutWitnessLine() async throws {
        let s = try await Signed()
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: s.witness))
        try handle.seekToEnd()
        try handle.write(contentsOf: Data(#"{"headHash":"ab"#.utf8))
        try handle.close()
        try await s.signer.checkStart(store: s.fixture.store)
        #expect(try AuditAnchor.checkpoints(inFile: s.witness) == (try await s.checkpoints()))
        // The next checkpoint starts a line of its own: the witness still reads, and the next
        // start too.
        try await s.fixture.store.appendAudit(s.session.audit("backup.show", target: "b"))
        #expect(await s.signer.checkpointIfBehind(store: s.fixture.store) != nil)
        #expect(try AuditAnchor.checkpoints(inFile: s.witness).last == (try await s.checkpoints()).last)
        try await s.signer.checkStart(store: s.fixture.store)
    }
}
