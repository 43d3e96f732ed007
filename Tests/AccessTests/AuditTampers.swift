import Access
import BackupCrypto
import BackupModel
import ConsoleStore
import Foundation
import GRDB
import SQLiteStore
import Testing

/// A signed store's SQLite file as someone who can write it sees it: plain SQL, and the store's
/// own code to recompute hashes or append entries the way a `--db` process would.
struct TamperedFile: Sendable {
    let path: String

    func sql(_ statements: String...) throws {
        let queue = try connection()
        try queue.write { db in for statement in statements { try db.execute(sql: statement) } }
    }

    /// A plain connection that waits for a server's short write locks on the same file.
    private func connection() throws -> DatabaseQueue {
        var configuration = Configuration()
        configuration.busyMode = .timeout(10)
        return try DatabaseQueue(path: path, configuration: configuration)
    }

    func store() throws -> SQLiteConsoleStore { try SQLiteConsoleStore(path: path) }

    func entries() async throws -> [AuditEntry] {
        try await store().auditEntries(tenant: nil, afterSeq: 0, limit: 10_000)
    }

    func checkpoints() async throws -> [AuditCheckpoint] { try await store().auditCheckpoints() }

    /// Every row of the audit and its checkpoints, as text: a variant must change it.
    func contents() async throws -> [String] {
        try await connection().read { db in
            try String.fetchAll(
                db,
                sql: """
                    SELECT seq || '|' || at || '|' || operator || '|' || ifnull(tenant, '') || '|' || action || '|'
                        || ifnull(target, '') || '|' || details || '|' || prev_hash || '|' || hash FROM audit ORDER BY rowid
                    """)
                + String.fetchAll(
                    db,
                    sql: """
                        SELECT id || '|' || seq || '|' || head_hash || '|' || at || '|' || prev_checkpoint_hash || '|'
                            || signature FROM audit_checkpoints ORDER BY id
                        """)
        }
    }

    /// The entry at `seq`, if the chain still has one.
    func entry(_ seq: Int64) async throws -> AuditEntry? {
        try await store().auditEntries(tenant: nil, afterSeq: seq - 1, limit: 1).first.flatMap {
            $0.seq == seq ? $0 : nil
        }
    }

    /// Swaps what entries `a` and `b` say (action, target, details), leaving seqs and hashes.
    func swapContents(_ a: Int64, _ b: Int64) throws {
        try sql(
            "CREATE TEMP TABLE swapped AS SELECT seq, action, target, details FROM audit WHERE seq IN (\(a), \(b))",
            """
            UPDATE audit SET (action, target, details) = (SELECT action, target, details FROM swapped
                WHERE swapped.seq = \(a + b) - audit.seq) WHERE seq IN (\(a), \(b))
            """)
    }

    /// Rewrites entry `seq`'s target and recomputes every hash from there (`seq` 0: only recomputes).
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
        let queue = try connection()
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
        let store = try store()
        for i in 0..<count {
            try await store.appendAudit(
                AuditDraft(operatorName: "root", tenant: "sandbox", action: "backup.show", target: "bypass_\(i)"))
        }
    }

    /// Replaces every checkpoint with one over the same seq and the store's current head there,
    /// signed by a key that is not the server's.
    func resignWithAnotherKey() async throws {
        let other = P256.generatePrivateKey()
        var forged: [AuditCheckpoint] = []
        for c in try await checkpoints() {
            let entry = try #require(try await entry(c.seq))
            forged.append(
                try AuditCheckpoint.sign(
                    seq: c.seq, headHash: entry.hash, atMillis: c.atMillis, previous: forged.last, privateKey: other))
        }
        try sql("DELETE FROM audit_checkpoints")
        let store = try store()
        for c in forged { try await store.appendAuditCheckpoint(c) }
    }
}

/// One way of tampering with a signed store: what it does to the file, and whether the store
/// still extends the signer's high-water mark afterwards (so a restarted signer starts on it).
///
/// The catalogue assumes a store of about 23 entries with a checkpoint every 5 entries and one
/// over the head at shutdown (both tamper suites build one), the head above entry 15.
struct AuditTamper: Sendable, CustomTestStringConvertible {
    let name: String
    /// `false`: the entry the high-water mark signed is gone or has another head, or the store
    /// lost that checkpoint; a restarted signer refuses it (`audit_chain_diverged`).
    let extendsHighWaterMark: Bool
    /// Entries written past the signer are not evidence a checkpoint covers: a signer may sign
    /// them ("refused or signed"); every other variant must stay found after a signer ran.
    var bypassesSigner = false
    let apply: @Sendable (TamperedFile) async throws -> Void

    var testDescription: String { name }

