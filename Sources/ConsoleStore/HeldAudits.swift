import BackupModel
import Foundation
import GRDB

/// Audit entries of reads (a lookup, a `show`) waiting for one shared write transaction.
///
/// A 100,000-line script of lookups spent half its time committing one audit entry each. When
/// the caller holds read audits (``SQLiteConsoleStore/holdReadAudits(_:)``), they wait here and
/// the next write transaction — ``SQLiteConsoleStore/flushAudit()``, or any mutation — writes
/// them first, in the order they happened, each with the time it happened. The caller must not
/// show what such a read returned before `flushAudit()` succeeds: an operator never sees a
/// backup the audit log does not record.
final class HeldAudits: @unchecked Sendable {
    private let lock = NSLock()
    private var holding = false
    private var drafts: [(draft: AuditDraft, at: Int64)] = []

    /// Holds `draft` (with its time) and returns `true`, or returns `false` when not holding.
    func hold(_ draft: AuditDraft, at: Int64) -> Bool {
        lock.withLock {
            guard holding else { return false }
            drafts.append((draft, at))
            return true
        }
    }

    func setHolding(_ on: Bool) { lock.withLock { holding = on } }

    var count: Int { lock.withLock { drafts.count } }

    /// The entries held so far; a transaction writes them, then ``committed(_:)`` drops them.
    var pending: [(draft: AuditDraft, at: Int64)] { lock.withLock { drafts } }

    /// Drops the first `count` entries once their transaction committed (later ones stay).
    func committed(_ count: Int) {
        lock.withLock { drafts.removeFirst(min(count, drafts.count)) }
    }
}

extension SQLiteConsoleStore {
    /// Writes the held read audits at the start of a write transaction; returns how many, for
    /// ``HeldAudits/committed(_:)`` once the transaction commits. A rollback keeps them held.
    func insertHeldAudits(_ db: Database) throws -> Int {
        let pending = heldAudits.pending
        for entry in pending { _ = try insertAudit(entry.draft, at: entry.at, db) }
        return pending.count
    }

    /// Read audits (``appendReadAudit(_:)``) wait for one shared transaction while `hold` is on.
    public func holdReadAudits(_ hold: Bool) { heldAudits.setHolding(hold) }

    /// How many read audits wait for ``flushAudit()``.
    public var heldAuditCount: Int { heldAudits.count }

    /// Appends the audit entry of a read: at once, or held (see ``holdReadAudits(_:)``).
    public func appendReadAudit(_ draft: AuditDraft) throws(ConsoleError) {
        if heldAudits.hold(draft, at: clock()) { return }
        try appendAudit(draft)
    }

    /// Writes the held read audits in one transaction; a no-op when none wait.
    public func flushAudit() throws(ConsoleError) {
        guard heldAudits.count > 0 else { return }
        try write("writing the audit entries of the last reads") { _ in }
    }
}
