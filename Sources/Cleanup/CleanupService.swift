import Access
import BackupCrypto
import BackupModel
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
    public let store: any CleanupJournalStore
    public let connection: TurnkeyConnection
    public let timing: TurnkeyTiming
    public let random: any RandomSource
    public let logger: Logger
    /// Run-wide retry budget capacity (see ``TurnkeyRetryBudget``).
    public var retryBudgetCapacity: Double = 20

    public init(
        store: any CleanupJournalStore, connection: TurnkeyConnection, timing: TurnkeyTiming = .system,
        random: any RandomSource = SystemRandom(), logger: Logger = Logger(label: "backupctl.cleanup")
    ) {
        self.store = store
        self.connection = connection
        self.timing = timing
        self.random = random
        self.logger = logger
    }

    var nowSeconds: Int64 { timing.clock.millis() / 1000 }

    /// A client for one command: the tenant's retry policy and RPS, one fresh retry budget.
    func client(_ session: Session) -> TurnkeyClient {
        let policy = session.tenant.policy
        var log = logger
        log[metadataKey: "tenant"] = "\(session.tenantName)"
        log[metadataKey: "operator"] = "\(session.operatorName)"
        return TurnkeyClient(
            baseURL: connection.baseURL, transport: connection.transport,
            policy: TurnkeyRetryPolicy(capMillis: Int64(policy.retryCapMillis), attempts: policy.retryAttempts),
            rps: Double(max(1, policy.turnkeyRPS)), budget: TurnkeyRetryBudget(capacity: retryBudgetCapacity),
            timing: timing, random: random, logger: log)
    }

    /// `cleanup status`: counts per journal state.
    public func status(session: Session) throws(ConsoleError) -> StatusReport {
        try session.require(.cleanupStatus)
        let counts = try store.cleanupCounts(tenant: session.tenantName)
        let pending = try store.cleanupItems(tenant: session.tenantName, states: [.pending])
        var stamped = 0
        for item in try store.cleanupItems(tenant: session.tenantName, states: [.pending, .needsUser, .failed])
        where try store.stampedTeardown(tenant: session.tenantName, subOrgId: item.subOrgId) != nil {
            stamped += 1
        }
        return StatusReport(
            pending: counts[.pending] ?? 0, deleted: counts[.deleted] ?? 0, alreadyGone: counts[.alreadyGone] ?? 0,
            failed: counts[.failed] ?? 0, needsUser: counts[.needsUser] ?? 0, skipped: counts[.skipped] ?? 0,
            stamped: stamped, oldestPendingFirstSeenAt: pending.map(\.firstSeenAt).min())
    }

    /// `cleanup ingest-log FILE`: queues every `remove_factor.turnkey_suborg_orphaned suborg_id=<uuid>`.
    ///
    /// Re-ingesting the same log is harmless: known ids keep their earliest first-seen time.
    public func ingestLog(session: Session, text: String) throws(ConsoleError) -> IngestReport {
        try session.require(.cleanupIngestLog)
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
        let new = try store.enqueueCleanup(
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
