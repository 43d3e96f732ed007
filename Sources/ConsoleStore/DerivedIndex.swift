import BackupModel

/// One FactorLookup key a backup's metadata implies (a row of `backup_factors`): what the
/// index *should* hold for the backup, against which the real index is compared.
public struct ImpliedKey: Sendable, Equatable {
    public var pk: String
    /// Position of its first occurrence in ``BackupMetadata/lookupKeys`` (main, then sync).
    public var position: Int
    /// How many factors of the metadata imply it (more than one only in a damaged backup).
    public var copies: Int
    /// The first factor that implies it (what a lookup hit reports).
    public var factorId: String

    public init(pk: String, position: Int, copies: Int, factorId: String) {
        self.pk = pk
        self.position = position
        self.copies = copies
        self.factorId = factorId
    }

    /// The distinct keys of `metadata`, in metadata order.
    public static func of(_ metadata: BackupMetadata) -> [ImpliedKey] {
        var keys: [ImpliedKey] = []
        var index: [String: Int] = [:]
        var position = 0
        func add(_ factors: [Factor], _ scope: FactorScope) {
            for factor in factors {
                guard let key = factor.lookupKey(scope: scope) else { continue }
                let pk = key.rawValue
                if let at = index[pk] {
                    keys[at].copies += 1
                } else {
                    index[pk] = keys.count
                    keys.append(ImpliedKey(pk: pk, position: position, copies: 1, factorId: factor.id))
                }
                position += 1
            }
        }
        add(metadata.factors, .main)
        add(metadata.syncFactors, .sync)
        return keys
    }
}

/// A key the metadata implies that the index does not map to the backup.
public struct UnindexedKey: Sendable, Equatable {
    public var pk: String
    /// How many factors of the metadata imply it.
    public var copies: Int
    /// The *other* backup the index maps it to, or `nil` when no row has it.
    public var owner: String?

    public init(pk: String, copies: Int, owner: String?) {
        self.pk = pk
        self.copies = copies
        self.owner = owner
    }
}

/// One backup as a tenant-wide `check` sees it: its summary and how its index rows and its
/// metadata disagree, computed set-wise by the store.
public struct BackupHealthRow: Sendable, Equatable {
    public var summary: BackupSummary
    /// Index rows mapping to this backup that its metadata does not imply, in key order.
    public var unauthorizedKeys: [String]
    /// Keys its metadata implies that the index does not map to it, in metadata order.
    public var unindexedKeys: [UnindexedKey]

    public init(summary: BackupSummary, unauthorizedKeys: [String] = [], unindexedKeys: [UnindexedKey] = []) {
        self.summary = summary
        self.unauthorizedKeys = unauthorizedKeys
        self.unindexedKeys = unindexedKeys
    }
}

/// What the FactorLookup index answers for one key, checked against the metadata-derived
/// keys in the same statement: a hit, `unauthorized_factor` or a dangling row.
public struct LookupResolution: Sendable, Equatable {
    /// The backup the index row names.
    public var backupId: String
    /// Whether that backup exists.
    public var backupExists: Bool
    /// The factor of that backup's metadata implying the key; `nil` when the metadata no
    /// longer has it (the service's `unauthorized_factor`) or the backup is missing.
    public var factorId: String?

    public init(backupId: String, backupExists: Bool, factorId: String?) {
        self.backupId = backupId
        self.backupExists = backupExists
        self.factorId = factorId
    }
}
