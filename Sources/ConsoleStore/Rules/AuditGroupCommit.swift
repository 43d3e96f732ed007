import BackupModel
import Dispatch
import Synchronization

/// Group commit of audit appends: the drafts of concurrent callers are chained and committed in
/// one transaction, and each caller is resumed after the commit that holds its entry.
///
/// Every read is audited, so the append is the hot path of a busy server; one transaction per
/// entry pays a commit (and, on SQLite, the single writer's turn) per read. Here the first
/// caller to find no transaction running starts a drain: it takes what is queued (at most
/// ``maxGroup``), commits it, settles those receipts, and goes on while anything is queued —
/// so the entries that arrive during one commit share the next. An idle store still commits a
/// lone entry at once: nothing waits for a group to fill.
///
/// The invariant is unchanged: a receipt settles only after its entry committed (or its
/// transaction failed), so no caller shows a read before its entry is durable, and the entries
/// of one group are chained in the order they were queued.
///
/// The drain runs on a queue of its own (``executor``), never where its callers run: a commit
/// can wait for the disk (a WAL write behind the kernel's writeback), and on a server's event
/// loop that wait stalled every connection of the loop, reads that need no commit included,
/// with a core left idle. One exception, with ``leadsInline``: a caller of
/// ``append(_:commit:)`` that finds no transaction running commits its own group in its own
/// task (a lone entry then pays no hop to another thread and back), and hands whatever queued
/// meanwhile to the drain: nobody commits more than one group for others.
public final class AuditGroupCommit: Sendable {
    /// The most entries one transaction holds.
    public static let maxGroup = 256

    private struct Queued: Sendable {
        let draft: AuditDraft
        let receipt: AuditReceipt
    }

    private struct State: Sendable {
        var queue: [Queued] = []
        var draining = false
        var committing = 0
    }

    private let state = Mutex(State())
    /// Where the drain runs: a serial queue of this group's own.
    let executor = DispatchTaskExecutor(queue: DispatchQueue(label: "backupctl.audit-group-commit"))

    /// Whether ``append(_:commit:)``'s caller commits the first group itself. Only for a store
    /// whose commit cannot fail for its caller's sake: a cancelled task must not fail the
    /// entries of the others that share its transaction (SQLite's commit never looks at
    /// cancellation; a PostgreSQL connection lease does).
    let leadsInline: Bool

    public init(leadsInline: Bool = false) { self.leadsInline = leadsInline }

    /// Drafts waiting for the next transaction (not those of the one running).
    public var queued: Int { state.withLock { $0.queue.count } }
    /// Drafts in the transaction running now.
    public var committing: Int { state.withLock { $0.committing } }

    /// Queues `draft` and returns its receipt; `commit` chains and commits a group of drafts in
    /// one transaction and returns their entries in order.
    public func submit(
        _ draft: AuditDraft, commit: @escaping @Sendable ([AuditDraft]) async throws(ConsoleError) -> [AuditEntry]
    ) -> AuditReceipt {
        submit([draft], commit: commit)[0]
    }

    /// Queues `draft` and returns its entry once committed. With ``leadsInline``, when no
    /// transaction is running, the caller commits its group itself and hands what queued
    /// meanwhile to the drain.
    /// - Throws: the transaction's error: the entry is not in the log.
    public func append(
        _ draft: AuditDraft, commit: @escaping @Sendable ([AuditDraft]) async throws(ConsoleError) -> [AuditEntry]
    ) async throws(ConsoleError) -> AuditEntry {
        guard leadsInline else { return try await submit(draft, commit: commit).entry() }
        let receipt = AuditReceipt()
        let lead = state.withLock { state in
            state.queue.append(Queued(draft: draft, receipt: receipt))
            guard !state.draining else { return false }
            state.draining = true
            return true
        }
        if lead {
            _ = await commitNext(commit)
            let more = state.withLock { state in
                if state.queue.isEmpty { state.draining = false }
                return !state.queue.isEmpty
            }
            if more { Task.detached(executorPreference: executor) { await self.drain(commit) } }
        }
        return try await receipt.entry()
    }

