import BackupModel
import BackupService

/// What `reset begin` hands out: the challenge for the user to sign and the token that binds it.
public struct ResetChallenge: Sendable {
    public let backupId: BackupAccountID
    /// The 32 raw challenge bytes.
    public let challenge: [UInt8]
    /// The opaque single-use token (``ResetToken``); shown once, never logged or audited.
    public let token: SecretBytes
    /// Unix seconds after which the service refuses the token (`jwt_error`).
    public let expiresAt: Int64
    /// The live backup's main factors, as `/v1/backup/status` listed them.
    public let factors: [BackupServiceWire.StatusFactor]

    public init(
        backupId: BackupAccountID, challenge: [UInt8], token: SecretBytes, expiresAt: Int64,
        factors: [BackupServiceWire.StatusFactor] = []
    ) {
        self.factors = factors
        self.backupId = backupId
        self.challenge = challenge
        self.token = token
        self.expiresAt = expiresAt
    }

    /// The challenge as the service sends it: standard base64, padded.
    public var challengeBase64: String { Base64.encode(challenge) }
    /// `expiresAt` in RFC 3339 (UTC).
    public var expiresAtRFC3339: String { Timestamp.format(expiresAt) }
}

/// What a completed reset wiped, for the `reset complete` output and the ticket summary.
public struct ResetResult: Sendable, Equatable, Codable {
    public let backupId: String
    /// Always true on success: metadata, blob, lookup rows and sub-org refs are gone.
    public let wiped: Bool
    public let lookupRowsRemoved: Int
    /// The sub-orgs queued for Turnkey teardown with reason `reset`.
    public let turnkeySubOrgIds: [String]
    /// `nil` when the service answered 204; `"status"` when its answer was lost and
    /// `/v1/backup/status` answering `not_found` proved the reset had happened.
    public var resolvedBy: String?

    public init(
        backupId: String, wiped: Bool, lookupRowsRemoved: Int, turnkeySubOrgIds: [String], resolvedBy: String? = nil
    ) {
        self.resolvedBy = resolvedBy
        self.backupId = backupId
        self.wiped = wiped
        self.lookupRowsRemoved = lookupRowsRemoved
        self.turnkeySubOrgIds = turnkeySubOrgIds
    }
}

/// A `reset complete` request ready to send: which backup, and the ledger entry it came from.
public struct ResetPlan: Sendable, Equatable {
    /// The backup the token resets.
    public let backupId: String
    let tokenHash: String
    /// Whether this console issued the token (`reset begin`); else the caller named the backup.
    public let fromLedger: Bool
    /// Whether the token was sent to the service before without the outcome being recorded.
    public let sentBefore: Bool
}

/// Named points of `reset complete`, reported to an observer as they are passed.
///
/// The executable uses them, in debug builds only, to kill itself at a chosen point for the
/// crash-atomicity test; production code ignores them.
public enum ResetCheckpoint: String, Sendable, CaseIterable {
    /// The ledger entry was found and marked sent; the request is about to go to the service.
    case checked
    /// The service answered 204 (or `status` proved the reset); nothing local written yet.
    case verified
    /// Inside the local transaction, the console's copy deleted and the sub-orgs queued, not committed.
    case wiped
    /// The local transaction committed.
    case committed
}
