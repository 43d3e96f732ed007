import CoreMetrics
import Foundation
import Prometheus

/// The server's Prometheus metrics, through swift-metrics on a registry of its own (one per
/// server, so tests can run several in one process; `GET /metrics` emits it).
final class ServerMetrics: @unchecked Sendable {
    let registry = PrometheusCollectorRegistry()
    let factory: PrometheusMetricsFactory
    private let failedAuth: [String: CoreMetrics.Counter]
    /// Requests of valid operators answered 429 (`--operator-rate`, `--operator-denials`): not
    /// failed sign-ins, so an alert on those does not fire for a busy script.
    private let operatorLimited: [String: CoreMetrics.Counter]
    private let auditAppends: CoreMetrics.Counter
    private let cleanupDone: CoreMetrics.Gauge
    private let cleanupTotal: CoreMetrics.Gauge
    private let openConnections: CoreMetrics.Gauge
    private let walBytes: CoreMetrics.Gauge

    private let lock = NSLock()
    // Guarded by `lock`: the audit sequence number counted up to.
    private var auditSeqSeen: Int64?
    // Guarded by `lock`: the request counter and timer of each operation and status, made once
    // (operation names are the registry's or a fixed route name, so this stays small).
    private var requestHandles: [RequestKey: (CoreMetrics.Counter, CoreMetrics.Timer)] = [:]

    /// Whether `name` is the cleanup run, whose streamed progress feeds the cleanup gauges
    /// (`cleanup.run`, however its words are joined).
    static func isCleanupRun(_ name: String) -> Bool {
        name.lowercased().filter(\.isLetter) == "cleanuprun"
    }

    init() {
        let factory = PrometheusMetricsFactory(registry: registry)
        self.factory = factory
        failedAuth = Dictionary(
            uniqueKeysWithValues: ["missing_token", "invalid_token", "rate_limited"].map {
                (
                    $0,
                    CoreMetrics.Counter(
                        label: "backupctl_auth_failures_total", dimensions: [("reason", $0)], factory: factory)
                )
            })
        operatorLimited = Dictionary(
            uniqueKeysWithValues: ["operator_rate", "operator_denials"].map {
                (
                    $0,
                    CoreMetrics.Counter(
                        label: "backupctl_operator_rate_limited_total", dimensions: [("scope", $0)], factory: factory)
                )
            })
        auditAppends = CoreMetrics.Counter(label: "backupctl_audit_appends_total", factory: factory)
        cleanupDone = CoreMetrics.Gauge(label: "backupctl_cleanup_progress_done", factory: factory)
        cleanupTotal = CoreMetrics.Gauge(label: "backupctl_cleanup_progress_total", factory: factory)
        openConnections = CoreMetrics.Gauge(label: "backupctl_connections_open", factory: factory)
        walBytes = CoreMetrics.Gauge(label: "backupctl_sqlite_wal_bytes", factory: factory)
    }

    /// One answered request: `op` is the operation's name or the route (`healthz`, `unknown`).
    func request(op: String, status: Int, nanoseconds: Int64) {
        let key = RequestKey(op: op, status: status)
        let handles =
            lock.withLock { requestHandles[key] }
            ?? {
                let dimensions = [("op", op), ("status", String(status))]
                let made = (
                    CoreMetrics.Counter(label: "backupctl_requests_total", dimensions: dimensions, factory: factory),
                    CoreMetrics.Timer(
                        label: "backupctl_request_duration_seconds", dimensions: dimensions, factory: factory)
                )
                lock.withLock { requestHandles[key] = made }
                return made
            }()
        handles.0.increment()
        handles.1.recordNanoseconds(nanoseconds)
    }

    private struct RequestKey: Hashable {
        var op: String
        var status: Int
    }

    func failedAuthentication(reason: String) {
        failedAuth[reason]?.increment()
    }

    /// A valid operator's request refused for its rate or its refusals (`scope`).
    func limitedOperator(scope: String) {
        operatorLimited[scope]?.increment()
    }

    func cleanupProgress(done: Int, total: Int?) {
        cleanupDone.record(done)
        if let total { cleanupTotal.record(total) }
    }

    /// Counts the audit entries appended since the last look: `head` is the newest sequence
    /// number. The first look sets the baseline (entries from before the server started do not count).
    func auditHead(_ head: Int64) {
        let added: Int64 = lock.withLock {
            guard let seen = auditSeqSeen else {
                auditSeqSeen = head
                return 0
            }
            guard head > seen else { return 0 }
            auditSeqSeen = head
            return head - seen
        }
        if added > 0 { auditAppends.increment(by: added) }
    }

    // Guarded by `lock`: the connection guard's closures counted so far, by reason.
    private var closedSeen: [String: Int] = [:]
    private var closedCounters: [String: CoreMetrics.Counter] = [:]

    /// The connection guard's state at a scrape: open connections, and connections it closed by
    /// reason (`header_timeout`, `body_timeout`, `idle_timeout`, `write_timeout`, `server_cap`,
    /// `address_cap`, `address_refused`) as `backupctl_connections_closed_total{reason}`.
    func connections(open: Int, closed: [String: Int]) {
        let increments: [(CoreMetrics.Counter, Int)] = lock.withLock {
            openConnections.record(open)
            var out: [(CoreMetrics.Counter, Int)] = []
            for (reason, total) in closed where total > closedSeen[reason, default: 0] {
                let counter =
                    closedCounters[reason]
                    ?? CoreMetrics.Counter(
                        label: "backupctl_connections_closed_total", dimensions: [("reason", reason)], factory: factory)
                closedCounters[reason] = counter
                out.append((counter, total - closedSeen[reason, default: 0]))
                closedSeen[reason] = total
            }
            return out
        }
        for (counter, added) in increments { counter.increment(by: added) }
    }

    /// The SQLite store's WAL file at a scrape, in bytes (`backupctl_sqlite_wal_bytes`): the
    /// background checkpoints keep it to about half a second of commits, so a WAL that keeps
    /// growing means something holds it (a reader of another process that never ends).
    func sqliteWAL(bytes: Int) { walBytes.record(bytes) }

    /// The Prometheus text exposition.
    func exposition() -> String { registry.emitToString() }
}
