import BackupCrypto
import BackupModel
import ConsoleStore

extension AuditCheckpoint {
    /// Signs a checkpoint for the entry `seq` with head `headHash`, following `previous`.
    public static func sign(
        seq: Int64, headHash: String, atMillis: Int64, previous: AuditCheckpoint?, privateKey: SecretBytes
    ) throws(ConsoleError) -> AuditCheckpoint {
        var checkpoint = AuditCheckpoint(
            seq: seq, headHash: headHash, atMillis: atMillis,
            prevCheckpointHash: previous?.hash ?? AuditEntry.genesisHash, signature: "")
        checkpoint.signature = Hex.encode(try P256.sign(message: checkpoint.message, privateKey: privateKey))
        return checkpoint
    }

    /// Whether the signature is a valid P-256 signature by `publicKey` over ``message``.
    public func isSigned(by publicKey: [UInt8]) -> Bool {
        guard let der = Hex.decode(signature) else { return false }
        return P256.verify(derSignature: der, message: message, publicKey: publicKey) == .valid
    }
}

/// The outcome of checking the audit chain against its signed checkpoints.
public struct CheckpointVerification: Sendable, Equatable, Codable {
    /// `true` when every checkpoint is signed by the key, chained to the previous one, and
    /// matches the entry at its seq.
    public var ok: Bool
    /// `truncated_tail`, `rewritten_entry`, `recomputed_chain`, `bad_signature`,
    /// `checkpoint_missing`; `nil` when ok.
    public var code: String?
    public var problem: String?
    /// The entry or checkpoint seq where the problem was found.
    public var badSeq: Int64?
    public var checkpoints: Int
    /// The seq the last valid checkpoint covers (0: none).
    public var lastCheckpointSeq: Int64
    /// Entries after the last checkpoint, not yet covered by a signature.
    public var uncoveredEntries: Int

    public init(
        ok: Bool, code: String?, problem: String?, badSeq: Int64?, checkpoints: Int, lastCheckpointSeq: Int64,
        uncoveredEntries: Int
    ) {
        self.ok = ok
        self.code = code
        self.problem = problem
        self.badSeq = badSeq
        self.checkpoints = checkpoints
        self.lastCheckpointSeq = lastCheckpointSeq
        self.uncoveredEntries = uncoveredEntries
    }
}

extension AuditLog {
    /// Checks `checkpoints` (oldest first) against the whole chain in `store` with `publicKey`.
    ///
    /// The entries themselves are checked by ``verify(store:scope:pageSize:)``; this adds what a
    /// hash chain alone cannot show: a removed tail (the head is below a signed seq), a chain
    /// recomputed after a rewrite (consistent, but no longer the signed head), a removed or
    /// forged checkpoint (its predecessor's hash or its signature does not match).
    public static func verifyCheckpoints(
        store: any ConsoleStore, checkpoints: [AuditCheckpoint], publicKey: [UInt8], pageSize: Int = 1000
    ) async throws(ConsoleError) -> CheckpointVerification {
        try await verifyCheckpoints(store: store, checkpoints: checkpoints, publicKeys: [publicKey], pageSize: pageSize)
    }

