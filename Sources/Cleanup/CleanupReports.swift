import BackupModel

/// What `cleanup scan` found; JSON `{listed, referenced, orphans: [{subOrgId, reason, firstSeenAt, eligible}]}`.
public struct ScanReport: Sendable, Equatable, Codable {
    /// Sub-orgs `list_suborgs` returned under the parent.
    public var listed: Int
    /// Of those, how many a backup references.
    public var referenced: Int
    public var orphans: [Orphan]
    /// Journal items that were pending but are no longer listed (now `alreadyGone`).
    public var vanished = 0

    public struct Orphan: Sendable, Equatable, Codable {
        public var subOrgId: String
        /// `unreferenced`, `reset`, `service_log`, `break_glass`.
        public var reason: String
        /// Unix seconds (RFC 3339 in JSON).
        @UTCSeconds public var firstSeenAt: Int64
        /// Unreferenced for at least the grace period and, on a live tenant, proven so by a
        /// fresh complete snapshot, the service's reset, or `/v1/backup/status`.
        public var eligible: Bool
        /// What an ineligible orphan waits for: `grace`, `snapshot` (a complete snapshot taken
        /// at least the grace period after it was first seen, younger than the tenant's maximum
        /// snapshot age), or `service_status` (a retired backup's sub-org: the Backup Service
        /// must answer `not_found` for that backup); `null` when eligible.
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

        enum CodingKeys: String, CodingKey { case subOrgId, reason, firstSeenAt, eligible, waitingFor, provenBy }

        public init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            self.init(
                subOrgId: try c.decode(String.self, forKey: .subOrgId),
                reason: try c.decode(String.self, forKey: .reason),
                firstSeenAt: try c.decode(UTCSeconds.self, forKey: .firstSeenAt).wrappedValue,
                eligible: try c.decode(Bool.self, forKey: .eligible),
                waitingFor: try c.decodeIfPresent(String.self, forKey: .waitingFor),
                provenBy: try c.decodeIfPresent(String.self, forKey: .provenBy))
        }

        public func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(subOrgId, forKey: .subOrgId)
            try c.encode(reason, forKey: .reason)
            // RFC 3339, as the property wrapper writes it (the wrapped Int64 would be a number).
            try c.encode(_firstSeenAt, forKey: .firstSeenAt)
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
public struct RunReport: Sendable, Equatable, Codable {
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

    public struct Item: Sendable, Equatable, Codable {
        public var subOrgId: String
        /// `deleted`, `alreadyGone`, `failed`, `needsUser`, `skipped`, `pending`, or `wouldDelete` in a dry run.
        public var outcome: String
        public var attempts: Int
        public var error: String?

        enum CodingKeys: String, CodingKey { case subOrgId, outcome, attempts, error }

        public init(subOrgId: String, outcome: String, attempts: Int, error: String?) {
            self.subOrgId = subOrgId
            self.outcome = outcome
            self.attempts = attempts
            self.error = error
        }

        public init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            subOrgId = try c.decode(String.self, forKey: .subOrgId)
            outcome = try c.decode(String.self, forKey: .outcome)
            attempts = try c.decode(Int.self, forKey: .attempts)
            error = try c.decodeIfPresent(String.self, forKey: .error)
        }

        public func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
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

    /// Adds one item's outcome to the counts (`queued` and `retryLater` count as pending).
    public mutating func count(_ outcome: String) {
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
public struct StatusReport: Sendable, Equatable, Codable {
    public var pending: Int
    public var deleted: Int
    public var alreadyGone: Int
    public var failed: Int
    public var needsUser: Int
    public var skipped: Int
    public var stamped: Int
    /// Unix seconds of the oldest first-seen among pending items (RFC 3339 in JSON).
    @OptionalUTCSeconds public var oldestPendingFirstSeenAt: Int64?
    /// Items matching the filters (all of them, before `--limit`).
    public var matching: Int
    /// The matching items, oldest first-seen first, at most `--limit`.
    public var items: [Item]

    public init(
        pending: Int, deleted: Int, alreadyGone: Int, failed: Int, needsUser: Int, skipped: Int, stamped: Int,
        oldestPendingFirstSeenAt: Int64?, matching: Int, items: [Item]
    ) {
        self.pending = pending
        self.deleted = deleted
        self.alreadyGone = alreadyGone
        self.failed = failed
        self.needsUser = needsUser
        self.skipped = skipped
        self.stamped = stamped
        self.oldestPendingFirstSeenAt = oldestPendingFirstSeenAt
        self.matching = matching
        self.items = items
    }

    public struct Item: Sendable, Equatable, Codable {
        public var subOrgId: String
        public var state: String
        public var reason: String
        @UTCSeconds public var firstSeenAt: Int64
        public var attempts: Int
        public var lastError: String?
        public var lastBackupId: String?

        enum CodingKeys: String, CodingKey {
            case subOrgId, state, reason, firstSeenAt, attempts, lastError, lastBackupId
        }

        public init(
            subOrgId: String, state: String, reason: String, firstSeenAt: Int64, attempts: Int, lastError: String?,
            lastBackupId: String?
        ) {
            self.subOrgId = subOrgId
            self.state = state
            self.reason = reason
            self.firstSeenAt = firstSeenAt
            self.attempts = attempts
            self.lastError = lastError
            self.lastBackupId = lastBackupId
        }

        public init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            subOrgId = try c.decode(String.self, forKey: .subOrgId)
            state = try c.decode(String.self, forKey: .state)
            reason = try c.decode(String.self, forKey: .reason)
            _firstSeenAt = try c.decode(UTCSeconds.self, forKey: .firstSeenAt)
            attempts = try c.decode(Int.self, forKey: .attempts)
            lastError = try c.decodeIfPresent(String.self, forKey: .lastError)
            lastBackupId = try c.decodeIfPresent(String.self, forKey: .lastBackupId)
        }

        public func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(subOrgId, forKey: .subOrgId)
            try c.encode(state, forKey: .state)
            try c.encode(reason, forKey: .reason)
            // RFC 3339, as the property wrapper writes it (the wrapped Int64 would be a number).
            try c.encode(_firstSeenAt, forKey: .firstSeenAt)
            try c.encode(attempts, forKey: .attempts)
            try c.encode(lastError, forKey: .lastError)
            try c.encode(lastBackupId, forKey: .lastBackupId)
        }
    }
}

/// `cleanup ingest-log`: lines read, ids found, new journal items.
public struct IngestReport: Sendable, Equatable, Codable {
    public var lines: Int
    public var found: Int
    public var new: Int

    public init(lines: Int, found: Int, new: Int) {
        self.lines = lines
        self.found = found
        self.new = new
    }
}
