import BackupModel
import Foundation

/// The knobs of `cleanup run`.
public struct CleanupRunOptions: Sendable, Equatable {
    /// Delete for real; otherwise a dry run that only reports.
    public var execute: Bool
    /// Refuse a run that would delete more than this (`--max`, default 100).
    public var max: Int
    /// Deletions in flight at once (`--concurrency`).
    public var concurrency: Int
    /// Overrides the tenant's grace period (`--grace`), seconds.
    public var graceSeconds: Int?
    /// Bound on `get_activity` polls for a PENDING deletion.
    public var maxPolls: Int
    /// How many passes one sub-org may take when its deletion keeps failing retryably.
    public var maxPasses: Int
    /// With `execute`: queue the eligible sub-orgs for the cleanup workers (`backupctl worker`,
    /// `serve --workers N`) instead of deleting them in this run (`--queue`).
    public var queue: Bool

    public init(
        execute: Bool = false, max: Int = 100, concurrency: Int = 4, graceSeconds: Int? = nil, maxPolls: Int = 5,
        maxPasses: Int = 6, queue: Bool = false
    ) {
        self.queue = queue
        self.maxPasses = Swift.max(1, maxPasses)
        self.execute = execute
        self.max = max
        self.concurrency = concurrency
        self.graceSeconds = graceSeconds
        self.maxPolls = maxPolls
    }
}

/// Shared by the workers of one run: the stop request, the outage marker, and how long
/// Turnkey asked an item's next pass to wait.
final class RunFlags: @unchecked Sendable {
    private let lock = NSLock()
    // Guarded by `lock`.
    private var outage: String?
    private var waits: [String: Int64] = [:]

    func markOutage(_ message: String) { lock.withLock { if outage == nil { outage = message } } }
    var outageMessage: String? { lock.withLock { outage } }

    private var refusal: ConsoleError?
    /// The operator lost the right to run cleanup during the run: no new item starts.
    func markRefused(_ error: ConsoleError) { lock.withLock { if refusal == nil { refusal = error } } }
    var refused: ConsoleError? { lock.withLock { refusal } }

    /// Turnkey's `Retry-After` for `subOrgId`'s failed attempt, milliseconds.
    func noteRetryAfter(_ subOrgId: String, millis: Int64) { lock.withLock { waits[subOrgId] = millis } }

    /// The wait noted for `subOrgId`, once (0 without one).
    func takeRetryAfter(_ subOrgId: String) -> Int64 { lock.withLock { waits.removeValue(forKey: subOrgId) ?? 0 } }
}
