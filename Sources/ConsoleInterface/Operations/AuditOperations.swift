import Access
import BackupModel
import ConsoleStore

// The audit log is read-only to clients: these operations list, verify and export it. Entries
// are written only by the services, in the transaction of what they record, and checkpoints
// only by the console's own signer; no operation accepts an entry or a checkpoint.

/// `audit list`: the latest entries of the caller's tenant, filtered (at most
/// ``AuditLog/maxListLimit``); with `afterSeq`, the first ones after it, so a client paging
/// forward (`--follow` asks again with the last seq it saw) misses none.
public struct AuditListOperation: ConsoleOperation {
    public static let name = "audit.list"
    public var operatorName: String?
    public var action: String?
    /// Unix milliseconds: entries at or after it.
    public var sinceMillis: Int64?
    public var afterSeq: Int64
    public var limit: Int

    public struct Output: Codable, Sendable, Equatable {
        public var entries: [AuditEntry]

        public init(entries: [AuditEntry]) { self.entries = entries }
    }

    public init(operatorName: String?, action: String?, sinceMillis: Int64?, afterSeq: Int64 = 0, limit: Int) {
        self.operatorName = operatorName
        self.action = action
        self.sinceMillis = sinceMillis
        self.afterSeq = afterSeq
        self.limit = limit
    }

    public func run(_ context: any OperationContext) async throws(ConsoleError) -> Output {
        let entries = try await AuditLog(store: try await context.store()).list(
            session: try context.session(), operatorName: operatorName, action: action, sinceMillis: sinceMillis,
            afterSeq: afterSeq, limit: limit)
        return Output(entries: entries)
    }
}

/// `audit verify [--public-key FILE]`: the chain, and its signed checkpoints with the key the
/// client sent (read from its file by the client) or else the console's own signing key.
public struct AuditVerifyOperation: ConsoleOperation {
    public static let name = "audit.verify"
    /// P-256 public keys in hex (33 or 65 bytes): the current one and those it replaced. Empty:
    /// the console's own signing key.
    public var publicKeys: [String]
    /// Checkpoints anchored outside the store (`--anchor FILE`: a witness file, the signer's
    /// high-water mark or an earlier export), read by the client; at most ``maxAnchors``.
    public var anchors: [AuditCheckpoint]?
    /// With keys: more unsigned entries after the newest checkpoint than this is a finding.
    /// `nil`: the console signer's interval, else 100.
    public var maxUnsigned: Int64?

    /// The newest anchors a request carries (a request body is at most 1 MiB).
    public static let maxAnchors = 1000

    public init(publicKeys: [String], anchors: [AuditCheckpoint]? = nil, maxUnsigned: Int64? = nil) {
        self.publicKeys = publicKeys
        self.anchors = anchors
        self.maxUnsigned = maxUnsigned
    }

    public init(publicKey: String? = nil) { self.publicKeys = publicKey.map { [$0] } ?? [] }

    public func run(_ context: any OperationContext) async throws(ConsoleError) -> AuditVerification {
        var keys: [AuditPublicKey] = []
        for text in publicKeys { keys.append(try AuditPublicKey(text: text)) }
        let signer = context.auditSigner
        if keys.isEmpty, let own = signer?.publicKey {
            keys = [own] + context.retiredAuditKeys
        }
        var anchors = anchors ?? []
        guard anchors.count <= Self.maxAnchors else {
            throw .invalid("invalid_anchor", "At most \(Self.maxAnchors) anchored checkpoints per verification.")
        }
        // A signing console's own anchors (its high-water mark, its witness) are evidence too:
        // a store it refuses to sign must not verify as ok through it.
        if let signer { anchors += try signer.anchors() }
        if let maxUnsigned, maxUnsigned < 0 {
            throw .invalid("invalid_max_unsigned", "--max-unsigned must be 0 or more, got \(maxUnsigned).")
        }
        let store = try await context.store()
        // A signing console covers its own tail first, so a verification never races its signer.
        if let signer { await signer.checkpointIfBehind(store: store) }
        return try await SignedAuditLog(store: store).verify(
            session: try context.session(), publicKeys: keys, anchors: anchors,
            maxUnsigned: maxUnsigned ?? signer?.everyEntries ?? 100)
    }
}

/// `audit export --since TIME`: one page of entries (and, on the last page of a whole-chain
/// export, the newest checkpoint); the client asks again after the last seq while `more`.
public struct AuditExportOperation: ConsoleOperation {
    public static let name = "audit.export"
    public var sinceMillis: Int64
    public var afterSeq: Int64
    public var limit: Int

    public init(sinceMillis: Int64, afterSeq: Int64 = 0, limit: Int = 1000) {
        self.sinceMillis = sinceMillis
        self.afterSeq = afterSeq
        self.limit = limit
    }

    public func run(_ context: any OperationContext) async throws(ConsoleError) -> AuditExportPage {
        try await SignedAuditLog(store: try await context.store()).export(
            session: try context.session(), sinceMillis: sinceMillis, afterSeq: afterSeq, limit: limit)
    }
}
