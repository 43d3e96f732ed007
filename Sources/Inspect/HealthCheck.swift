import BackupModel
import ConsoleStore

/// How a health check came out. `fail` breaks recovery or sync for the user; `warn` needs an
/// operator's attention but the user can still get in.
public enum HealthStatus: String, Sendable, Codable, CaseIterable, Comparable {
    case ok, warn, fail

    var rank: Int {
        switch self {
        case .ok: 0
        case .warn: 1
        case .fail: 2
        }
    }

    public static func < (a: HealthStatus, b: HealthStatus) -> Bool { a.rank < b.rank }
}

/// The health checks, by their stable snake_case names (what `check` summarises and scripts
/// match on). The order here is the order reports list them in.
public enum HealthCheckName: String, Sendable, Codable, CaseIterable {
    /// Every factor the metadata implies has its FactorLookup row.
    case lookupRowsMissing = "lookup_rows_missing"
    /// No FactorLookup row of this backup names a factor the metadata no longer has.
    case lookupRowsUnauthorized = "lookup_rows_unauthorized"
    /// No factor of this backup is indexed to another backup.
    case factorShared = "factor_shared"
    /// Every main factor has its encryption key (PRF, ICLOUD, TURNKEY).
    case factorKeys = "factor_keys"
    /// No encryption key is left without the factor that opens it.
    case orphanKeys = "orphan_keys"
    /// An OIDC factor with no passkey beside it.
    case oidcWithoutPasskey = "oidc_without_passkey"
    /// At most 10 main and 25 sync factors, and at least one main factor.
    case factorLimits = "factor_limits"
    /// Sync factors are EC_KEYPAIR with a 65-byte uncompressed P-256 point in standard base64.
    case syncFactors = "sync_factors"
    /// A sealed blob is stored and is at most 15 MB.
    case sealedBlob = "sealed_blob"
    /// The manifest hash is 64 hex digits.
    case manifestHash = "manifest_hash"
}

/// One check's result for one backup: status and a one-line explanation an operator can act on.
public struct HealthResult: Sendable, Equatable, Codable {
    public var check: String
    public var status: HealthStatus
    public var detail: String

    public init(_ check: HealthCheckName, _ status: HealthStatus, _ detail: String) {
        self.check = check.rawValue
        self.status = status
        self.detail = detail
    }

    /// A live check's result (`check --turnkey`).
    public init(_ check: LiveCheckName, _ status: HealthStatus, _ detail: String) {
        self.check = check.rawValue
        self.status = status
        self.detail = detail
    }
}

/// Everything the health checks look at for one backup, gathered by the caller so the checks
/// themselves are pure functions: the facts derived from its metadata and how its index rows
/// disagree with them.
///
/// Built from the full metadata (`show`, `check BACKUP_ID`) or from what the store derived at
/// write time (a tenant-wide `check`); both go through ``BackupSummary`` and ``ImpliedKey``,
/// so both give the same results.
public struct HealthInput: Sendable, Equatable {
    /// The facts of the metadata the checks use, and the stored blob size.
    public var summary: BackupSummary
    /// Index rows pointing at this backup that the metadata does not imply, in index order.
    public var unauthorizedKeys: [String]
    /// Keys the metadata implies that the index does not map to this backup, in metadata
    /// order, each with the other backup the index gives it to, if any.
    public var unindexedKeys: [UnindexedKey]

    public var backupId: String { summary.backupId }

    /// From the full metadata.
    /// - Parameters:
    ///   - indexRows: primary keys of the FactorLookup rows that point at this backup.
    ///   - otherOwners: for metadata lookup keys the index maps to a *different* backup: key → that backup id.
    ///   - blobSize: size of the stored sealed blob, `nil` when none is stored.
    public init(
        backupId: String, metadata: BackupMetadata, indexRows: [String], otherOwners: [String: String] = [:],
        blobSize: Int?
    ) {
        summary = BackupSummary(metadata: metadata, blobSize: blobSize)
        summary.backupId = backupId
        let implied = ImpliedKey.of(metadata)
        let impliedKeys = Set(implied.map(\.pk))
        let rows = Set(indexRows)
        unauthorizedKeys = indexRows.filter { !impliedKeys.contains($0) }
        unindexedKeys = implied.filter { !rows.contains($0.pk) }.map {
            UnindexedKey(pk: $0.pk, copies: $0.copies, owner: otherOwners[$0.pk])
        }
    }

    /// From what the store derived (a tenant-wide scan).
    public init(_ row: BackupHealthRow) {
        summary = row.summary
        unauthorizedKeys = row.unauthorizedKeys
        unindexedKeys = row.unindexedKeys
    }
}
