import BackupModel

/// What `reset begin` hands out: the challenge for the user to sign and the token that binds it.
public struct ResetChallenge: Sendable {
    public let backupId: BackupAccountID
    /// The 32 raw challenge bytes.
    public let challenge: [UInt8]
    /// The opaque single-use token (``ResetToken``); shown once, never logged or audited.
    public let token: SecretBytes
    /// Unix seconds after which the token is refused with `token_expired`.
    public let expiresAt: Int64

    public init(backupId: BackupAccountID, challenge: [UInt8], token: SecretBytes, expiresAt: Int64) {
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
public struct ResetResult: Sendable, Equatable {
    public let backupId: String
    /// Always true on success: metadata, blob, lookup rows and sub-org refs are gone.
    public let wiped: Bool
    public let lookupRowsRemoved: Int
    /// The sub-orgs queued for Turnkey teardown with reason `reset`.
    public let turnkeySubOrgIds: [String]

    public init(backupId: String, wiped: Bool, lookupRowsRemoved: Int, turnkeySubOrgIds: [String]) {
        self.backupId = backupId
        self.wiped = wiped
        self.lookupRowsRemoved = lookupRowsRemoved
        self.turnkeySubOrgIds = turnkeySubOrgIds
    }
}

/// A `reset complete` request that passed every check but single use (see ``ResetService/preflight``).
public struct ResetPlan: Sendable, Equatable {
    /// The backup the token resets.
    public let backupId: String
    let tokenHash: String
    let expected: BackupAccountID?
}

/// Named points of `reset complete`, reported to an observer as they are passed.
///
/// The executable uses them, in debug builds only, to kill itself at a chosen point for the
/// crash-atomicity test; production code ignores them.
public enum ResetCheckpoint: String, Sendable, CaseIterable {
    /// Every check passed outside the transaction; nothing written yet.
    case checked
    /// Inside the write transaction, the challenge re-read and the signature re-verified.
    case verified
    /// Inside the transaction, everything deleted and queued, not yet committed.
    case wiped
    /// The transaction committed.
    case committed
}
