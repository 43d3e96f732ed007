import BackupModel
import Foundation

/// Per-tenant policy knobs. Defaults are the production values of the facts file.
public struct TenantPolicy: Sendable, Equatable, Codable {
    /// Lifetime of a reset challenge; the service's is 15 minutes and policy may only shorten it.
    public var resetTokenTTLSeconds: Int
    /// How long a sub-org must stay unreferenced before cleanup may delete it.
    public var cleanupGraceSeconds: Int
    /// Turnkey retry policy: cap of the full-jitter back-off and attempts per call.
    public var retryCapMillis: Int
    public var retryAttempts: Int
    /// Client-side rate limit towards Turnkey, requests per second.
    public var turnkeyRPS: Int
    /// The oldest a complete snapshot may be for cleanup to trust its word that a sub-org is
    /// unreferenced (live tenants; sandbox tenants read the live store).
    public var maxSnapshotAgeSeconds: Int
    /// A complete snapshot may retire at most this percentage of the tenant's backups (at
    /// least one) and at most ``retireMaxCount`` without `import --retire-at-most N`: a cut-short
    /// sync, a wrong prefix or a hostile export must not retire a live tenant.
    public var retireMaxPercent: Int
    public var retireMaxCount: Int

    public static let maxResetTokenTTLSeconds = 15 * 60

    public init(
        resetTokenTTLSeconds: Int = TenantPolicy.maxResetTokenTTLSeconds, cleanupGraceSeconds: Int = 24 * 3600,
        retryCapMillis: Int = 2000, retryAttempts: Int = 3, turnkeyRPS: Int = 10,
        maxSnapshotAgeSeconds: Int = 24 * 3600, retireMaxPercent: Int = 1, retireMaxCount: Int = 100
    ) {
        self.maxSnapshotAgeSeconds = maxSnapshotAgeSeconds
        self.retireMaxPercent = retireMaxPercent
        self.retireMaxCount = retireMaxCount
        self.resetTokenTTLSeconds = resetTokenTTLSeconds
        self.cleanupGraceSeconds = cleanupGraceSeconds
        self.retryCapMillis = retryCapMillis
        self.retryAttempts = retryAttempts
        self.turnkeyRPS = turnkeyRPS
    }

    private enum CodingKeys: String, CodingKey {
        case resetTokenTTLSeconds, cleanupGraceSeconds, retryCapMillis, retryAttempts, turnkeyRPS
        case maxSnapshotAgeSeconds, retireMaxPercent, retireMaxCount
    }

    /// Policies stored before a knob existed read its default.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        let d = TenantPolicy()
        resetTokenTTLSeconds = try c.decodeIfPresent(Int.self, forKey: .resetTokenTTLSeconds) ?? d.resetTokenTTLSeconds
        cleanupGraceSeconds = try c.decodeIfPresent(Int.self, forKey: .cleanupGraceSeconds) ?? d.cleanupGraceSeconds
        retryCapMillis = try c.decodeIfPresent(Int.self, forKey: .retryCapMillis) ?? d.retryCapMillis
        retryAttempts = try c.decodeIfPresent(Int.self, forKey: .retryAttempts) ?? d.retryAttempts
        turnkeyRPS = try c.decodeIfPresent(Int.self, forKey: .turnkeyRPS) ?? d.turnkeyRPS
        maxSnapshotAgeSeconds =
            try c.decodeIfPresent(Int.self, forKey: .maxSnapshotAgeSeconds) ?? d.maxSnapshotAgeSeconds
        retireMaxPercent = try c.decodeIfPresent(Int.self, forKey: .retireMaxPercent) ?? d.retireMaxPercent
        retireMaxCount = try c.decodeIfPresent(Int.self, forKey: .retireMaxCount) ?? d.retireMaxCount
    }

    /// The policy as the `policy` column holds it (JSON).
    public var storedText: String {
        // Integers only: encoding cannot fail.
        String(decoding: (try? JSONEncoder().encode(self)) ?? Data("{}".utf8), as: UTF8.self)
    }

    /// The policy of a `policy` column; `internal_error` naming the tenant when it is not one.
    public static func stored(_ text: String, tenant: String) throws(ConsoleError) -> TenantPolicy {
        do {
            return try JSONDecoder().decode(TenantPolicy.self, from: Data(text.utf8))
        } catch {
            throw ConsoleError.internalError("Tenant \(tenant) has an unreadable policy in the store.")
        }
    }

    /// The policy a store writes back in ``LiveTenantStore/updateTenantPolicy(tenant:audit:_:)``:
    /// the stored `text` (`nil`: the tenant has no row) with `change` applied.
    /// - Throws: `not_found` for a missing tenant, `internal_error` for an unreadable policy.
    public static func changing(
        _ text: String?, tenant: TenantName, _ change: (inout TenantPolicy) -> Void
    ) throws(ConsoleError) -> TenantPolicy {
        guard let text else { throw ConsoleError.notFound("Tenant \(tenant) does not exist.") }
        var policy = try stored(text, tenant: tenant.rawValue)
        change(&policy)
        return policy
    }

    /// How many of `backups` a complete snapshot may retire without confirmation:
    /// `min(retireMaxCount, max(1, backups × retireMaxPercent / 100))`.
    public func retireAllowance(of backups: Int) -> Int {
        let share = backups.multipliedReportingOverflow(by: max(0, retireMaxPercent)).partialValue / 100
        return max(0, min(retireMaxCount, max(1, share)))
    }
}

