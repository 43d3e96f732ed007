import BackupModel
import Foundation
import Synchronization

/// A store whose rules are the shared ones: every requirement of ``ConsoleStore``,
/// ``LiveTenantStore``, ``CleanupJournalStore``, ``AuditCheckpointStore``,
/// ``CleanupQueueStore`` and ``SandboxStore`` is implemented once, in extensions of this protocol, over ``driver``
/// (the model is Hummingbird's `PersistDriver`: a few requirements, every rule above them).
///
/// A backend conforms by giving its driver, its clock and its checkpoints; it overrides a
/// requirement only where its own way is genuinely different and hot (a raw cursor lookup,
/// `COPY`, `SKIP LOCKED`), by implementing it on the concrete type.
public protocol SQLRuleStore: CleanupQueueStore, SandboxStore {
    associatedtype Driver: SQLDriver

    var driver: Driver { get }
    /// Unix milliseconds of audit entries, injected so tests control audit times.
    var clock: @Sendable () -> Int64 { get }
    /// Named points inside the rules' transactions (crash tests).
    var checkpoints: StoreCheckpoints { get }
    /// The queue that commits concurrent audit appends together (one per opened store).
    var auditGroup: AuditGroupCommit { get }
    /// One group commit of ``auditGroup``: `drafts` chained (``AuditLink``) and committed in a
    /// transaction of their own, reaching ``StoreCheckpoint/auditGroup`` before the commit. The
    /// shared rule's is the default; a backend gives its own where the statements per entry
    /// are the cost (SQLite's, in one synchronous call on its writer).
    func commitAuditGroup(_ drafts: [AuditDraft]) async throws(ConsoleError) -> [AuditEntry]
}

/// A named point inside a store transaction, for crash tests: the same point on every backend.
public enum StoreCheckpoint: String, Sendable, CaseIterable {
    /// In ``LiveTenantStore/recordServiceReset(tenant:tokenHash:backupId:subOrgIds:now:audit:)``:
    /// the copy deleted and the sub-orgs queued, not committed (the reset's `wiped` checkpoint).
    case resetWiped = "wiped"
    /// In ``ConsoleStore/appendAudit(_:)``: a group of audit entries written, not committed
    /// (no caller of the group has been answered).
    case auditGroup = "audit-group"
}

/// What happens at each ``StoreCheckpoint``: nothing, unless a debug build was asked to crash
/// (`BACKUPCTL_CRASH_AT`) or a test hooks in.
public struct StoreCheckpoints: Sendable {
    private let hook: @Sendable (StoreCheckpoint) -> Void

    public init(_ hook: @escaping @Sendable (StoreCheckpoint) -> Void) { self.hook = hook }

    /// No checkpoint does anything.
    public static let none = StoreCheckpoints { _ in }

    /// A debug build `_exit(137)`s at the point named `crashAt` (release builds ignore it);
    /// `NAME:N` crashes on its N-th reach (`audit-group:3`: the third group commit).
    public static func crash(at name: String?) -> StoreCheckpoints {
        #if DEBUG
            guard let name else { return .none }
            let parts = name.split(separator: ":", maxSplits: 1).map(String.init)
            guard let target = StoreCheckpoint(rawValue: parts[0]) else { return .none }
            let nth = parts.count == 2 ? max(Int(parts[1]) ?? 1, 1) : 1
            let reached = Reaches()
            return StoreCheckpoints { point in
                if point == target, reached.next() == nth { _exit(137) }
            }
        #else
            return .none
        #endif
    }

    public func reach(_ point: StoreCheckpoint) { hook(point) }

    /// Counts a checkpoint's reaches.
    private final class Reaches: Sendable {
        private let count = Mutex(0)

        func next() -> Int {
            count.withLock { count in
                count += 1
                return count
            }
        }
    }
}

extension SQLRuleStore {
    var dialect: SQLDialect { driver.dialect }

    /// A page size between 1 and 100,000.
    public static func clampBatch(_ size: Int) -> Int { min(max(size, 1), 100_000) }

    /// A write transaction that appends `audit` (when given) as its last statement.
    func audited<T: Sendable>(
        _ what: @autoclosure () -> String, _ audit: AuditDraft?, _ body: (Driver.Session) async throws -> T
    ) async throws(ConsoleError) -> T {
        try await driver.transaction(what()) { session in
            let result = try await body(session)
            if let audit { _ = try await appendChained(audit, session) }
            return result
        }
    }
}
