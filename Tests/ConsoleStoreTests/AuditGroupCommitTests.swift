import BackupCrypto
import BackupModel
import BackupctlTestSupport
import Foundation
import Synchronization
import Testing

@testable import ConsoleStore

/// Group commit of audit appends (``AuditGroupCommit``): the entries of concurrent callers share
/// a transaction, no caller returns before the commit that holds its entry, and the chain stays
/// one chain.
@Suite(.timeLimit(.minutes(10))) struct AuditGroupCommitTests {
    /// Counts the group transactions (``StoreCheckpoint/auditGroup``: entries written, not committed).
    final class Groups: Sendable {
        private let count = Mutex(0)
        var reaches: Int { count.withLock { $0 } }

        var checkpoints: StoreCheckpoints {
            StoreCheckpoints { point in if point == .auditGroup { self.count.withLock { $0 += 1 } } }
        }
    }

    /// A one-shot signal a task awaits without holding a thread.
    final class Signal: Sendable {
        private let state = Mutex<(fired: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))

        func fire() {
            let waiters = state.withLock { state in
                state.fired = true
                defer { state.waiters = [] }
                return state.waiters
            }
            for waiter in waiters { waiter.resume() }
        }

        var fired: Bool { state.withLock { $0.fired } }

        func wait() async {
            await withCheckedContinuation { (waiter: CheckedContinuation<Void, Never>) in
                let now = state.withLock { state in
                    if !state.fired { state.waiters.append(waiter) }
                    return state.fired
                }
                if now { waiter.resume() }
            }
        }
    }

    /// Runs a write transaction that holds the audit chain (the chain lock, or SQLite's single
    /// writer) from `held` until `release`, without holding a thread.
    static func holdOpenedChain<Store: SQLRuleStore>(_ store: Store, held: Signal, release: Signal) async throws {
        try await store.driver.transaction("holding the audit chain") { session in
            try await store.lockChain(session)
            held.fire()
            await release.wait()
        }
    }

    static func holdChain(_ store: any ConsoleStore, held: Signal, release: Signal) async throws {
        let ruled = try #require(store as? any SQLRuleStore)
        try await holdOpenedChain(ruled, held: held, release: release)
    }

    /// Holds the chain, starts `first` (entry 0) and waits until its group waits for the chain,
    /// starts entries 1 through `count` and waits until they are all queued behind it, runs
    /// `whileHeld`, then releases the chain and returns the tasks.
    static func queueBehindHeldChain<T: Sendable>(
        _ store: any ConsoleStore, count: Int, whileHeld: () -> Void = {},
        _ append: @escaping @Sendable (Int) async throws -> T
    ) async throws -> (first: Task<T, any Error>, rest: [Task<T, any Error>]) {
        let group = try #require((store as? any SQLRuleStore)?.auditGroup)
        let held = Signal()
        let release = Signal()
        let holder = Task { try await Self.holdChain(store, held: held, release: release) }
        await held.wait()
        let first = Task { try await append(0) }
        #expect(await eventually(seconds: 30) { group.committing == 1 })
        let rest = (1...count).map { n in Task { try await append(n) } }
        #expect(await eventually(seconds: 30) { group.queued == count })
        whileHeld()
        release.fire()
        try await holder.value
        return (first, rest)
    }

    final class Count: Sendable {
        private let count = Mutex(0)
        var value: Int { count.withLock { $0 } }
        func add() { count.withLock { $0 += 1 } }
    }

    static func draft(_ n: Int, action: String = "backup.lookup") -> AuditDraft {
        AuditDraft(operatorName: "ann", tenant: "alpha", action: action, target: "t\(n)")
    }

    /// Every entry chained to the one before it, from 1 to `count`, each hash recomputed.
    static func expectOneChain(_ store: any ConsoleStore, count: Int) async throws {
        let entries = try await store.auditEntries(tenant: nil, afterSeq: 0, limit: count + 10)
        #expect(entries.map(\.seq) == Array(1...Int64(count)))
        var prev = AuditEntry.genesisHash
        for entry in entries {
            #expect(entry.prevHash == prev)
            let canonical = AuditEntry.canonicalBytes(
                seq: entry.seq, at: entry.at, operatorName: entry.operatorName, tenant: entry.tenant,
                action: entry.action, target: entry.target, details: entry.details)
            #expect(entry.hash == SHA256.hex(Array(prev.utf8) + canonical))
            prev = entry.hash
        }
    }

    @Test(arguments: TestBackend.available) func concurrentAppendsShareACommitAndNoneReturnsBeforeIt(
        backend: TestBackend
    ) async throws {
        let groups = Groups()
        try await backend.withStore(checkpoints: groups.checkpoints) { store in
            let returned = Count()
            // The first group has left the queue and waits for the chain; a hundred queue behind it.
            let (first, rest) = try await Self.queueBehindHeldChain(
                store, count: 100,
                whileHeld: {
                    // Nothing is committed: no caller has been answered.
                    #expect(returned.value == 0)
                    #expect(groups.reaches == 0)
                }
            ) { n in
                let entry = try await store.appendAudit(Self.draft(n))
                returned.add()
                return entry
            }
            let head = try await first.value
            var targets: [String?] = []
            for task in rest { targets.append(try await task.value.target) }
            #expect(head.seq == 1)
            // The hundred that queued behind it went in one transaction.
            #expect(groups.reaches == 2)
            #expect(Set(targets).count == 100)
            try await Self.expectOneChain(store, count: 101)
        }
    }

    /// The transactions of entries that queued behind one run on the group's own queue, not
    /// where their callers run (in `serve`, the global executor is the API's event loops, which
    /// a commit waiting for the disk would stall with every connection on them). On SQLite a
    /// caller that finds no commit running commits its own group in its own task.
    @Test(arguments: TestBackend.available) func queuedEntriesCommitOnTheGroupsOwnQueue(backend: TestBackend)
        async throws
    {
        let seen = Mutex<[UnownedTaskExecutor?]>([])
        let checkpoints = StoreCheckpoints { point in
            guard point == .auditGroup else { return }
            let executor = withUnsafeCurrentTask { $0?.unownedTaskExecutor }
            seen.withLock { $0.append(executor) }
        }
        try await backend.withStore(checkpoints: checkpoints) { store in
            let group = try #require((store as? any SQLRuleStore)?.auditGroup)
            let (first, rest) = try await Self.queueBehindHeldChain(store, count: 5) { n in
                try await store.appendAudit(Self.draft(n))
            }
            _ = try await first.value
            for task in rest { _ = try await task.value }
            let deferral = AuditDeferral()
            try await AuditDeferral.$current.withValue(deferral) { try await store.appendReadAudit(Self.draft(6)) }
            try await deferral.settle()
            let own = group.executor.asUnownedTaskExecutor()
            let lone: UnownedTaskExecutor? = backend == .sqlite ? nil : own
            #expect(seen.withLock { $0 } == [lone, own, own])
            try await Self.expectOneChain(store, count: 7)
        }
    }

    @Test func oneRefusedDraftDoesNotFailItsGroup() async throws {
        try await TestBackend.sqlite.withStore { store in
            _ = try await storeSQL(
                store,
                """
                CREATE TRIGGER refuse_one BEFORE INSERT ON audit WHEN NEW.action = 'refused.here'
                BEGIN SELECT RAISE(ABORT, 'refused by the test'); END
                """)
            let (first, rest) = try await Self.queueBehindHeldChain(store, count: 9) { n in
                try await store.appendAudit(Self.draft(n, action: n == 5 ? "refused.here" : "backup.lookup"))
            }
            _ = try await first.value
            var failed: [Int] = []
            for (index, task) in rest.enumerated() {
                do { _ = try await task.value } catch { failed.append(index + 1) }
            }
            #expect(failed == [5])
            try await Self.expectOneChain(store, count: 9)
        }
    }

    /// A script's reads inside an ``AuditDeferral`` return before their entries commit; the
    /// deferral's ``AuditDeferral/settle()`` returns once every one is in the log.
    @Test(arguments: TestBackend.available) func deferredReadsAreInTheLogOnceSettled(backend: TestBackend)
        async throws
    {
        try await backend.withStore { store in
            let deferral = AuditDeferral()
            try await AuditDeferral.$current.withValue(deferral) {
                for n in 1...500 { try await store.appendReadAudit(Self.draft(n)) }
            }
            try await deferral.settle()
            #expect(deferral.count == 0)
            try await Self.expectOneChain(store, count: 500)
            // Outside a deferral a read's entry is committed before the call returns.
            try await store.appendReadAudit(Self.draft(501))
            #expect(try await store.latestAuditEntries(tenant: nil, limit: 1).last?.target == "t501")
        }
    }
}
