import BackupCrypto
import BackupModel

/// A signed statement "the audit chain had head `headHash` at entry `seq` at time `atMillis`",
/// naming the previous checkpoint by its hash (as CloudTrail's signed digest files do).
///
/// The signing key is a P-256 key kept outside the database; verification takes the public key
/// from the caller, because whoever can rewrite the database could also replace a stored key.
public struct AuditCheckpoint: Sendable, Equatable, Codable {
    public var seq: Int64
    public var headHash: String
    public var atMillis: Int64
    /// The ``hash`` of the previous checkpoint, or ``AuditEntry/genesisHash`` for the first one.
    public var prevCheckpointHash: String
    /// DER ECDSA P-256 signature over ``message``, lowercase hex.
    public var signature: String

    public init(seq: Int64, headHash: String, atMillis: Int64, prevCheckpointHash: String, signature: String) {
        self.seq = seq
        self.headHash = headHash
        self.atMillis = atMillis
        self.prevCheckpointHash = prevCheckpointHash
        self.signature = signature
    }

    /// The signed bytes: a versioned, newline-separated rendering of the four signed fields.
    public var message: [UInt8] {
        Array("backupctl-audit-checkpoint-v1\n\(seq)\n\(headHash)\n\(atMillis)\n\(prevCheckpointHash)".utf8)
    }

    /// What the next checkpoint names: SHA-256 over the signed bytes and the signature.
    public var hash: String { SHA256.hex(message + Array("\n\(signature)".utf8)) }
}
