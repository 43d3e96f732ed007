import BackupCrypto
import BackupModel
import ConsoleStore

/// The audit log with its signed checkpoints: `audit verify` (the chain, then the checkpoints
/// with a public key) and `audit export` (JSON lines for a SIEM).
public struct SignedAuditLog: Sendable {
    let store: any AuditCheckpointStore

    public init(store: any AuditCheckpointStore) { self.store = store }

    /// Walks the chain (see ``AuditLog/verify(session:)``), then, with `publicKey`, checks
    /// every stored checkpoint: its signature, its link to the previous one, and that the entry
    /// it signed is still there with the signed hash. A chain that verifies on its own but
    /// no longer matches a checkpoint was truncated or recomputed after a rewrite.
    ///
    /// A tenant admin learns what was found but not where when it lies outside their tenant,
    /// and not the whole chain's counts (as with the chain itself).
    public func verify(session: Session, publicKey: AuditPublicKey?) async throws(ConsoleError) -> AuditVerification {
        try await verify(session: session, publicKeys: publicKey.map { [$0] } ?? [])
    }

    /// As ``verify(session:publicKey:)`` with every key that signed checkpoints across rotations,
    /// and against checkpoints anchored outside the store (``AuditLog/verifyAnchors(store:anchors:stored:publicKeys:pageSize:)``).
    /// - Parameter maxUnsigned: with keys, more entries than this after the newest checkpoint is
    ///   the finding `unsigned_tail` (the signer's checkpoint interval); none at all over a
    ///   non-empty chain is `unsigned_chain`.
    public func verify(
        session: Session, publicKeys: [AuditPublicKey], anchors: [AuditCheckpoint] = [], maxUnsigned: Int64 = 100
    ) async throws(ConsoleError) -> AuditVerification {
        try await session.require(.auditVerify)
        let global = try await store.operatorRecord(named: session.operatorName)?.canCreateTenants == true
        var result = try await AuditLog.verify(store: store, scope: global ? nil : session.tenantName)
        let stored = try await store.auditCheckpoints()
        if !stored.isEmpty || !publicKeys.isEmpty || !anchors.isEmpty { result.checkpoints = stored.count }
        if !anchors.isEmpty { result.anchorsChecked = anchors.count }
        var check = CheckpointVerification(
            ok: true, code: nil, problem: nil, badSeq: nil, checkpoints: 0, lastCheckpointSeq: 0, uncoveredEntries: 0)
        if !publicKeys.isEmpty {
            check = try await AuditLog.verifyCheckpoints(
                store: store, checkpoints: stored, publicKeys: publicKeys.map(\.bytes))
            result.keyFingerprint = publicKeys.map(\.fingerprint).joined(separator: ",")
            result.checkpointsVerified = check.checkpoints
            if global {
                result.lastCheckpointSeq = check.lastCheckpointSeq
                result.uncoveredEntries = check.uncoveredEntries
            }
        }
        if check.ok,
            let anchored = try await AuditLog.verifyAnchors(
                store: store, anchors: anchors, stored: stored, publicKeys: publicKeys.map(\.bytes))
        {
            check = anchored
        }
        // Anchors first: they name what was removed; the coverage rule only says something was.
        if !publicKeys.isEmpty, check.ok,
            let (code, problem) = AuditLog.coverageFinding(
                entries: try await store.auditCheckpointLag().headSeq, checkpoints: stored.count,
                uncovered: check.uncoveredEntries, maxUnsigned: maxUnsigned)
        {
            check.ok = false
            check.code = code
            check.problem = problem
            check.badSeq = check.lastCheckpointSeq + 1
        }
        // A break in the chain itself is the first thing to repair; it is reported alone.
        guard result.ok, !check.ok else { return result }
        result.ok = false
        result.finding = check.code
        if global {
            result.firstBadSeq = check.badSeq
            result.problem = check.problem
        } else {
            result.firstBadSeq = nil
            result.problem =
                "the signed checkpoints show \(Self.describe(check.code)); an operator who may create tenants can run audit verify to locate it"
        }
        return result
    }

    static func describe(_ code: String?) -> String {
        switch code {
        case "truncated_tail": "entries removed from the tail of the chain"
        case "recomputed_chain": "a rewritten entry with the chain recomputed"
        case "checkpoint_missing": "a removed checkpoint"
        case "bad_signature": "a checkpoint not signed by this key"
        case "unsigned_chain": "a chain with no signed checkpoint"
        case "unsigned_tail": "more unsigned entries after the newest checkpoint than a signer leaves"
        case "bad_anchor": "an anchored checkpoint not signed by this key"
        default: "a mismatch"
        }
    }

