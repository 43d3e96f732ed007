import BackupModel
import ConsoleStore

extension AuditLog {
    /// Checks the store against checkpoints anchored outside it (a witness file, the signer's
    /// high-water mark, an earlier `audit export`): for each, the store must still hold that very
    /// checkpoint and its chain must have the signed head at the signed seq. A store rewritten
    /// by someone who also deleted or re-signed checkpoints passes its own checks, but not these.
    ///
    /// With `publicKeys`, each anchor must be signed by one of them (an anchor file is evidence
    /// only if the signer made it).
    /// - Returns: the first failure (anchors in seq order), or `nil` when every anchor holds.
    public static func verifyAnchors(
        store: any AuditCheckpointStore, anchors: [AuditCheckpoint], stored: [AuditCheckpoint],
        publicKeys: [[UInt8]], pageSize: Int = 1000
    ) async throws(ConsoleError) -> CheckpointVerification? {
        guard !anchors.isEmpty else { return nil }
        let storedHashes = Set(stored.map(\.hash))
        var head: Int64 = 0
        var hashes: [Int64: String] = [:]
        let wanted = Set(anchors.map(\.seq))
        var afterSeq: Int64 = 0
        while true {
            let page = try await store.auditEntries(tenant: nil, afterSeq: afterSeq, limit: pageSize)
            guard let last = page.last else { break }
            for entry in page where wanted.contains(entry.seq) { hashes[entry.seq] = entry.hash }
            head = last.seq
            afterSeq = last.seq
        }
        func failure(_ code: String, _ anchor: AuditCheckpoint, _ problem: String) -> CheckpointVerification {
            CheckpointVerification(
                ok: false, code: code, problem: problem, badSeq: anchor.seq, checkpoints: stored.count,
                lastCheckpointSeq: stored.last?.seq ?? 0, uncoveredEntries: max(0, Int(head - (stored.last?.seq ?? 0))))
        }
        for anchor in anchors.sorted(by: { $0.seq < $1.seq }) {
            if !publicKeys.isEmpty, !publicKeys.contains(where: { anchor.isSigned(by: $0) }) {
                return failure(
                    "bad_anchor", anchor,
                    "the anchored checkpoint at seq \(anchor.seq) is not signed by the audit key: the anchor file is not the signer's"
                )
            }
            guard anchor.seq <= head, let hash = hashes[anchor.seq] else {
                return failure(
                    "truncated_tail", anchor,
                    "the chain ends at seq \(head) but the anchor holds a checkpoint of entry \(anchor.seq) (head \(AuditSigner.short(anchor.headHash))): entries were removed"
                )
            }
            guard hash == anchor.headHash else {
                return failure(
                    "recomputed_chain", anchor,
                    "entry \(anchor.seq) has head \(AuditSigner.short(hash)) in the store but \(AuditSigner.short(anchor.headHash)) in the anchor: the chain was rewritten and recomputed"
                )
            }
            guard storedHashes.contains(anchor.hash) else {
                return failure(
                    "checkpoint_missing", anchor,
                    "the store no longer holds the anchored checkpoint of entry \(anchor.seq): a checkpoint was removed or replaced"
                )
            }
        }
        return nil
    }

    /// What a signed chain must also show: with a key, a non-empty chain with no checkpoint at
    /// all, or more than `maxUnsigned` entries after the newest one, is a finding — entries
    /// written past the signer (`--db` on its store), or checkpoints removed wholesale.
    public static func coverageFinding(
        entries: Int64, checkpoints: Int, uncovered: Int, maxUnsigned: Int64
    ) -> (code: String, problem: String)? {
        if checkpoints == 0, entries > 0 {
            return (
                "unsigned_chain",
                "the chain holds \(entries) entries but no signed checkpoint: every checkpoint was removed, or no signer ever ran"
            )
        }
        if Int64(uncovered) > maxUnsigned {
            return (
                "unsigned_tail",
                "\(uncovered) entries follow the newest signed checkpoint, more than the \(maxUnsigned) a signer leaves unsigned: entries were written past the signer or its checkpoints removed"
            )
        }
        return nil
    }
}