public struct TenantRecord: Sendable, Equatable, Codable {
    public var name: TenantName
    /// Sandbox tenants use the in-process Turnkey sandbox and accept `seed`.
    public var isSandbox: Bool
    public var turnkeyURL: String?
    public var turnkeyOrgId: String?
    /// Paths only: key files stay on disk, readable by their owner alone.
    public var turnkeyAPIKeyFile: String?
    public var cleanupKeyFile: String?
    /// The live Backup Service deployment (`https://…`); sandbox tenants use the in-process emulator.
    public var backupServiceURL: String?
    public var policy: TenantPolicy
    /// Unix seconds.
    public var createdAt: Int64

    public init(
        name: TenantName, isSandbox: Bool, turnkeyURL: String? = nil, turnkeyOrgId: String? = nil,
        turnkeyAPIKeyFile: String? = nil, cleanupKeyFile: String? = nil, backupServiceURL: String? = nil,
        policy: TenantPolicy = TenantPolicy(), createdAt: Int64
    ) {
        self.backupServiceURL = backupServiceURL
        self.name = name
        self.isSandbox = isSandbox
        self.turnkeyURL = turnkeyURL
        self.turnkeyOrgId = turnkeyOrgId
        self.turnkeyAPIKeyFile = turnkeyAPIKeyFile
        self.cleanupKeyFile = cleanupKeyFile
        self.policy = policy
        self.createdAt = createdAt
    }
}

public struct OperatorRecord: Sendable, Equatable, Codable {
    public var name: OperatorName
    /// May create tenants (the operator made by `init`); grants nothing inside a tenant by itself.
    public var canCreateTenants: Bool
    public var createdAt: Int64

    public init(name: OperatorName, canCreateTenants: Bool, createdAt: Int64) {
        self.name = name
        self.canCreateTenants = canCreateTenants
        self.createdAt = createdAt
    }
}

public struct GrantRecord: Sendable, Equatable, Codable {
    public var operatorName: OperatorName
    public var tenant: TenantName
    public var role: Role

    public init(operatorName: OperatorName, tenant: TenantName, role: Role) {
        self.operatorName = operatorName
        self.tenant = tenant
        self.role = role
    }
}

/// A backup as the console holds it: metadata (stored form), manifest hash and blob facts.
public struct BackupRecord: Sendable, Equatable {
    public var backupId: String
    public var metadata: BackupMetadata
    public var blobSize: Int?
    /// Lowercase hex SHA-256 of the sealed blob.
    public var blobSHA256: String?
    public var importedAt: Int64
    public var updatedAt: Int64

    public init(
        backupId: String, metadata: BackupMetadata, blobSize: Int?, blobSHA256: String?, importedAt: Int64,
        updatedAt: Int64
    ) {
        self.backupId = backupId
        self.metadata = metadata
        self.blobSize = blobSize
        self.blobSHA256 = blobSHA256
        self.importedAt = importedAt
        self.updatedAt = updatedAt
    }

    public var manifestHash: String { metadata.manifestHash }
}

/// One FactorLookup row: the primary key exactly as the service wrote it, and its backup.
public struct LookupRow: Sendable, Equatable, Hashable {
    public var pk: String
    public var backupId: String

    public init(pk: String, backupId: String) {
        self.pk = pk
        self.backupId = backupId
    }
}

/// Everything to write for one backup in one transaction.
public struct BackupWrite: Sendable {
    public var record: BackupRecord
    public var blob: Data?
    /// The rows to own after the write; the backup's previous rows not listed are removed.
    public var lookupRows: [LookupRow]
    /// Rows of ``lookupRows`` that another backup owns now and this write takes over, each
    /// naming that backup (a factor that moved from a backup a complete snapshot no longer
    /// holds). In the write's own transaction, and only while that backup still owns the row:
    /// one that changed hands meanwhile is a `factor_conflict` and nothing is written.
    public var takesOver: [LookupRow]

    public init(record: BackupRecord, blob: Data?, lookupRows: [LookupRow], takesOver: [LookupRow] = []) {
        self.record = record
        self.blob = blob
        self.lookupRows = lookupRows
        self.takesOver = takesOver
    }
}

/// A reset challenge as stored: the token only as its hash.
public struct ResetChallengeRecord: Sendable, Equatable {
    public var tokenHash: String
    public var tenant: TenantName
    public var backupId: String
    /// The operation the token was made for; `reset` here, others may follow.
    public var context: String
    public var challenge: [UInt8]
    public var createdAt: Int64
    public var expiresAt: Int64
    /// When the console recorded the reset as done (the service's 204, or proof by status).
    public var usedAt: Int64?
    /// When the console last sent the token to the Backup Service's `/v1/reset`.
    public var sentAt: Int64?

