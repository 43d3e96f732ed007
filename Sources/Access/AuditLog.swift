import BackupCrypto
import BackupModel
import ConsoleStore

/// The result of walking the whole hash chain, and of checking its signed checkpoints when a
/// public key was at hand (`audit verify`).
public struct AuditVerification: Sendable, Equatable, Codable {
    public var ok: Bool
    public var entries: Int
    /// The first entry that was altered, or whose predecessor was removed or moved, or the
    /// seq of the checkpoint that no longer matches; `nil` when ok.
    public var firstBadSeq: Int64?
    /// Why that entry is bad.
    public var problem: String?
    /// The hash of the last entry: record it elsewhere to detect a truncated tail later.
    public var headHash: String
    /// `all` for the whole chain, else the tenant whose entries `entries` and `headHash` cover.
    public var scope: String = "all"
    /// What was found when not ok: `removed_entry`, `broken_link`, `rewritten_entry` (the
    /// chain itself), `truncated_tail`, `recomputed_chain`, `checkpoint_missing`,
    /// `bad_signature`, `unsigned_chain`, `unsigned_tail` (its checkpoints), `bad_anchor`
    /// (an anchored checkpoint not signed by the key).
    public var finding: String?
    /// How many signed checkpoints the store holds (present when there are any, or a key was given).
    public var checkpoints: Int?
    /// How many checkpoints verified with the key (present when a key was given).
    public var checkpointsVerified: Int?
    /// The seq the newest verified checkpoint covers, 0 for none (present when a key was given).
    public var lastCheckpointSeq: Int64?
    /// Entries after the newest verified checkpoint, not yet signed (present when a key was given).
    public var uncoveredEntries: Int?
    /// The fingerprint of the key the checkpoints were checked with.
    public var keyFingerprint: String?
    /// How many checkpoints anchored outside the store were checked (`--anchor`).
    public var anchorsChecked: Int?

    private enum CodingKeys: String, CodingKey {
        case ok, entries, firstBadSeq, problem, headHash, scope, finding, checkpoints, checkpointsVerified
        case lastCheckpointSeq, uncoveredEntries, keyFingerprint, anchorsChecked
    }

    /// `firstBadSeq` is always present (null when ok): it is part of the command contract.
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(ok, forKey: .ok)
        try c.encode(entries, forKey: .entries)
        try c.encode(firstBadSeq, forKey: .firstBadSeq)
        try c.encodeIfPresent(problem, forKey: .problem)
        try c.encode(headHash, forKey: .headHash)
        try c.encode(scope, forKey: .scope)
        try c.encodeIfPresent(finding, forKey: .finding)
        try c.encodeIfPresent(checkpoints, forKey: .checkpoints)
        try c.encodeIfPresent(checkpointsVerified, forKey: .checkpointsVerified)
        try c.encodeIfPresent(lastCheckpointSeq, forKey: .lastCheckpointSeq)
        try c.encodeIfPresent(uncoveredEntries, forKey: .uncoveredEntries)
        try c.encodeIfPresent(keyFingerprint, forKey: .keyFingerprint)
        try c.encodeIfPresent(anchorsChecked, forKey: .anchorsChecked)
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        ok = try c.decode(Bool.self, forKey: .ok)
        entries = try c.decode(Int.self, forKey: .entries)
        firstBadSeq = try c.decodeIfPresent(Int64.self, forKey: .firstBadSeq)
        problem = try c.decodeIfPresent(String.self, forKey: .problem)
        headHash = try c.decode(String.self, forKey: .headHash)
        scope = try c.decode(String.self, forKey: .scope)
        finding = try c.decodeIfPresent(String.self, forKey: .finding)
        checkpoints = try c.decodeIfPresent(Int.self, forKey: .checkpoints)
        checkpointsVerified = try c.decodeIfPresent(Int.self, forKey: .checkpointsVerified)
        lastCheckpointSeq = try c.decodeIfPresent(Int64.self, forKey: .lastCheckpointSeq)
        uncoveredEntries = try c.decodeIfPresent(Int.self, forKey: .uncoveredEntries)
        keyFingerprint = try c.decodeIfPresent(String.self, forKey: .keyFingerprint)
        anchorsChecked = try c.decodeIfPresent(Int.self, forKey: .anchorsChecked)
    }

    public init(ok: Bool, entries: Int, firstBadSeq: Int64?, problem: String?, headHash: String) {
        self.ok = ok
        self.entries = entries
        self.firstBadSeq = firstBadSeq
        self.problem = problem
        self.headHash = headHash
    }
}

/// Reading and verifying the hash-chained audit log (`audit list`, `audit verify`).
public struct AuditLog: Sendable {
    let store: any ConsoleStore

    public init(store: any ConsoleStore) { self.store = store }

    /// The most entries one `audit list` answers (`audit export` pages through any number).
    public static let maxListLimit = 10_000

