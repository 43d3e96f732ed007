import BackupModel
import Turnkey

/// What the walkthrough shows before anything happens: what goes and what stays.
public struct WalkthroughReview: Sendable, Equatable, Codable {
    public var backupId: String
    /// One line per main factor, e.g. `PASSKEY "iCloud Keychain" (enrolled 2026-05-01)`.
    public var factors: [String]
    /// One line per sync factor (a device's key).
    public var devices: [String]
    public var turnkeySubOrgIds: [String]
    public var lookupRows: Int
    public var sealedBlobBytes: Int?
    /// What the reset does not touch.
    public var notWiped: [String]

    public init(
        backupId: String, factors: [String], devices: [String], turnkeySubOrgIds: [String], lookupRows: Int,
        sealedBlobBytes: Int?, notWiped: [String]
    ) {
        self.backupId = backupId
        self.factors = factors
        self.devices = devices
        self.turnkeySubOrgIds = turnkeySubOrgIds
        self.lookupRows = lookupRows
        self.sealedBlobBytes = sealedBlobBytes
        self.notWiped = notWiped
    }
}

/// One sub-org's break-glass teardown request: the body and, when available, its stamp.
public struct TeardownItem: Sendable, Equatable {
    public var subOrgId: String
    public var body: TurnkeyActivityBody
    /// The `X-Stamp` for exactly `body` (made locally in present-user mode, pasted otherwise).
    public var stamp: String?
}

/// How the user proved they hold the Root Key.
public enum ProofMode: String, Sendable {
    /// Elsewhere: signed with `backupctl recovery sign` and read the signature out.
    case remote
    /// At the console: typed the Root Key into a hidden prompt; the console signed.
    case present
}

/// The ticket summary at the end.
public struct WalkthroughSummary: Sendable, Equatable {
    public var tenant: String
    public var operatorName: String
    public var backupId: String
    public var proof: ProofMode
    public var result: ResetResult
    public var teardown: [TeardownItem]
    /// Honest status of the Turnkey teardown.
    public var teardownStatus: String
    public var nextSteps: [String]
}

/// What the terminal should show (and ask) next.
public enum WalkthroughPrompt: Sendable, Equatable {
    /// Ask for a Backup Account ID or a factor.
    case askIdentity
    /// Show the review; ask whether to go on.
    case review(WalkthroughReview)
    /// Show the challenge; ask for a signature (remote) or the Root Key (present).
    case proof(backupId: String, challengeBase64: String, expiresAt: String)
    /// Ask the operator to type the tenant name.
    case confirm(tenant: String, backupId: String)
    /// Confirmed: the next input wipes.
    case readyToWipe(backupId: String)
    /// Wiped. Show the teardown bodies; in remote mode ask for stamps (or skip).
    case teardown(result: ResetResult, items: [TeardownItem], needStamps: Bool)
    case summary(WalkthroughSummary)
    case aborted(step: String)
}