    public init(
        tokenHash: String, tenant: TenantName, backupId: String, context: String, challenge: [UInt8],
        createdAt: Int64, expiresAt: Int64, usedAt: Int64? = nil, sentAt: Int64? = nil
    ) {
        self.sentAt = sentAt
        self.tokenHash = tokenHash
        self.tenant = tenant
        self.backupId = backupId
        self.context = context
        self.challenge = challenge
        self.createdAt = createdAt
        self.expiresAt = expiresAt
        self.usedAt = usedAt
    }
}

/// What a reset wiped, returned from the one transaction that did it.
public struct ResetWipe: Sendable, Equatable {
    public var backupId: String
    public var lookupRowsRemoved: Int
    public var turnkeySubOrgIds: [String]

    public init(backupId: String, lookupRowsRemoved: Int, turnkeySubOrgIds: [String]) {
        self.backupId = backupId
        self.lookupRowsRemoved = lookupRowsRemoved
        self.turnkeySubOrgIds = turnkeySubOrgIds
    }
}

/// One queued cleanup item (the journal of orphaned sub-organizations).
public struct CleanupItemRecord: Sendable, Equatable, Codable {
    public enum State: String, Sendable, Codable, CaseIterable {
        case pending, deleted, alreadyGone, failed, needsUser, skipped
    }

    /// Reasons that say the sub-org was referenced by ``lastBackupId`` until the moment they
    /// were recorded (a reset wiped that backup, a snapshot retired it): queued again with one
    /// of them, an open item takes the new reason and first-seen time (``reason``).
    public static let freshEvidence: Set<String> = ["reset", "retired"]

    public var subOrgId: String
    /// Why it may be deleted, which decides the proof it needs: `unreferenced` (found by scan, or
    /// unreferenced again after a scan or run found it referenced), `reset`, `retired`,
    /// `service_log`, `break_glass`.
    public var reason: String
    public var firstSeenAt: Int64
    public var state: State
    /// The activity body, written before it is first sent and re-sent unchanged.
    public var body: String?
    public var attempts: Int
    public var lastError: String?
    public var updatedAt: Int64
    /// The backup that last referenced the sub-org, when it is known (reset, retired by a snapshot):
    /// `/v1/backup/status` answering `not_found` for it proves the sub-org is orphaned.
    public var lastBackupId: String?
    /// Bumped by every journal write; an update names the version it read (compare-and-set).
    public var version: Int64

    public init(
        subOrgId: String, reason: String, firstSeenAt: Int64, state: State = .pending, body: String? = nil,
        attempts: Int = 0, lastError: String? = nil, updatedAt: Int64, lastBackupId: String? = nil,
        version: Int64 = 0
    ) {
        self.lastBackupId = lastBackupId
        self.version = version
        self.subOrgId = subOrgId
        self.reason = reason
        self.firstSeenAt = firstSeenAt
        self.state = state
        self.body = body
        self.attempts = attempts
        self.lastError = lastError
        self.updatedAt = updatedAt
    }
}

/// The audit entry of ``ConsoleStore/deleteTenant(_:audit:)``, completed by the store with the
/// number of backups it removed (decimal, under ``countKey`` in the details) inside the
/// deleting transaction.
public struct CountedAuditDraft: Sendable, Equatable {
    public var draft: AuditDraft
    public var countKey: String

    public init(_ draft: AuditDraft, countKey: String) {
        self.draft = draft
        self.countKey = countKey
    }

    /// The entry as written: `draft` with the count added.
    public func completed(count: Int) -> AuditDraft {
        var entry = draft
        entry.details[countKey] = String(count)
        return entry
    }
}

/// The audit entry of ``LiveTenantStore/recordServiceReset(tenant:tokenHash:backupId:subOrgIds:now:audit:)``,
/// completed by the store with what the wipe found: `target` becomes the backup id,
/// `lookupRowsRemoved` the larger of the rows it deleted and ``lookupRowsAtLeast`` (rows the
/// service reported), `subOrgsQueued` the number of sub-orgs queued.
public struct ResetAuditDraft: Sendable, Equatable {
    public var draft: AuditDraft
    public var lookupRowsAtLeast: Int

    public init(_ draft: AuditDraft, lookupRowsAtLeast: Int) {
        self.draft = draft
        self.lookupRowsAtLeast = lookupRowsAtLeast
    }

    /// The entry as written for `wipe`.
    public func completed(_ wipe: ResetWipe) -> AuditDraft {
        var entry = draft
        entry.target = wipe.backupId
        entry.details["lookupRowsRemoved"] = String(max(wipe.lookupRowsRemoved, lookupRowsAtLeast))
        entry.details["subOrgsQueued"] = String(wipe.turnkeySubOrgIds.count)
        return entry
    }
}
