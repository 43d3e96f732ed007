import Access
import BackupModel
import Cleanup
import ConsoleStore
import Inspect
import Recovery

/// `reset walkthrough` starts here: the caller must be allowed to begin and complete a reset
/// (support); the answer names the tenant and operator for the prompts and the ticket.
public struct ResetWalkthroughOperation: ConsoleOperation {
    public static let name = "reset.walkthrough"

    public init() {}

    public struct Output: Codable, Sendable, Equatable {
        public var tenant: String
        public var `operator`: String

        public init(tenant: String, operator name: String) {
            self.tenant = tenant
            self.operator = name
        }
    }

    public func run(_ context: any OperationContext) async throws(ConsoleError) -> Output {
        let session = try await context.session()
        try await session.require(.resetBegin)
        try await session.require(.resetComplete)
        return Output(tenant: session.tenantName.rawValue, operator: session.operatorName.rawValue)
    }
}

/// The walkthrough's `find` step: the backup a Backup Account ID or factor names, with what a
/// reset would wipe and keep (the lookup service's rules; audited `reset.walkthrough.review`).
public struct ResetReviewOperation: ConsoleOperation {
    public static let name = "reset.review"
    public var query: String

    public init(query: String) { self.query = query }

    public func run(_ context: any OperationContext) async throws(ConsoleError) -> WalkthroughReview {
        let store = try await context.store()
        return try await ResetReviewer(store: store, finder: LookupFinder(store: store)).review(
            query, session: try context.session())
    }
}

/// The walkthrough's step 4: sends the break-glass-stamped teardown bodies through the cleanup
/// service, which journals each first. Submitting is a cleaner's action: for a caller below
/// that role nothing is sent and the answer says so (the sub-orgs stay queued for `cleanup`).
public struct ResetTeardownOperation: ConsoleOperation {
    public static let name = "reset.teardown"
    public var items: [Item]

    public struct Item: Codable, Sendable, Equatable {
        public var subOrgId: String
        /// The exact body the stamp covers.
        public var body: String
        public var stamp: String

        public init(subOrgId: String, body: String, stamp: String) {
            self.subOrgId = subOrgId
            self.body = body
            self.stamp = stamp
        }
    }

    public init(items: [Item]) { self.items = items }

    public struct Output: Codable, Sendable, Equatable {
        /// False when the caller may not submit (below cleaner): nothing was sent.
        public var permitted: Bool
        public var outcomes: [Outcome]

        public init(permitted: Bool, outcomes: [Outcome]) {
            self.permitted = permitted
            self.outcomes = outcomes
        }
    }

    /// One sub-org: Turnkey's outcome, or why it was not sent.
    public struct Outcome: Codable, Sendable, Equatable {
        public var subOrgId: String
        public var outcome: String?
        public var notSent: String?

        public init(subOrgId: String, outcome: String?, notSent: String?) {
            self.subOrgId = subOrgId
            self.outcome = outcome
            self.notSent = notSent
        }
    }

    public func run(_ context: any OperationContext) async throws(ConsoleError) -> Output {
        let session = try await context.session()
        guard session.role >= Permission.cleanupTeardown.minimumRole else {
            return Output(permitted: false, outcomes: [])
        }
        let service = try await context.cleanupService(session)
        var outcomes: [Outcome] = []
        for item in items {
            do {
                let result = try await service.submit(session: session, body: Array(item.body.utf8), stamp: item.stamp)
                outcomes.append(Outcome(subOrgId: item.subOrgId, outcome: result.outcome, notSent: nil))
            } catch {
                outcomes.append(Outcome(subOrgId: item.subOrgId, outcome: nil, notSent: error.message))
            }
        }
        return Output(permitted: true, outcomes: outcomes)
    }
}

/// The walkthrough's services through the service layer: the same operations in-process and
/// against `backupctl serve`.
public struct ConsoleResetBackend: ResetBackend {
    let api: any ConsoleAPI
    let caller: Caller

    public init(api: any ConsoleAPI, caller: Caller) {
        self.api = api
        self.caller = caller
    }

    public func review(_ query: String) async throws(ConsoleError) -> WalkthroughReview {
        try await api.perform(ResetReviewOperation(query: query), as: caller)
    }

    public func begin(backupAccountId: String) async throws(ConsoleError) -> ResetChallenge {
        try await api.perform(ResetBeginOperation(backupAccountId: backupAccountId), as: caller).resetChallenge()
    }

    public func complete(token: SecretBytes, signature: String, backupAccountId: String) async throws(ConsoleError)
        -> ResetResult
    {
        try await api.perform(
            ResetCompleteOperation(token: token, signature: signature, backupAccountId: backupAccountId), as: caller)
    }
}

/// The walkthrough's "find" step on the lookup service: the same rules as `lookup`, audited
/// the same way (`unauthorized_factor` and `dangling_lookup` are refusals, not hits).
public struct LookupFinder: BackupFinder {
    let store: any ConsoleStore

    public init(store: any ConsoleStore) { self.store = store }

    public func find(_ query: String, session: Session) async throws(ConsoleError) -> BackupRecord {
        let result = try await LookupService(store: store).lookup(try LookupQuery(text: query), session: session)
        guard let record = try await store.backup(tenant: session.tenantName, id: result.backupId) else {
            throw .notFound("Backup \(result.backupId) does not exist in tenant \(session.tenantName).")
        }
        return record
    }
}
