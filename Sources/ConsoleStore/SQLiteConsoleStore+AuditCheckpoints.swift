import BackupModel
import GRDB

/// Where signed audit checkpoints are kept (`audit checkpoint`, `audit verify`).
public protocol AuditCheckpointStore: ConsoleStore {
    /// Appends `checkpoint` after the existing ones.
    func appendAuditCheckpoint(_ checkpoint: AuditCheckpoint) throws(ConsoleError)
    /// Every checkpoint, oldest first.
    func auditCheckpoints() throws(ConsoleError) -> [AuditCheckpoint]
}

extension SQLiteConsoleStore: AuditCheckpointStore {
    public func appendAuditCheckpoint(_ checkpoint: AuditCheckpoint) throws(ConsoleError) {
        try write("appending an audit checkpoint") { db in
            try db.execute(
                sql: """
                    INSERT INTO audit_checkpoints (seq, head_hash, at, prev_checkpoint_hash, signature)
                    VALUES (?, ?, ?, ?, ?)
                    """,
                arguments: [
                    checkpoint.seq, checkpoint.headHash, checkpoint.atMillis, checkpoint.prevCheckpointHash,
                    checkpoint.signature,
                ])
        }
    }

    public func auditCheckpoints() throws(ConsoleError) -> [AuditCheckpoint] {
        try read("reading audit checkpoints") { db in
            try Row.fetchAll(
                db,
                sql: "SELECT seq, head_hash, at, prev_checkpoint_hash, signature FROM audit_checkpoints ORDER BY id"
            ).map {
                AuditCheckpoint(
                    seq: $0[0], headHash: $0[1], atMillis: $0[2], prevCheckpointHash: $0[3], signature: $0[4])
            }
        }
    }
}