    /// The latest `limit` entries of the session's tenant, oldest first.
    public func list(session: Session, limit: Int) async throws(ConsoleError) -> [AuditEntry] {
        try await session.require(.auditList)
        guard (1...Self.maxListLimit).contains(limit) else {
            throw .invalid("invalid_limit", "--limit must be 1…\(Self.maxListLimit), got \(limit).")
        }
        return try await store.latestAuditEntries(tenant: session.tenantName, limit: limit)
    }

    /// Entries of the session's tenant narrowed by operator, action (exact, or a family like
    /// `reset.`) and time, oldest first: the latest `limit`, or with `afterSeq` the first `limit`
    /// after it (`audit list` with filters, and each poll of `audit list --follow`).
    public func list(
        session: Session, operatorName: String?, action: String?, sinceMillis: Int64?, afterSeq: Int64 = 0,
        limit: Int
    ) async throws(ConsoleError) -> [AuditEntry] {
        try await session.require(.auditList)
        guard (1...Self.maxListLimit).contains(limit) else {
            throw .invalid("invalid_limit", "--limit must be 1…\(Self.maxListLimit), got \(limit).")
        }
        guard afterSeq >= 0 else { throw .invalid("invalid_after_seq", "afterSeq must be 0 or more, got \(afterSeq).") }
        if let operatorName { _ = try OperatorName(operatorName) }
        if let action,
            action.isEmpty || action.count > 64
                || !action.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "._-*".contains($0)) })
        {
            throw .invalid(
                "invalid_action",
                "--action must be an action like backup.show or a family like reset., got \(SecretShape.excerpt(action, limit: 64))."
            )
        }
        return try await store.auditEntries(
            AuditQuery(
                tenant: session.tenantName, operatorName: operatorName, action: action, sinceMillis: sinceMillis,
                afterSeq: afterSeq),
            limit: limit)
    }

    /// Walks the whole chain (it is one chain) and reports what the operator may see.
    ///
    /// An operator who may create tenants (a global role) gets the whole chain: its entry count,
    /// head hash and first bad entry. A tenant admin gets the same walk scoped to the tenant:
    /// the count and head hash of that tenant's entries, and a break located only when it is at
    /// one of them; a break elsewhere still makes the answer `ok: false`, without saying where.
    public func verify(session: Session) async throws(ConsoleError) -> AuditVerification {
        try await session.require(.auditVerify)
        let global = try await store.operatorRecord(named: session.operatorName)?.canCreateTenants == true
        return try await Self.verify(store: store, scope: global ? nil : session.tenantName)
    }

    /// The chain check itself, for callers that are not an operator (tests, benchmarks).
    /// - Parameter scope: report counts, head and bad entry of this tenant only (`nil`: all).
    public static func verify(store: any ConsoleStore, scope: TenantName? = nil, pageSize: Int = 1000)
        async throws(ConsoleError) -> AuditVerification
    {
        var expectedSeq: Int64 = 1
        var prevHash = AuditEntry.genesisHash
        var count = 0
        var scopedHead = AuditEntry.genesisHash
        var afterSeq: Int64 = 0
        let label = scope?.rawValue ?? "all"
        func visible(_ entry: AuditEntry) -> Bool { scope == nil || entry.tenant == scope?.rawValue }
        while true {
            let page = try await store.auditEntries(tenant: nil, afterSeq: afterSeq, limit: pageSize)
            if page.isEmpty { break }
            for entry in page {
                if visible(entry) { count += 1 }
                if let (finding, problem) = check(entry, expectedSeq: expectedSeq, prevHash: prevHash) {
                    var result = AuditVerification(
                        ok: false, entries: count, firstBadSeq: entry.seq, problem: problem,
                        headHash: scope == nil ? prevHash : scopedHead)
                    result.scope = label
                    result.finding = finding
                    if !visible(entry) {
                        result.firstBadSeq = nil
                        result.problem =
                            "the chain is broken at an entry outside tenant \(label); an operator who may create tenants can run audit verify to locate it"
                    }
                    return result
                }
                prevHash = entry.hash
                if visible(entry) { scopedHead = entry.hash }
                expectedSeq = entry.seq + 1
                afterSeq = entry.seq
            }
        }
        var result = AuditVerification(
            ok: true, entries: count, firstBadSeq: nil, problem: nil, headHash: scope == nil ? prevHash : scopedHead)
        result.scope = label
        return result
    }

    /// What is wrong with `entry` as the successor of `prevHash` at `expectedSeq`: a finding
    /// code and a sentence, or `nil`.
    static func check(_ entry: AuditEntry, expectedSeq: Int64, prevHash: String) -> (String, String)? {
        if entry.seq != expectedSeq {
            return ("removed_entry", "sequence jumps from \(expectedSeq - 1) to \(entry.seq): entries were removed")
        }
        if entry.prevHash != prevHash {
            return (
                "broken_link",
                "its previous-hash does not match entry \(expectedSeq - 1): an entry was removed, moved or altered"
            )
        }
        let recomputed = SHA256.hex(Array(entry.prevHash.utf8) + Array(entry.canonicalBytes))
        if recomputed != entry.hash {
            return ("rewritten_entry", "its content does not match its hash: the entry was altered")
        }
        return nil
    }
}