    static let all: [AuditTamper] = edits + deletions + checkpointRemovals + recomputations + checkpointEdits + appends

    static let edits: [AuditTamper] = [
        .init(name: "edit an entry's target", extendsHighWaterMark: true) { f in
            try f.sql("UPDATE audit SET target = 'x' WHERE seq = 7")
        },
        .init(name: "edit an entry's time", extendsHighWaterMark: true) { f in
            try f.sql("UPDATE audit SET at = at + 1 WHERE seq = 7")
        },
        .init(name: "edit an entry's operator", extendsHighWaterMark: true) { f in
            try f.sql("UPDATE audit SET operator = 'mallory' WHERE seq = 7")
        },
        .init(name: "edit an entry's details", extendsHighWaterMark: true) { f in
            try f.sql(#"UPDATE audit SET details = '{"a":"b"}' WHERE seq = 7"#)
        },
        .init(name: "edit the first entry", extendsHighWaterMark: true) { f in
            try f.sql("UPDATE audit SET target = 'x' WHERE seq = 1")
        },
        // Its stored hash is untouched: the chain still has the signed head there.
        .init(name: "edit the signed head entry", extendsHighWaterMark: true) { f in
            let last = try #require(try await f.checkpoints().last)
            try f.sql("UPDATE audit SET target = 'x' WHERE seq = \(last.seq)")
        },
        .init(name: "swap two entries' contents", extendsHighWaterMark: true) { f in try f.swapContents(4, 5) },
    ]

    static let deletions: [AuditTamper] = [
        .init(name: "delete a middle entry", extendsHighWaterMark: true) { f in
            try f.sql("DELETE FROM audit WHERE seq = 9")
        },
        .init(name: "delete the first entry", extendsHighWaterMark: true) { f in
            try f.sql("DELETE FROM audit WHERE seq = 1")
        },
        .init(name: "delete a run of entries", extendsHighWaterMark: true) { f in
            try f.sql("DELETE FROM audit WHERE seq BETWEEN 6 AND 12")
        },
        .init(name: "delete the tail, keep the checkpoints", extendsHighWaterMark: false) { f in
            try f.sql("DELETE FROM audit WHERE seq > 15")
        },
        .init(name: "delete the last entry, keep the checkpoints", extendsHighWaterMark: false) { f in
            try f.sql("DELETE FROM audit WHERE seq = (SELECT max(seq) FROM audit)")
        },
        .init(name: "delete the tail and the checkpoints beyond it", extendsHighWaterMark: false) { f in
            try f.sql("DELETE FROM audit WHERE seq > 12", "DELETE FROM audit_checkpoints WHERE seq > 12")
        },
        .init(name: "delete the last entry and the last checkpoint", extendsHighWaterMark: false) { f in
            try f.sql(
                "DELETE FROM audit WHERE seq = (SELECT max(seq) FROM audit)",
                "DELETE FROM audit_checkpoints WHERE id = (SELECT max(id) FROM audit_checkpoints)")
        },
        .init(name: "wipe both tables", extendsHighWaterMark: false) { f in
            try f.sql("DELETE FROM audit", "DELETE FROM audit_checkpoints")
        },
        .init(name: "delete every entry, keep the checkpoints", extendsHighWaterMark: false) { f in
            try f.sql("DELETE FROM audit")
        },
        .init(name: "truncate to an earlier checkpoint and its entries exactly", extendsHighWaterMark: false) { f in
            let first = try #require(try await f.checkpoints().first)
            try f.sql(
                "DELETE FROM audit WHERE seq > \(first.seq)", "DELETE FROM audit_checkpoints WHERE seq > \(first.seq)")
        },
    ]

    static let checkpointRemovals: [AuditTamper] = [
        .init(name: "remove the last checkpoint", extendsHighWaterMark: false) { f in
            try f.sql("DELETE FROM audit_checkpoints WHERE id = (SELECT max(id) FROM audit_checkpoints)")
        },
        .init(name: "remove a middle checkpoint", extendsHighWaterMark: true) { f in
            try f.sql("DELETE FROM audit_checkpoints WHERE id = (SELECT min(id) + 1 FROM audit_checkpoints)")
        },
        .init(name: "remove the first checkpoint", extendsHighWaterMark: true) { f in
            try f.sql("DELETE FROM audit_checkpoints WHERE id = (SELECT min(id) FROM audit_checkpoints)")
        },
        .init(name: "remove every checkpoint", extendsHighWaterMark: false) { f in
            try f.sql("DELETE FROM audit_checkpoints")
        },
    ]

    static let recomputations: [AuditTamper] = [
        .init(name: "edit, recompute, keep the checkpoints", extendsHighWaterMark: false) { f in
            try await f.rewriteAndRecompute(7)
        },
        .init(name: "edit the first entry, recompute", extendsHighWaterMark: false) { f in
            try await f.rewriteAndRecompute(1)
        },
        .init(name: "edit, recompute, delete the checkpoints from that seq", extendsHighWaterMark: false) { f in
            try await f.rewriteAndRecompute(12)
            try f.sql("DELETE FROM audit_checkpoints WHERE seq >= 12")
        },
        .init(name: "edit, recompute, delete every checkpoint", extendsHighWaterMark: false) { f in
            try await f.rewriteAndRecompute(7)
            try f.sql("DELETE FROM audit_checkpoints")
        },
        .init(name: "edit, recompute, re-sign every checkpoint with another key", extendsHighWaterMark: false) { f in
            try await f.rewriteAndRecompute(7)
            try await f.resignWithAnotherKey()
        },
        .init(
            name: "edit the last signed entry, recompute, delete the last checkpoint", extendsHighWaterMark: false
        ) { f in
            let last = try #require(try await f.checkpoints().last)
            try await f.rewriteAndRecompute(last.seq)
            try f.sql("DELETE FROM audit_checkpoints WHERE seq = \(last.seq)")
        },
        .init(name: "reorder entries, recompute", extendsHighWaterMark: false) { f in
            try f.swapContents(4, 5)
            try await f.rewriteAndRecompute(0)
        },
        .init(name: "renumber entries after a deletion, recompute", extendsHighWaterMark: false) { f in
            try f.sql(
                "DELETE FROM audit WHERE seq = 8", "UPDATE audit SET seq = seq + 1000 WHERE seq > 8",
                "UPDATE audit SET seq = seq - 1001 WHERE seq > 1000")
            try await f.rewriteAndRecompute(0)
        },
        .init(name: "delete the tail, append new entries, recompute", extendsHighWaterMark: false) { f in
            try f.sql("DELETE FROM audit WHERE seq > 15")
            try await f.appendUnsigned(3)
        },
    ]

    /// Edits of the newest checkpoint change its hash (the high-water mark names it); of the
    /// oldest, they leave the newest in place.
    static let checkpointEdits: [AuditTamper] = [
        .init(name: "forge a checkpoint's signature", extendsHighWaterMark: false) { f in
            try f.sql(
                "UPDATE audit_checkpoints SET signature = substr(signature, 1, length(signature) - 2) || CASE substr(signature, -2) WHEN '00' THEN '01' ELSE '00' END WHERE id = (SELECT max(id) FROM audit_checkpoints)"
            )
        },
        .init(name: "alter a checkpoint's head", extendsHighWaterMark: true) { f in
            try f.sql(
                "UPDATE audit_checkpoints SET head_hash = printf('%064d', 1) WHERE id = (SELECT min(id) FROM audit_checkpoints)"
            )
        },
        .init(name: "alter a checkpoint's seq", extendsHighWaterMark: true) { f in
            try f.sql("UPDATE audit_checkpoints SET seq = seq - 1 WHERE id = (SELECT min(id) FROM audit_checkpoints)")
        },
        .init(name: "alter a checkpoint's time", extendsHighWaterMark: false) { f in
            try f.sql("UPDATE audit_checkpoints SET at = at + 1 WHERE id = (SELECT max(id) FROM audit_checkpoints)")
        },
        .init(name: "alter a checkpoint's link", extendsHighWaterMark: false) { f in
            try f.sql(
                "UPDATE audit_checkpoints SET prev_checkpoint_hash = printf('%064d', 2) WHERE id = (SELECT max(id) FROM audit_checkpoints)"
            )
        },
        .init(name: "reorder checkpoints", extendsHighWaterMark: true) { f in
            let columns = ["seq", "head_hash", "at", "prev_checkpoint_hash", "signature"]
            let swap = columns.map { c in
                "\(c) = (SELECT \(c) FROM t WHERE t.id = CASE audit_checkpoints.id WHEN (SELECT min(id) FROM t) THEN (SELECT min(id) FROM t) + 1 ELSE (SELECT min(id) FROM t) END)"
            }
            try f.sql(
                "CREATE TEMP TABLE t AS SELECT * FROM audit_checkpoints",
                "UPDATE audit_checkpoints SET \(swap.joined(separator: ", ")) WHERE id IN (SELECT min(id) FROM t UNION SELECT min(id) + 1 FROM t)"
            )
        },
    ]

    static let appends: [AuditTamper] = [
        .init(
            name: "append entries past the signer, more than the interval", extendsHighWaterMark: true,
            bypassesSigner: true
        ) { f in
            try await f.appendUnsigned(6)
        }
    ]
}
