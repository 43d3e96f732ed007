import Access
import BackupCrypto
import BackupModel
import ConsoleStore
import Foundation
import Testing

/// The tamper suite: a store signed by an ``AuditSigner`` with its high-water mark and a
/// witness file, then rewritten on the file in every way that removes, rewrites or reorders
/// evidence a checkpoint covers. Each is found by `audit verify` with the public key and the
/// witness as anchor; the rewrites that keep the chain consistent are refused by the signer.
@Suite struct AuditTamperTests {
    /// 23 entries signed every 5 and once at shutdown; the witness holds every checkpoint.
    final class Signed {
        let fixture: TempStore
        let session: Session
        let key = P256.generatePrivateKey()
        let signer: AuditSigner
        let witness: String
        let mark: String

        init() async throws {
            fixture = try TempStore()
            try FileManager.default.createDirectory(at: fixture.directory, withIntermediateDirectories: true)
            witness = fixture.directory.appendingPathComponent("witness.jsonl").path
            mark = fixture.directory.appendingPathComponent("audit.key.hwm").path
            signer = try AuditSigner(
                privateKey: key, clock: fixture.clock, everyEntries: 5, highWaterMarkPath: mark, witnessPath: witness)
            session = try await fixture.bootstrap().1
            for i in 0..<20 {
                fixture.time.advance(byMillis: 1000)
                try await fixture.store.appendAudit(session.audit("backup.show", target: "backup_\(i)"))
                await signer.checkpointAfterAppends(store: fixture.store)
            }
            await signer.checkpointIfBehind(store: fixture.store)
        }

        var publicKey: AuditPublicKey { signer.publicKey }

        /// The store's file, for the tamper variants.
        var file: TamperedFile { TamperedFile(path: fixture.path) }

        func checkpoints() async throws -> [AuditCheckpoint] { try await fixture.store.auditCheckpoints() }

        func verify(anchored: Bool = true) async throws -> AuditVerification {
            let anchors = anchored ? try AuditAnchor.checkpoints(inFile: witness) : []
            return try await SignedAuditLog(store: fixture.store).verify(
                session: session, publicKeys: [publicKey], anchors: anchors, maxUnsigned: 5)
        }
    }

    @Test("an untouched signed store verifies, anchored and not")
    func untouched() async throws {
        let s = try await Signed()
        #expect(try await s.verify().ok)
        #expect(try await s.verify(anchored: false).ok)
        #expect(try AuditAnchor.checkpoints(inFile: s.witness) == (try await s.checkpoints()))
        #expect(try s.signer.highWaterMark() == (try await s.checkpoints()).last)
        try await s.signer.checkStart(store: s.fixture.store)
    }

    @Test(
        "every tamper variant is found with the key and the witness as anchor, and stays found",
        arguments: AuditTamper.all)
    func variant(_ tamper: AuditTamper) async throws {
        let s = try await Signed()
        let before = try await s.file.contents()
        try await tamper.apply(s.file)
        #expect(try await s.file.contents() != before, "the variant changed nothing")
        let result = try await s.verify()
        #expect(!result.ok, "verify said ok")
        // A restarted signer starts only on a store that still extends its high-water mark.
        do {
            try await s.signer.checkStart(store: s.fixture.store)
            #expect(tamper.extendsHighWaterMark, "the signer started on a chain that does not extend its mark")
        } catch {
            #expect(!tamper.extendsHighWaterMark && error.code == "audit_chain_diverged", "\(error)")
        }
        guard !tamper.bypassesSigner else { return }
        // The signer runs on (a request, a tick): whatever it does, it must not launder the forgery.
        _ = await s.signer.checkpointAfterAppends(store: s.fixture.store)
        _ = await s.signer.checkpointIfBehind(store: s.fixture.store)
        #expect(!(try await s.verify().ok), "verify said ok after the signer ran")
    }

    @Test("laundering: a rewritten, recomputed store with its checkpoints deleted is never re-signed")
    func laundering() async throws {
        let s = try await Signed()
        let mark = try #require(try s.signer.highWaterMark())
        try await s.file.rewriteAndRecompute(7)
        try s.file.sql("DELETE FROM audit_checkpoints")
        let error = await #expect(throws: ConsoleError.self) { try await s.signer.checkStart(store: s.fixture.store) }
        #expect(error?.code == "audit_chain_diverged")
        // Both heads, abbreviated (a whole hash has a key's shape, which the console withholds).
        #expect(error?.message.contains(AuditSigner.short(mark.headHash)) == true)
        let forgedHead = try #require(try await s.file.entry(mark.seq))
        #expect(error?.message.contains(AuditSigner.short(forgedHead.hash)) == true)
        // One more request's worth of entries, and the signer's tick: nothing is signed.
        try await s.file.appendUnsigned(6)
        #expect(await s.signer.checkpointAfterAppends(store: s.fixture.store) == nil)
        #expect(await s.signer.checkpointIfBehind(store: s.fixture.store) == nil)
        #expect(s.signer.lastError?.code == "audit_chain_diverged")
        #expect(try await s.checkpoints().isEmpty)
        let result = try await s.verify()
        // The oldest anchor whose checkpoint the store lost is named first.
        #expect(!result.ok && result.finding == "checkpoint_missing")
        // Without the anchor, the key alone still refuses a chain with no checkpoint.
        let keyOnly = try await s.verify(anchored: false)
        #expect(!keyOnly.ok && keyOnly.finding == "unsigned_chain")
    }
}
