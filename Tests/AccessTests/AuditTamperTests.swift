import Access
import BackupCrypto
import BackupModel
import ConsoleStore
import Foundation
import GRDB
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

        func sql(_ statements: String...) throws {
            let queue = try DatabaseQueue(path: fixture.path)
            try queue.write { db in for statement in statements { try db.execute(sql: statement) } }
        }

        func entries() async throws -> [AuditEntry] {
            try await fixture.store.auditEntries(tenant: nil, afterSeq: 0, limit: 10_000)
        }

        func checkpoints() async throws -> [AuditCheckpoint] { try await fixture.store.auditCheckpoints() }

        /// Rewrites entry `seq`'s target and recomputes every hash from there.
        func rewriteAndRecompute(_ seq: Int64, target: String = "forged") async throws {
            var all = try await entries()
            var prev = AuditEntry.genesisHash
            for index in all.indices {
                if all[index].seq == seq { all[index].target = target }
                all[index].prevHash = prev
                all[index].hash = SHA256.hex(Array(prev.utf8) + Array(all[index].canonicalBytes))
                prev = all[index].hash
            }
            let forged = all
            let queue = try DatabaseQueue(path: fixture.path)
            try await queue.write { db in
                // Hashes are unique: clear them first so the rewrite never collides midway.
                try db.execute(sql: "UPDATE audit SET hash = printf('%064d', seq)")
                for entry in forged {
                    try db.execute(
                        sql: "UPDATE audit SET target = ?, prev_hash = ?, hash = ? WHERE seq = ?",
                        arguments: [entry.target, entry.prevHash, entry.hash, entry.seq])
                }
            }
        }

        /// Appends `count` entries the way a `--db` process on the server's store would: chained, unsigned.
        func appendUnsigned(_ count: Int) async throws {
            for i in 0..<count {
                try await fixture.store.appendAudit(session.audit("backup.show", target: "bypass_\(i)"))
            }
        }

        func verify(anchored: Bool = true) async throws -> AuditVerification {
            let anchors = anchored ? try AuditAnchor.checkpoints(inFile: witness) : []
            return try await SignedAuditLog(store: fixture.store).verify(
                session: session, publicKeys: [publicKey], anchors: anchors, maxUnsigned: 5)
        }
    }

    /// The variants: a name and what it does to the signed store.
    static let variants: [(String, @Sendable (Signed) async throws -> Void)] = [
        ("edit an entry's target", { s in try s.sql("UPDATE audit SET target = 'x' WHERE seq = 7") }),
        ("edit an entry's time", { s in try s.sql("UPDATE audit SET at = at + 1 WHERE seq = 7") }),
        ("edit an entry's operator", { s in try s.sql("UPDATE audit SET operator = 'mallory' WHERE seq = 7") }),
        ("edit an entry's details", { s in try s.sql(#"UPDATE audit SET details = '{"a":"b"}' WHERE seq = 7"#) }),
        ("edit the first entry", { s in try s.sql("UPDATE audit SET target = 'x' WHERE seq = 1") }),
        (
            "edit the signed head entry",
            { s in
                let last = try #require(try await s.checkpoints().last)
                try s.sql("UPDATE audit SET target = 'x' WHERE seq = \(last.seq)")
            }
        ),
        ("delete a middle entry", { s in try s.sql("DELETE FROM audit WHERE seq = 9") }),
        ("delete the first entry", { s in try s.sql("DELETE FROM audit WHERE seq = 1") }),
        ("delete a run of entries", { s in try s.sql("DELETE FROM audit WHERE seq BETWEEN 6 AND 12") }),
        ("delete the tail, keep the checkpoints", { s in try s.sql("DELETE FROM audit WHERE seq > 15") }),
        (
            "delete the last entry, keep the checkpoints",
            { s in
                try s.sql("DELETE FROM audit WHERE seq = (SELECT max(seq) FROM audit)")
            }
        ),
        (
            "delete the tail and the checkpoints beyond it",
            { s in
                try s.sql("DELETE FROM audit WHERE seq > 12", "DELETE FROM audit_checkpoints WHERE seq > 12")
            }
        ),
        (
            "delete the last entry and the last checkpoint",
            { s in
                try s.sql(
                    "DELETE FROM audit WHERE seq = (SELECT max(seq) FROM audit)",
                    "DELETE FROM audit_checkpoints WHERE id = (SELECT max(id) FROM audit_checkpoints)")
            }
        ),
        (
            "remove the last checkpoint",
            { s in
                try s.sql("DELETE FROM audit_checkpoints WHERE id = (SELECT max(id) FROM audit_checkpoints)")
            }
        ),
        (
            "remove a middle checkpoint",
            { s in
                try s.sql("DELETE FROM audit_checkpoints WHERE id = (SELECT min(id) + 1 FROM audit_checkpoints)")
            }
        ),
        (
            "remove the first checkpoint",
            { s in
                try s.sql("DELETE FROM audit_checkpoints WHERE id = (SELECT min(id) FROM audit_checkpoints)")
            }
        ),
        ("remove every checkpoint", { s in try s.sql("DELETE FROM audit_checkpoints") }),
        ("wipe both tables", { s in try s.sql("DELETE FROM audit", "DELETE FROM audit_checkpoints") }),
        ("delete every entry, keep the checkpoints", { s in try s.sql("DELETE FROM audit") }),
        ("edit, recompute, keep the checkpoints", { s in try await s.rewriteAndRecompute(7) }),
        ("edit the first entry, recompute", { s in try await s.rewriteAndRecompute(1) }),
        (
            "edit, recompute, delete the checkpoints from that seq",
            { s in
                try await s.rewriteAndRecompute(12)
                try s.sql("DELETE FROM audit_checkpoints WHERE seq >= 12")
            }
        ),
        (
            "edit, recompute, delete every checkpoint",
            { s in
                try await s.rewriteAndRecompute(7)
                try s.sql("DELETE FROM audit_checkpoints")
            }
        ),
        (
            "edit, recompute, re-sign every checkpoint with another key",
            { s in
                try await s.rewriteAndRecompute(7)
                let other = P256.generatePrivateKey()
                var forged: [AuditCheckpoint] = []
                for c in try await s.checkpoints() {
                    let entry = try #require(
                        try await s.fixture.store.auditEntries(tenant: nil, afterSeq: c.seq - 1, limit: 1).first)
                    forged.append(
                        try AuditCheckpoint.sign(
                            seq: c.seq, headHash: entry.hash, atMillis: c.atMillis, previous: forged.last,
                            privateKey: other))
                }
                try s.sql("DELETE FROM audit_checkpoints")
                for c in forged { try await s.fixture.store.appendAuditCheckpoint(c) }
            }
        ),
        (
            "edit the last signed entry, recompute, delete the last checkpoint",
            { s in
                let last = try #require(try await s.checkpoints().last)
                try await s.rewriteAndRecompute(last.seq)
                try s.sql("DELETE FROM audit_checkpoints WHERE seq = \(last.seq)")
            }
        ),
        (
            "swap two entries' contents",
            { s in
                try s.sql(
                    "UPDATE audit SET target = CASE seq WHEN 4 THEN (SELECT target FROM audit WHERE seq = 5) ELSE (SELECT target FROM audit WHERE seq = 4) END WHERE seq IN (4, 5)"
                )
            }
        ),
        (
            "reorder entries, recompute",
            { s in
                let all = try await s.entries()
                try s.sql(
                    "UPDATE audit SET target = '\(all[4].target ?? "")' WHERE seq = 4",
                    "UPDATE audit SET target = '\(all[3].target ?? "")' WHERE seq = 5")
                try await s.rewriteAndRecompute(0)
            }
        ),
        (
            "renumber entries after a deletion, recompute",
            { s in
                try s.sql(
                    "DELETE FROM audit WHERE seq = 8", "UPDATE audit SET seq = seq + 1000 WHERE seq > 8",
                    "UPDATE audit SET seq = seq - 1001 WHERE seq > 1000")
                try await s.rewriteAndRecompute(0)
            }
        ),
        (
            "forge a checkpoint's signature",
            { s in
                try s.sql(
                    "UPDATE audit_checkpoints SET signature = substr(signature, 1, length(signature) - 2) || CASE substr(signature, -2) WHEN '00' THEN '01' ELSE '00' END WHERE id = (SELECT max(id) FROM audit_checkpoints)"
                )
            }
        ),
        (
            "alter a checkpoint's head",
            { s in
                try s.sql(
                    "UPDATE audit_checkpoints SET head_hash = printf('%064d', 1) WHERE id = (SELECT min(id) FROM audit_checkpoints)"
                )
            }
        ),
        (
            "alter a checkpoint's seq",
            { s in
                try s.sql(
                    "UPDATE audit_checkpoints SET seq = seq - 1 WHERE id = (SELECT min(id) FROM audit_checkpoints)")
            }
        ),
        (
            "alter a checkpoint's time",
            { s in
                try s.sql("UPDATE audit_checkpoints SET at = at + 1 WHERE id = (SELECT max(id) FROM audit_checkpoints)")
            }
        ),
        (
            "alter a checkpoint's link",
            { s in
                try s.sql(
                    "UPDATE audit_checkpoints SET prev_checkpoint_hash = printf('%064d', 2) WHERE id = (SELECT max(id) FROM audit_checkpoints)"
                )
            }
        ),
        (
            "reorder checkpoints",
            { s in
                let columns = ["seq", "head_hash", "at", "prev_checkpoint_hash", "signature"]
                let swap = columns.map { c in
                    "\(c) = (SELECT \(c) FROM t WHERE t.id = CASE audit_checkpoints.id WHEN (SELECT min(id) FROM t) THEN (SELECT min(id) FROM t) + 1 ELSE (SELECT min(id) FROM t) END)"
                }
                try s.sql(
                    "CREATE TEMP TABLE t AS SELECT * FROM audit_checkpoints",
                    "UPDATE audit_checkpoints SET \(swap.joined(separator: ", ")) WHERE id IN (SELECT min(id) FROM t UNION SELECT min(id) + 1 FROM t)"
                )
            }
        ),
        ("append entries past the signer, more than the interval", { s in try await s.appendUnsigned(6) }),
        (
            "delete the tail, append new entries, recompute",
            { s in
                try s.sql("DELETE FROM audit WHERE seq > 15")
                try await s.appendUnsigned(3)
            }
        ),
        (
            "truncate to an earlier checkpoint and its entries exactly",
            { s in
                let first = try #require(try await s.checkpoints().first)
                try s.sql(
                    "DELETE FROM audit WHERE seq > \(first.seq)",
                    "DELETE FROM audit_checkpoints WHERE seq > \(first.seq)")
            }
        ),
    ]

    @Test("an untouched signed store verifies, anchored and not")
    func untouched() async throws {
        let s = try await Signed()
        #expect(try await s.verify().ok)
        #expect(try await s.verify(anchored: false).ok)
        #expect(try AuditAnchor.checkpoints(inFile: s.witness) == (try await s.checkpoints()))
        #expect(try s.signer.highWaterMark() == (try await s.checkpoints()).last)
        try await s.signer.checkStart(store: s.fixture.store)
    }

    /// Entries written past the signer are not evidence a checkpoint covers: the signer may sign
    /// them ("refused or signed"); every other variant must stay found after it signs again.
    static let bypassWrites: Set<String> = ["append entries past the signer, more than the interval"]

    @Test(
        "every tamper variant is found with the key and the witness as anchor, and stays found",
        arguments: 0..<variants.count)
    func variant(_ index: Int) async throws {
        let (name, tamper) = Self.variants[index]
        let s = try await Signed()
        try await tamper(s)
        let result = try await s.verify()
        #expect(!result.ok, "\(name): verify said ok")
        guard !Self.bypassWrites.contains(name) else { return }
        // The signer runs on (a request, a tick): whatever it does, it must not launder the forgery.
        _ = await s.signer.checkpointAfterAppends(store: s.fixture.store)
        _ = await s.signer.checkpointIfBehind(store: s.fixture.store)
        #expect(!(try await s.verify().ok), "\(name): verify said ok after the signer ran")
    }

    @Test("laundering: a rewritten, recomputed store with its checkpoints deleted is never re-signed")
    func laundering() async throws {
        let s = try await Signed()
        let mark = try #require(try s.signer.highWaterMark())
        try await s.rewriteAndRecompute(7)
        try s.sql("DELETE FROM audit_checkpoints")
        let error = await #expect(throws: ConsoleError.self) { try await s.signer.checkStart(store: s.fixture.store) }
        #expect(error?.code == "audit_chain_diverged")
        #expect(error?.message.contains(mark.headHash) == true)
        let forgedHead = try #require(
            try await s.fixture.store.auditEntries(tenant: nil, afterSeq: mark.seq - 1, limit: 1).first)
        #expect(error?.message.contains(forgedHead.hash) == true)
        // One more request's worth of entries, and the signer's tick: nothing is signed.
        try await s.appendUnsigned(6)
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
