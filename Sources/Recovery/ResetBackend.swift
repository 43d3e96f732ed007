import Access
import BackupModel
import ConsoleStore

/// What the walkthrough asks of the services behind it: find and review the backup, begin the
/// reset, complete it.
///
/// ``ResetWalkthrough`` keeps the conversation (steps, proof, confirmation, stamps) and calls
/// only this, so the same state machine runs in-process (``LocalResetBackend``) and in a
/// console connected to `backupctl serve` (the service layer's operations).
public protocol ResetBackend: Sendable {
    /// The `find` step: the backup `query` names (a Backup Account ID or a factor), reviewed.
    /// - Throws: ``ConsoleError`` `not_found`, or an `invalid_*` code naming the malformed query.
    func review(_ query: String) async throws(ConsoleError) -> WalkthroughReview

    /// `reset begin` for the reviewed backup: its challenge and single-use token.
    func begin(backupAccountId: String) async throws(ConsoleError) -> ResetChallenge

    /// `reset complete`: sends the proof and, on success only, wipes the console's copy.
    func complete(token: SecretBytes, signature: String, backupAccountId: String) async throws(ConsoleError)
        -> ResetResult
}

/// The `find` step on a store: the finder's rules, audited as `reset.walkthrough.review`.
public struct ResetReviewer: Sendable {
    let store: any ConsoleStore
    let finder: any BackupFinder

    public init(store: any ConsoleStore, finder: any BackupFinder) {
        self.store = store
        self.finder = finder
    }

    /// - Throws: `permission_denied` unless the session may run a reset (support), then the
    ///   finder's refusals.
    public func review(_ query: String, session: Session) async throws(ConsoleError) -> WalkthroughReview {
        try await session.require(.resetBegin)
        let record = try await finder.find(query, session: session)
        try await store.appendAudit(session.audit("reset.walkthrough.review", target: record.backupId))
        let rows = try await store.lookupRows(tenant: session.tenantName, backupId: record.backupId)
        return WalkthroughReview(
            backupId: record.backupId, factors: record.metadata.factors.map(ResetWalkthrough.describe),
            devices: record.metadata.syncFactors.map(ResetWalkthrough.describe),
            turnkeySubOrgIds: record.metadata.turnkeySubOrgIds, lookupRows: rows.count,
            sealedBlobBytes: record.blobSize,
            notWiped: [
                "the Root Key: it stays on the user's device, and the Backup Account ID stays the same",
                "the Turnkey sub-orgs themselves: they are queued for teardown, not deleted by the wipe",
                "the audit log of this console",
            ])
    }
}

/// The walkthrough's services in this process: the store, the session and its reset service.
public struct LocalResetBackend: ResetBackend {
    let reviewer: ResetReviewer
    let service: ResetService
    let session: Session

    public init(store: any ConsoleStore, session: Session, service: ResetService, finder: any BackupFinder) {
        reviewer = ResetReviewer(store: store, finder: finder)
        self.service = service
        self.session = session
    }

    public func review(_ query: String) async throws(ConsoleError) -> WalkthroughReview {
        try await reviewer.review(query, session: session)
    }

    public func begin(backupAccountId: String) async throws(ConsoleError) -> ResetChallenge {
        try await service.begin(backupAccountId: backupAccountId, session: session)
    }

    public func complete(token: SecretBytes, signature: String, backupAccountId: String) async throws(ConsoleError)
        -> ResetResult
    {
        try await service.complete(
            token: token, signature: signature, backupAccountId: backupAccountId, session: session)
    }
}
