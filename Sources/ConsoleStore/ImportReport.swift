/// What `import DIR` found and did; the same report with and without `--dry-run`.
public struct ImportReport: Codable, Sendable, Equatable {
    public var dryRun: Bool
    /// Backup directories looked at.
    public var backupsSeen = 0
    /// Written (or, in a dry run, that would be written).
    public var imported = 0
    /// Already in the store with the same metadata, blob and index rows; not rewritten.
    public var unchanged = 0
    /// Not imported: a bad file or a factor conflict (see `problems` and `conflicts`).
    public var failed = 0
    /// FactorLookup rows written, including rows of backups missing from the export.
    public var lookupRowsImported = 0
    public var problems: [ImportProblem] = []
    public var drift: [DriftFinding] = []
    public var conflicts: [ImportConflict] = []
    /// When the export's copy of the service started (RFC 3339); `nil` when nobody said.
    public var snapshotAt: String?
    /// Whether the export is the whole deployment: backups it no longer holds are retired.
    public var complete = false
    /// Backups of the tenant a complete snapshot no longer holds, retired with it (or, in a dry
    /// run, that would be).
    public var retired: [String] = []
    /// Factor index rows a backup of a complete snapshot took over from a backup the snapshot
    /// no longer holds (a passkey or key that moved to a new backup); not conflicts. Each
    /// changes hands in the transaction that writes the backup claiming it (its `backup.import`
    /// entry counts them as `factorsMoved`).
    public var factorsMoved = 0

    public init(dryRun: Bool) {
        self.dryRun = dryRun
    }
}

/// A file of the export that could not be used, and why.
public struct ImportProblem: Codable, Sendable, Equatable {
    /// Relative to the export directory, e.g. `backup_account_02…/metadata` or `factor_lookup.jsonl:12`.
    public var path: String
    /// snake_case, e.g. `invalid_metadata`, `id_mismatch`, `blob_too_large`, `invalid_lookup_row`.
    public var code: String
    public var reason: String

    public init(path: String, code: String, reason: String) {
        self.path = path
        self.code = code
        self.reason = reason
    }
}

/// A disagreement between a backup's metadata (the truth) and the service's FactorLookup index.
public struct DriftFinding: Codable, Sendable, Equatable {
    public enum Kind: String, Codable, Sendable, CaseIterable {
        /// The metadata has the factor; the index has no row for it.
        case missingInIndex = "missing_in_index"
        /// The index has a row for the backup; its metadata no longer has the factor.
        case unauthorizedFactor = "unauthorized_factor"
        /// The index row points at a backup that is not in the export.
        case orphanRow = "orphan_row"
    }

    public var backupId: String
    public var pk: String
    public var kind: Kind

    public init(backupId: String, pk: String, kind: Kind) {
        self.backupId = backupId
        self.pk = pk
        self.kind = kind
    }
}

/// One factor claimed by more than one backup.
public struct ImportConflict: Codable, Sendable, Equatable {
    public var pk: String
    /// The backup that holds the factor first, then the one that also claims it.
    public var backupIds: [String]

    public init(pk: String, backupIds: [String]) {
        self.pk = pk
        self.backupIds = backupIds
    }
}
