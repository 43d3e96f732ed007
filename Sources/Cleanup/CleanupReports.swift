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
        /// Unreferenced for at least the grace period and, on a live tenant, proven so by a
        /// fresh complete snapshot, the service's reset, or `/v1/backup/status`.
        public var eligible: Bool
        /// What an ineligible orphan waits for: `grace`, or `snapshot` (a complete snapshot taken
        /// at least the grace period after it was first seen, younger than the tenant's maximum
        /// snapshot age); `null` when eligible.
        public var waitingFor: String?
        /// What proved an eligible orphan: `live_store` (sandbox), `snapshot`, `reset`, `status`.
        public var provenBy: String?

        public init(
            subOrgId: String, reason: String, firstSeenAt: Int64, eligible: Bool, waitingFor: String? = nil,
            provenBy: String? = nil
        ) {
            self.subOrgId = subOrgId
            self.reason = reason
            self.firstSeenAt = firstSeenAt
            self.eligible = eligible
            self.waitingFor = waitingFor
            self.provenBy = provenBy
        }

        public func encode(to encoder: any Encoder) throws {
            enum K: String, CodingKey { case subOrgId, reason, firstSeenAt, eligible, waitingFor, provenBy }
            var c = encoder.container(keyedBy: K.self)
            try c.encode(subOrgId, forKey: .subOrgId)
            try c.encode(reason, forKey: .reason)
            try c.encode(firstSeenAt, forKey: .firstSeenAt)
            try c.encode(eligible, forKey: .eligible)
            try c.encode(waitingFor, forKey: .waitingFor)
            try c.encode(provenBy, forKey: .provenBy)
        }
    }

    /// The newest complete snapshot the decision used (RFC 3339), if any; `null` on sandbox tenants.
    public var snapshotAt: String?
    /// Its age in seconds when the scan ran.
    public var snapshotAgeSeconds: Int64?
    /// Orphans waiting for a fresh snapshot.
    public var waitingForSnapshot = 0

    public init(listed: Int = 0, referenced: Int = 0, orphans: [Orphan] = [], vanished: Int = 0) {
        self.listed = listed
        self.referenced = referenced
        self.orphans = orphans
        self.vanished = vanished
    }

    enum CodingKeys: String, CodingKey {
        case listed, referenced, orphans, snapshotAt, snapshotAgeSeconds, waitingForSnapshot
    }
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
    /// Orphans the scan left alone because no fresh snapshot proves them unreferenced.
    public var waitingForSnapshot = 0

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

    enum CodingKeys: String, CodingKey {
        case dryRun, deleted, alreadyGone, failed, needsUser, skipped, items, waitingForSnapshot
    }

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
    /// Items matching the filters (all of them, before `--limit`).
    public var matching: Int
    /// The matching items, oldest first-seen first, at most `--limit`.
    public var items: [Item]

    public struct Item: Sendable, Equatable, Encodable {
        public var subOrgId: String
        public var state: String
        public var reason: String
        public var firstSeenAt: Int64
        public var attempts: Int
        public var lastError: String?
        public var lastBackupId: String?

        public func encode(to encoder: any Encoder) throws {
            enum K: String, CodingKey { case subOrgId, state, reason, firstSeenAt, attempts, lastError, lastBackupId }
            var c = encoder.container(keyedBy: K.self)
            try c.encode(subOrgId, forKey: .subOrgId)
            try c.encode(state, forKey: .state)
            try c.encode(reason, forKey: .reason)
            try c.encode(firstSeenAt, forKey: .firstSeenAt)
            try c.encode(attempts, forKey: .attempts)
            try c.encode(lastError, forKey: .lastError)
            try c.encode(lastBackupId, forKey: .lastBackupId)
        }
    }
}

/// `cleanup ingest-log`: lines read, ids found, new journal items.
public struct IngestReport: Sendable, Equatable, Encodable {
    public var lines: Int
    public var found: Int
    public var new: Int
}
