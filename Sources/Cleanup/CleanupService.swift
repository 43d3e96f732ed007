import Access
import BackupCrypto
import BackupModel
import BackupService
import ConsoleStore
import Foundation
import Logging
import Turnkey

/// Finds and deletes the Turnkey sub-organizations no backup references any more (facts §7).
///
/// Holds the store, the tenant's Turnkey connection and the injected clock, randomness and
/// logger; every entry point takes a ``Session`` and checks its permission first. The journal
/// (`cleanup_items`) is the source of truth between runs: first-seen times, the exact body of
/// each deletion, attempts and outcomes.
public struct CleanupService: Sendable {
    public let store: any LiveTenantStore
    public let connection: TurnkeyConnection
    /// The tenant's Backup Service, for the `/v1/backup/status` proof; `nil` when it has none.
    public let backupService: BackupServiceClient?
    public let timing: TurnkeyTiming
    public let random: any RandomSource
    public let logger: Logger
    /// Run-wide retry budget capacity (see ``TurnkeyRetryBudget``).
    public var retryBudgetCapacity: Double = 20
    /// Told when a deletion passes a ``CleanupCheckpoint``, with the sub-org (crash tests).
    public var checkpoint: @Sendable (CleanupCheckpoint, String) -> Void = { _, _ in }

    public init(
        store: any LiveTenantStore, connection: TurnkeyConnection, backupService: BackupServiceClient? = nil,
        timing: TurnkeyTiming = .system, random: any RandomSource = SystemRandom(),
        logger: Logger = Logger(label: "backupctl.cleanup")
    ) {
        self.store = store
        self.backupService = backupService
        self.connection = connection
        self.timing = timing
        self.random = random
        self.logger = logger
    }

    var nowSeconds: Int64 { timing.clock.millis() / 1000 }

    /// A client for one command: the tenant's retry policy and RPS, one fresh retry budget, and
    /// the tenant's rate shared with other workers when `sharedRate` is given.
    /// - Parameter stop: once it says so, the client's waits (for a rate slot, a back-off, a
    ///   `Retry-After`) end at once and its call stops as cancelled; nothing more is sent.
    func client(
        _ session: Session, budget: TurnkeyRetryBudget? = nil, sharedRate: TurnkeyRateLimiter.SharedReservation? = nil,
        stop: (@Sendable () -> Bool)? = nil
    ) -> TurnkeyClient {
        let policy = session.tenant.policy
        var log = logger
        log[metadataKey: "tenant"] = "\(session.tenantName)"
        log[metadataKey: "operator"] = "\(session.operatorName)"
        var waits = timing
        if let stop {
            let base = timing
            waits = TurnkeyTiming(clock: base.clock) { millis in
                await Self.wait(Int64(millis), timing: base, unless: stop)
                if stop() { throw CancellationError() }
            }
        }
        return TurnkeyClient(
            baseURL: connection.baseURL, transport: connection.transport,
            policy: TurnkeyRetryPolicy(capMillis: Int64(policy.retryCapMillis), attempts: policy.retryAttempts),
            rps: Double(max(1, policy.turnkeyRPS)), budget: budget ?? TurnkeyRetryBudget(capacity: retryBudgetCapacity),
            timing: waits, random: random, logger: log, sharedRate: sharedRate)
    }

    /// A client for reads of the tenant's sub-orgs (`check --turnkey`): the tenant's RPS and
    /// retry policy with a fresh budget, and the parent org's API key to sign with (a parent may
    /// read its sub-orgs).
    public func reader(_ session: Session) -> (client: TurnkeyClient, signer: TurnkeySigner) {
        (client(session), .apiKey(connection.apiKey))
    }

    /// `cleanup status`: counts per journal state, and the items matching the filters.
    /// - Parameters:
    ///   - states: only items in these states (`nil`: every state).
    ///   - reason: only items queued for this reason.
    ///   - limit: at most this many items, oldest first-seen first.
    public func status(
        session: Session, states: Set<CleanupItemRecord.State>? = nil, reason: String? = nil, limit: Int = 50
    ) async throws(ConsoleError) -> StatusReport {
        try await session.require(.cleanupStatus)
        let counts = try await store.cleanupCounts(tenant: session.tenantName)
        let all = try await store.cleanupItems(tenant: session.tenantName, states: nil)
        var stamped = 0
        let open: Set<CleanupItemRecord.State> = [.pending, .needsUser, .failed]
        for item in all where open.contains(item.state) {
            if try await store.stampedTeardown(tenant: session.tenantName, subOrgId: item.subOrgId) != nil {
                stamped += 1
            }
        }
        let matching = all.filter { item in
            (states?.contains(item.state) ?? true) && (reason.map { item.reason == $0 } ?? true)
        }.sorted { ($0.firstSeenAt, $0.subOrgId) < ($1.firstSeenAt, $1.subOrgId) }
        return StatusReport(
            pending: counts[.pending] ?? 0, deleted: counts[.deleted] ?? 0, alreadyGone: counts[.alreadyGone] ?? 0,
            failed: counts[.failed] ?? 0, needsUser: counts[.needsUser] ?? 0, skipped: counts[.skipped] ?? 0,
            stamped: stamped,
            oldestPendingFirstSeenAt: all.filter { $0.state == .pending }.map(\.firstSeenAt).min(),
            matching: matching.count,
            items: matching.prefix(max(0, limit)).map {
                StatusReport.Item(
                    subOrgId: $0.subOrgId, state: $0.state.rawValue, reason: $0.reason, firstSeenAt: $0.firstSeenAt,
                    attempts: $0.attempts, lastError: $0.lastError, lastBackupId: $0.lastBackupId)
            })
    }

    /// `cleanup ingest-log FILE`: queues every `remove_factor.turnkey_suborg_orphaned suborg_id=<uuid>`.
    ///
    /// Re-ingesting the same log is harmless: known ids keep their earliest first-seen time.
    public func ingestLog(session: Session, text: String) async throws(ConsoleError) -> IngestReport {
        try await session.require(.cleanupIngestLog)
        var ids: [String] = []
        var lines = 0
        for line in text.split(whereSeparator: \.isNewline) {
            lines += 1
            guard line.contains("remove_factor.turnkey_suborg_orphaned"), let range = line.range(of: "suborg_id=")
            else { continue }
            let id = line[range.upperBound...].prefix { $0.isHexDigit || $0 == "-" }.lowercased()
            if Self.isUUID(id) { ids.append(id) }
        }
        let now = nowSeconds
        let unique = Array(Set(ids)).sorted()
        let new = try await store.enqueueCleanup(
            tenant: session.tenantName,
            unique.map { CleanupItemRecord(subOrgId: $0, reason: "service_log", firstSeenAt: now, updatedAt: now) },
            audit: session.audit("cleanup.ingest_log", details: ["found": "\(unique.count)"]))
        return IngestReport(lines: lines, found: unique.count, new: new)
    }

    static func isUUID(_ text: String) -> Bool {
        let parts = text.split(separator: "-", omittingEmptySubsequences: false)
        return parts.map(\.count) == [8, 4, 4, 4, 12] && parts.allSatisfy { $0.allSatisfy(\.isHexDigit) }
    }
}

/// Points in one sub-org's deletion that crash tests stop a process at.
public enum CleanupCheckpoint: String, Sendable {
    /// The body is journaled and not yet sent.
    case journaled = "cleanup.journaled"
}