    /// Queues `drafts`, in order, and returns their receipts.
    public func submit(
        _ drafts: [AuditDraft], commit: @escaping @Sendable ([AuditDraft]) async throws(ConsoleError) -> [AuditEntry]
    ) -> [AuditReceipt] {
        let receipts = drafts.map { _ in AuditReceipt() }
        let lead = state.withLock { state in
            for (draft, receipt) in zip(drafts, receipts) { state.queue.append(Queued(draft: draft, receipt: receipt)) }
            guard !state.draining, !drafts.isEmpty else { return false }
            state.draining = true
            return true
        }
        // The drain serves every caller: detached, it carries none of the first one's
        // task-locals (the request it answers, a script's deferral) and none of its executor
        // (a server's event loop must not run, nor wait for, the other callers' transactions).
        if lead { Task.detached(executorPreference: executor) { await self.drain(commit) } }
        return receipts
    }

    private func drain(_ commit: @Sendable ([AuditDraft]) async throws(ConsoleError) -> [AuditEntry]) async {
        while await commitNext(commit) {}
    }

    /// Takes the next group (at most ``maxGroup``) off the queue, commits it and settles its
    /// receipts. False when the queue was empty: the drain ends then, under the same lock, so
    /// whoever queues next starts the next one.
    private func commitNext(_ commit: @Sendable ([AuditDraft]) async throws(ConsoleError) -> [AuditEntry]) async
        -> Bool
    {
        let group = state.withLock { state -> [Queued] in
            let taken = Array(state.queue.prefix(Self.maxGroup))
            state.queue.removeFirst(taken.count)
            state.committing = taken.count
            if taken.isEmpty { state.draining = false }
            return taken
        }
        if group.isEmpty { return false }
        do {
            let entries = try await commit(group.map(\.draft))
            for (queued, entry) in zip(group, entries) { queued.receipt.settle(.success(entry)) }
        } catch {
            guard group.count > 1 else {
                group[0].receipt.settle(.failure(error))
                return true
            }
            // One draft the database refuses must not fail its neighbours: each alone.
            for queued in group {
                do throws(ConsoleError) {
                    let entry = try await commit([queued.draft])
                    queued.receipt.settle(entry.first.map { .success($0) } ?? .failure(error))
                } catch {
                    queued.receipt.settle(.failure(error))
                }
            }
        }
        return true
    }
}

/// The outcome of one queued audit entry: settled once, when the transaction that holds it
/// committed (the entry) or failed (the error).
public final class AuditReceipt: Sendable {
    private struct State: Sendable {
        var result: Result<AuditEntry, ConsoleError>?
        var waiters: [CheckedContinuation<Result<AuditEntry, ConsoleError>, Never>] = []
    }

    private let state = Mutex(State())

    init() {}

    func settle(_ result: Result<AuditEntry, ConsoleError>) {
        let waiters = state.withLock { state in
            state.result = result
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume(returning: result) }
    }

    /// The committed entry, once its transaction committed.
    /// - Throws: the transaction's error: the entry is not in the log.
    public func entry() async throws(ConsoleError) -> AuditEntry {
        let result = await withCheckedContinuation {
            (waiter: CheckedContinuation<Result<AuditEntry, ConsoleError>, Never>) in
            let settled = state.withLock { state -> Result<AuditEntry, ConsoleError>? in
                if let result = state.result { return result }
                state.waiters.append(waiter)
                return nil
            }
            if let settled { waiter.resume(returning: settled) }
        }
        return try result.get()
    }
}

/// Read audits that a whole script's runner commits behind the reads: in a task whose
/// ``current`` is set (`AuditDeferral.$current.withValue(…)`), ``ConsoleStore/appendReadAudit(_:)``
/// keeps its entry here and returns at once, and the runner holds the read's output until
/// ``settle()`` has committed every entry kept so far — together, a group commit of up to
/// ``AuditGroupCommit/maxGroup`` entries per transaction (the batch's grouping of lookups and
/// `show`s: at most 256 lines or 50 ms).
public final class AuditDeferral: Sendable {
    @TaskLocal public static var current: AuditDeferral?

    /// Entries kept for one store's queue, in order.
    private struct Batch: Sendable {
        let queue: ObjectIdentifier
        let submit: @Sendable ([AuditDraft]) -> [AuditReceipt]
        var drafts: [AuditDraft]
    }

    /// A settle that failed: the entries it took (by keep count, `from` exclusive) and why.
    private struct Failure: Sendable {
        var from: Int
        var through: Int
        var error: ConsoleError
    }

