/// What `cleanup scan` found; JSON `{listed, referenced, orphans: [{subOrgId, reason, firstSeenAt, eligible}]}`.
public struct ScanReport: Sendable, Equatable, Encodable {
    /// Sub-orgs `list_suborgs` returned under the parent.
    public var listed: Int
    /// Of those, how many a backup references.
    public var referenced: Int
    public var orphans: [Orphan]
    /// Journal items that were pending but are no longer listed (now `alreadyGone`).
    public var vanished: Int

    public struct Orphan: Sendable, Equatable, Encodable {
        public var subOrgId: String
        /// `unreferenced`, `reset`, `service_log`, `break_glass`.
        public var reason: String
        /// Unix seconds.
        public var firstSeenAt: Int64
        /// Unreferenced for at least the grace period.
        public var eligible: Bool
    }

    public init(listed: Int = 0, referenced: Int = 0, orphans: [Orphan] = [], vanished: Int = 0) {
        self.listed = listed
        self.referenced = referenced
        self.orphans = orphans
        self.vanished = vanished
    }

    enum CodingKeys: String, CodingKey { case listed, referenced, orphans }
}

/// What `cleanup run` did; JSON `{dryRun, deleted, alreadyGone, failed, needsUser, skipped, items: [...]}`.
public struct RunReport: Sendable, Equatable, Encodable {
    public var dryRun: Bool
    public var deleted = 0
    public var alreadyGone = 0
    public var failed = 0
    public var needsUser = 0
    public var skipped = 0
    public var items: [Item] = []
    /// Items left pending (stopped early, or an activity still PENDING); not in the JSON counts.
    public var pending = 0
    /// Why the run stopped early, if it did (Ctrl-C, outage).
    public var stoppedReason: String?

    public struct Item: Sendable, Equatable, Encodable {
        public var subOrgId: String
        /// `deleted`, `alreadyGone`, `failed`, `needsUser`, `skipped`, `pending`, or `wouldDelete` in a dry run.
        public var outcome: String
        public var attempts: Int
        public var error: String?

        public func encode(to encoder: any Encoder) throws {
            enum K: String, CodingKey { case subOrgId, outcome, attempts, error }
            var c = encoder.container(keyedBy: K.self)
            try c.encode(subOrgId, forKey: .subOrgId)
            try c.encode(outcome, forKey: .outcome)
            try c.encode(attempts, forKey: .attempts)
            try c.encode(error, forKey: .error)  // explicit null: the field is fixed
        }
    }

    public init(dryRun: Bool) { self.dryRun = dryRun }

    enum CodingKeys: String, CodingKey { case dryRun, deleted, alreadyGone, failed, needsUser, skipped, items }

    mutating func count(_ outcome: String) {
        switch outcome {
        case "deleted": deleted += 1
        case "alreadyGone": alreadyGone += 1
        case "failed": failed += 1
        case "needsUser": needsUser += 1
        case "skipped": skipped += 1
        default: pending += 1
        }
    }
}

/// `cleanup status`: journal counts per state and the oldest pending item.
public struct StatusReport: Sendable, Equatable, Encodable {
    public var pending: Int
    public var deleted: Int
    public var alreadyGone: Int
    public var failed: Int
    public var needsUser: Int
    public var skipped: Int
    public var stamped: Int
    /// Unix seconds of the oldest first-seen among pending items.
    public var oldestPendingFirstSeenAt: Int64?
}

/// `cleanup ingest-log`: lines read, ids found, new journal items.
public struct IngestReport: Sendable, Equatable, Encodable {
    public var lines: Int
    public var found: Int
    public var new: Int
}