    /// One page of `audit export --since`: entries at or after `sinceMillis` with seq above
    /// `afterSeq`, oldest first. An operator who may create tenants exports the whole chain
    /// and, on the last page, the newest checkpoint (read before the entries, so it never
    /// covers an entry the export lacks); a tenant admin exports their tenant's entries.
    public func export(session: Session, sinceMillis: Int64, afterSeq: Int64, limit: Int) async throws(ConsoleError)
        -> AuditExportPage
    {
        try await session.require(.auditList)
        guard (1...10_000).contains(limit) else {
            throw .invalid("invalid_limit", "The export page size must be between 1 and 10000, got \(limit).")
        }
        let global = try await store.operatorRecord(named: session.operatorName)?.canCreateTenants == true
        let checkpoint = await global ? try store.latestAuditCheckpoint() : nil
        var entries = try await store.auditEntries(
            tenant: global ? nil : session.tenantName, sinceMillis: sinceMillis, afterSeq: max(0, afterSeq),
            limit: limit + 1)
        let more = entries.count > limit
        if more { entries.removeLast(entries.count - limit) }
        return AuditExportPage(entries: entries, checkpoint: more ? nil : checkpoint, more: more)
    }
}

/// A page of `audit export`.
public struct AuditExportPage: Sendable, Equatable, Codable {
    public var entries: [AuditEntry]
    /// The newest checkpoint, on the last page of a whole-chain export.
    public var checkpoint: AuditCheckpoint?
    /// More entries follow: ask again after the last entry's seq.
    public var more: Bool

    public init(entries: [AuditEntry], checkpoint: AuditCheckpoint?, more: Bool) {
        self.entries = entries
        self.checkpoint = checkpoint
        self.more = more
    }
}

/// One line of `audit export`, the form a SIEM ingests: an entry
/// `{"type":"entry","seq","time","operator","tenant","action","target","details","hash","prevHash"}`
/// or the newest checkpoint
/// `{"type":"checkpoint","seq","time","headHash","prevCheckpointHash","signature"}`.
/// `time` is RFC 3339 UTC with milliseconds, exactly the instant the hash or signature covers;
/// absent tenants and targets are `null`.
public enum AuditExportLine: Sendable, Equatable, Codable {
    case entry(AuditEntry)
    case checkpoint(AuditCheckpoint)

    private enum CodingKeys: String, CodingKey {
        case type, seq, time, `operator`, tenant, action, target, details, hash, prevHash
        case headHash, prevCheckpointHash, signature
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        switch self {
        case .entry(let entry):
            try c.encode("entry", forKey: .type)
            try c.encode(entry.seq, forKey: .seq)
            try c.encode(Self.time(entry.at), forKey: .time)
            try c.encode(entry.operatorName, forKey: .operator)
            try c.encode(entry.tenant, forKey: .tenant)
            try c.encode(entry.action, forKey: .action)
            try c.encode(entry.target, forKey: .target)
            try c.encode(entry.details, forKey: .details)
            try c.encode(entry.hash, forKey: .hash)
            try c.encode(entry.prevHash, forKey: .prevHash)
        case .checkpoint(let checkpoint):
            try c.encode("checkpoint", forKey: .type)
            try c.encode(checkpoint.seq, forKey: .seq)
            try c.encode(Self.time(checkpoint.atMillis), forKey: .time)
            try c.encode(checkpoint.headHash, forKey: .headHash)
            try c.encode(checkpoint.prevCheckpointHash, forKey: .prevCheckpointHash)
            try c.encode(checkpoint.signature, forKey: .signature)
        }
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        let type = try c.decode(String.self, forKey: .type)
        let timeText = try c.decode(String.self, forKey: .time)
        guard let at = Self.millis(timeText) else {
            throw DecodingError.dataCorruptedError(
                forKey: .time, in: c, debugDescription: "not an RFC 3339 UTC time with milliseconds")
        }
        let seq = try c.decode(Int64.self, forKey: .seq)
        switch type {
        case "entry":
            let draft = AuditDraft(
                operatorName: try c.decode(String.self, forKey: .operator),
                tenant: try c.decodeIfPresent(String.self, forKey: .tenant),
                action: try c.decode(String.self, forKey: .action),
                target: try c.decodeIfPresent(String.self, forKey: .target),
                details: try c.decode([String: String].self, forKey: .details))
            self = .entry(
                AuditEntry(
                    seq: seq, at: at, draft: draft, prevHash: try c.decode(String.self, forKey: .prevHash),
                    hash: try c.decode(String.self, forKey: .hash)))
        case "checkpoint":
            self = .checkpoint(
                AuditCheckpoint(
                    seq: seq, headHash: try c.decode(String.self, forKey: .headHash), atMillis: at,
                    prevCheckpointHash: try c.decode(String.self, forKey: .prevCheckpointHash),
                    signature: try c.decode(String.self, forKey: .signature)))
        default:
            throw DecodingError.dataCorruptedError(forKey: .type, in: c, debugDescription: "unknown line type")
        }
    }

    /// `2026-11-23T00:11:12.345Z` for unix milliseconds.
    public static func time(_ millis: Int64) -> String { UTCMillis.format(millis) }

    /// The unix milliseconds of a ``time(_:)`` text.
    public static func millis(_ text: String) -> Int64? { UTCMillis.millis(text) }
}