    private struct State: Sendable {
        var batches: [Batch] = []
        /// Entries kept so far, ever (each keep is numbered by it).
        var kept = 0
        /// The keep count the last settle took entries through.
        var settled = 0
        var failures: [Failure] = []
    }

    private let state = Mutex(State())

    public init() {}

    /// Keeps `draft` (already stamped) for `group`'s next commit through `submit`.
    func keep(
        _ draft: AuditDraft, for group: AuditGroupCommit, submit: @escaping @Sendable ([AuditDraft]) -> [AuditReceipt]
    ) {
        let queue = ObjectIdentifier(group)
        state.withLock { state in
            state.kept += 1
            if state.batches.last?.queue == queue {
                state.batches[state.batches.count - 1].drafts.append(draft)
            } else {
                state.batches.append(Batch(queue: queue, submit: submit, drafts: [draft]))
            }
        }
    }

    /// Moves every entry `other` keeps to the end of this deferral, in order, and returns this
    /// deferral's keep count before them: an entry `other` numbered `n` is `base + n` here. A
    /// script's reads made ahead keep their entries aside until their access check is confirmed
    /// (the console's `withOneAccessCheck`), so that a settle for earlier lines cannot
    /// commit the entry of a read that is then thrown away.
    public func adopt(_ other: AuditDeferral) -> Int {
        let moved = other.state.withLock { other in
            defer {
                other.batches = []
                other.settled = other.kept
            }
            return other.batches
        }
        return state.withLock { state in
            let base = state.kept
            for batch in moved {
                state.kept += batch.drafts.count
                if state.batches.last?.queue == batch.queue {
                    state.batches[state.batches.count - 1].drafts += batch.drafts
                } else {
                    state.batches.append(batch)
                }
            }
            return base
        }
    }

    /// How many entries are waiting to be committed.
    public var count: Int { state.withLock { $0.batches.reduce(0) { $0 + $1.drafts.count } } }

    /// How many entries were kept so far, ever: read before and after a read, it numbers the
    /// read's entries for ``failure(keptAfter:through:)``.
    public var keptCount: Int { state.withLock { $0.kept } }

    /// Why the entries kept after the `before`-th through the `after`-th are not in the log: a
    /// settle took one of them and failed. `nil` when none was in a failed settle (committed,
    /// or still kept). A script that reads ahead of its lines asks it for each line before
    /// showing it: a settle for earlier lines may have taken this line's entry with theirs.
    public func failure(keptAfter before: Int, through after: Int) -> ConsoleError? {
        guard after > before else { return nil }
        return state.withLock { state in
            state.failures.first { $0.from < after && before < $0.through }?.error
        }
    }

    /// Commits every entry kept so far, and returns once they are in the log.
    /// - Throws: the first failed entry's error (the others are waited for all the same).
    public func settle() async throws(ConsoleError) {
        try await startSettle().wait()
    }

    /// Hands every entry kept so far to its store's group commit and returns at once; the
    /// caller waits with ``AuditSettling/wait()`` (a script renders its next lines meanwhile).
    public func startSettle() -> AuditSettling {
        let (taken, from, through) = state.withLock { state in
            defer {
                state.batches = []
                state.settled = state.kept
            }
            return (state.batches, state.settled, state.kept)
        }
        let receipts = taken.flatMap { $0.submit($0.drafts) }
        return AuditSettling(deferral: self, receipts: receipts, from: from, through: through)
    }

    fileprivate func failed(from: Int, through: Int, _ error: ConsoleError) {
        state.withLock { $0.failures.append(Failure(from: from, through: through, error: error)) }
    }
}

/// The entries one ``AuditDeferral/startSettle()`` handed to their group commits.
public struct AuditSettling: Sendable {
    fileprivate let deferral: AuditDeferral
    fileprivate let receipts: [AuditReceipt]
    fileprivate let from: Int
    fileprivate let through: Int

    /// Returns once every entry is in the log.
    /// - Throws: the first failed entry's error (the others are waited for all the same); the
    ///   deferral then names it for the reads whose entries these were
    ///   (``AuditDeferral/failure(keptAfter:through:)``).
    public func wait() async throws(ConsoleError) {
        var failure: ConsoleError?
        for receipt in receipts {
            do throws(ConsoleError) { _ = try await receipt.entry() } catch { failure = failure ?? error }
        }
        if let failure {
            deferral.failed(from: from, through: through, failure)
            throw failure
        }
    }
}