    /// As ``verifyCheckpoints(store:checkpoints:publicKey:pageSize:)`` across a key rotation: each
    /// checkpoint must be signed by one of `publicKeys` (the retired keys and the current one).
    public static func verifyCheckpoints(
        store: any ConsoleStore, checkpoints: [AuditCheckpoint], publicKeys: [[UInt8]], pageSize: Int = 1000
    ) async throws(ConsoleError) -> CheckpointVerification {
        // Only the hashes at signed seqs are kept: the walk is over the whole chain.
        let signed = Set(checkpoints.map(\.seq))
        var hashes: [Int64: String] = [:]
        var head: Int64 = 0
        var afterSeq: Int64 = 0
        while true {
            let page = try await store.auditEntries(tenant: nil, afterSeq: afterSeq, limit: pageSize)
            guard let last = page.last else { break }
            for entry in page where signed.contains(entry.seq) { hashes[entry.seq] = entry.hash }
            head = last.seq
            afterSeq = last.seq
        }
        func failure(_ code: String, _ seq: Int64, _ problem: String, lastSeq: Int64, count: Int)
            -> CheckpointVerification
        {
            CheckpointVerification(
                ok: false, code: code, problem: problem, badSeq: seq, checkpoints: count, lastCheckpointSeq: lastSeq,
                uncoveredEntries: max(0, Int(head - lastSeq)))
        }
        var previousHash = AuditEntry.genesisHash
        var previousSeq: Int64 = 0
        // A rotation hands the chain from one key to the next for good: a key that signed before
        // another took over never signs again (a leaked retired key cannot re-sign the tail).
        var currentKey: Int?
        var retiredKeys: Set<Int> = []
        for (index, checkpoint) in checkpoints.enumerated() {
            guard let key = publicKeys.firstIndex(where: { checkpoint.isSigned(by: $0) }) else {
                return failure(
                    "bad_signature", checkpoint.seq,
                    "the checkpoint at seq \(checkpoint.seq) is not signed by \(publicKeys.count == 1 ? "the audit key" : "any of the audit keys given")",
                    lastSeq: previousSeq, count: index)
            }
            if let currentKey, key != currentKey { retiredKeys.insert(currentKey) }
            guard !retiredKeys.contains(key) else {
                return failure(
                    "bad_signature", checkpoint.seq,
                    "the checkpoint at seq \(checkpoint.seq) is signed by a key that another key had replaced before it: a retired key signed after the rotation",
                    lastSeq: previousSeq, count: index)
            }
            currentKey = key
            guard checkpoint.prevCheckpointHash == previousHash, checkpoint.seq >= previousSeq else {
                return failure(
                    "checkpoint_missing", checkpoint.seq,
                    "the checkpoint at seq \(checkpoint.seq) does not follow the one before it: a checkpoint was removed",
                    lastSeq: previousSeq, count: index)
            }
            guard checkpoint.seq <= head else {
                return failure(
                    "truncated_tail", checkpoint.seq,
                    "the chain ends at seq \(head) but seq \(checkpoint.seq) was signed: entries were removed from the tail",
                    lastSeq: previousSeq, count: index)
            }
            guard let entryHash = hashes[checkpoint.seq] else {
                return failure(
                    "truncated_tail", checkpoint.seq,
                    "the signed entry \(checkpoint.seq) is missing: entries were removed",
                    lastSeq: previousSeq, count: index)
            }
            guard entryHash == checkpoint.headHash else {
                return failure(
                    "recomputed_chain", checkpoint.seq,
                    "entry \(checkpoint.seq) no longer has the signed hash: the chain was rewritten and recomputed",
                    lastSeq: previousSeq, count: index)
            }
            previousHash = checkpoint.hash
            previousSeq = checkpoint.seq
        }
        return CheckpointVerification(
            ok: true, code: nil, problem: nil, badSeq: nil, checkpoints: checkpoints.count,
            lastCheckpointSeq: previousSeq, uncoveredEntries: max(0, Int(head - previousSeq)))
    }
}

extension AuditLog {
    /// Signs and stores a checkpoint of the current head when one is due: every `every` entries,
    /// or when the last checkpoint is older than `maxAgeMillis` and entries followed it, or
    /// when there is none yet, or always when `force`. Returns the new checkpoint, or `nil` if
    /// none was due. `verifyLatest` checks the newest stored checkpoint before anything is
    /// chained to it (the signer's: signed by a trusted key, its entry still there). The append
    /// is a compare-and-set on the newest checkpoint, so concurrent signers never chain two
    /// checkpoints to the same predecessor (the loser returns `nil`).
    @discardableResult
    public static func checkpointIfDue(
        store: any AuditCheckpointStore, privateKey: SecretBytes, nowMillis: Int64, every: Int64 = 100,
        maxAgeMillis: Int64 = 300_000, force: Bool = false,
        verifyLatest: (AuditCheckpoint?) async throws(ConsoleError) -> Void = { _ throws(ConsoleError) in }
    ) async throws(ConsoleError) -> AuditCheckpoint? {
        func due(headSeq: Int64, last: AuditCheckpoint?) -> Bool {
            let lastSeq = last?.seq ?? 0
            guard headSeq > lastSeq || (force && headSeq > 0) else { return false }
            guard let last else { return true }
            // A stored time far in the past (a forged row) must not overflow the subtraction.
            let age = nowMillis.subtractingReportingOverflow(last.atMillis)
            // A forged checkpoint seq (Int64.min) must not overflow either.
            let behind = headSeq.subtractingReportingOverflow(lastSeq)
            return force || behind.overflow || behind.partialValue >= every || age.overflow
                || age.partialValue >= maxAgeMillis
        }
        // A read first: most calls find nothing due and need no write transaction.
        let lag = try await store.auditCheckpointLag()
        // A newest checkpoint past the head (a forged row, or a cut chain) is never "not due":
        // the signer would stay silent over it for good.
        if let latest = lag.latest, latest.seq > lag.headSeq { try await verifyLatest(latest) }
        guard due(headSeq: lag.headSeq, last: lag.latest) else { return nil }
        let (head, last) = try await store.auditHead()
        guard let head, due(headSeq: head.seq, last: last) else { return nil }
        // The signature chains from `last`: it must be a real checkpoint of this chain (and
        // none at all must be what the signer expects).
        try await verifyLatest(last)
        let checkpoint = try AuditCheckpoint.sign(
            seq: head.seq, headHash: head.hash, atMillis: nowMillis, previous: last, privateKey: privateKey)
        return try await store.appendAuditCheckpoint(checkpoint, ifLatestIs: last) ? checkpoint : nil
    }
}
