import Access
import BackupCrypto
import BackupModel
import ConsoleStore
import Foundation
import Turnkey

extension CleanupService {
    /// `cleanup run`: scan, then delete the eligible orphans (or only report them in a dry run).
    ///
    /// Workers take items in id order, at most `concurrency` at once, paced by the client's rate
    /// limiter. For each item: re-read the store (a now-referenced sub-org is `skipped`), journal
    /// the body before the first send, then try the cleanup key and, on PUBLIC_KEY_NOT_FOUND, the
    /// user's pre-stamped break-glass request. `shouldStop` (Ctrl-C) stops new items; items in
    /// flight finish and are recorded.
    /// - Parameter confirm: asked right before each deletion attempt is sent (after its rate
    ///   slot) to confirm the operator may still run cleanup; a `permissionDenied` or `notFound`
    ///   withdraws that item unsent and stops the run.
    /// - Throws: ``ConsoleError`` `max_exceeded` before anything is deleted when more than
    ///   `options.max` are eligible; `turnkey_unavailable` (exit 2) when the retry budget ran out
    ///   (an outage) — what was done is journaled and the next run carries on; the refusal
    ///   `confirm` threw when the operator lost the right during the run.
    public func run(
        session: Session, options: CleanupRunOptions, progress: (@Sendable (RunReport, Int) -> Void)? = nil,
        shouldStop: @escaping @Sendable () -> Bool = { false },
        confirm: (@Sendable () async throws(ConsoleError) -> Void)? = nil
    ) async throws(ConsoleError) -> RunReport {
        try await session.require(.cleanupRun)
        // One executing run per tenant: the journal has one writer. A killed run's lease expires.
        let lease = await options.execute ? try RunLease.acquire(self, session) : nil
        do {
            let report = try await runLeased(
                session: session, options: options, lease: lease, progress: progress, shouldStop: shouldStop,
                confirm: confirm)
            try await lease?.release()
            return report
        } catch {
            try? await lease?.release()
            throw error
        }
    }

    private func runLeased(
        session: Session, options: CleanupRunOptions, lease: RunLease?,
        progress: (@Sendable (RunReport, Int) -> Void)?, shouldStop: @escaping @Sendable () -> Bool,
        confirm: (@Sendable () async throws(ConsoleError) -> Void)?
    ) async throws(ConsoleError) -> RunReport {
        let budget = TurnkeyRetryBudget(capacity: retryBudgetCapacity)
        let client = client(session, budget: budget, stop: shouldStop)
        let proof = try await snapshotProof(session: session, graceSeconds: options.graceSeconds)
        let scan = try await scanCore(session: session, client: client, proof: proof)
        let candidates = scan.orphans.filter(\.eligible).map(\.subOrgId)
        var report = RunReport(dryRun: !options.execute)
        report.waitingForSnapshot = scan.waitingForSnapshot
        guard candidates.count <= options.max else {
            throw ConsoleError(
                .conflict, code: "max_exceeded",
                "\(candidates.count) sub-orgs of tenant \(session.tenantName) are eligible for deletion, more than --max \(options.max); nothing was deleted. Review `cleanup scan`, then pass --max \(candidates.count)."
            )
        }
        guard options.execute else {
            report.items = candidates.map {
                RunReport.Item(subOrgId: $0, outcome: "wouldDelete", attempts: 0, error: nil)
            }
            return report
        }
        if options.queue { return try await queue(candidates, session: session, report: report) }
        let flags = RunFlags()
        var confirmed = CleanupWorker(
            service: self, session: session, client: client, flags: flags, maxPolls: options.maxPolls, proof: proof)
        confirmed.shouldStop = shouldStop
        if let confirm {
            confirmed.beforeSend = { () async throws(ConsoleError) in
                do throws(ConsoleError) {
                    try await confirm()
                } catch {
                    if error.kind == .permissionDenied || error.kind == .notFound { flags.markRefused(error) }
                    throw error
                }
            }
        }
        let worker = confirmed
        let width = max(1, min(options.concurrency, 64))
        // Retryable failures go back to the queue for a later pass, each paid for from the
        // run-wide retry budget, until an item has had `maxPasses` or the budget is spent.
        var queue = candidates.map { (id: $0, pass: 1, notBefore: Int64(0)) }
        var next = 0
        var failure: ConsoleError?
        var outcomes: [String: RunReport.Item] = [:]
        await withTaskGroup(of: Result<(RunReport.Item, Int), ConsoleError>.self) { group in
            func startNext() -> Bool {
                guard next < queue.count, failure == nil, flags.outageMessage == nil, flags.refused == nil,
                    !shouldStop()
                else {
                    return false
                }
                let (id, pass, notBefore) = queue[next]
                next += 1
                let last = pass >= options.maxPasses
                let timing = timing
                group.addTask {
                    // A pass Turnkey asked to wait for (Retry-After) starts no sooner, and not at
                    // all once the run was asked to stop (the wait ends then).
                    let wait = notBefore - timing.clock.millis()
                    // A refusal (the operator revoked) ends the wait too: the run stops.
                    let stopping = { @Sendable in shouldStop() || flags.refused != nil }
                    if wait > 0 { await Self.wait(wait, timing: timing, unless: stopping) }
                    if stopping() {
                        return .success(
                            (RunReport.Item(subOrgId: id, outcome: Self.notStarted, attempts: 0, error: nil), pass))
                    }
                    do throws(ConsoleError) {
                        return .success((try await worker.process(id, finalPass: last), pass))
                    } catch  where error.code == "stale_journal_item" {
                        // A cleanup worker (or another writer) took the item meanwhile: its outcome
                        // stands, and this run goes on with the others.
                        return .success(
                            (
                                RunReport.Item(
                                    subOrgId: id, outcome: "skipped", attempts: 0,
                                    error:
                                        "changed by another writer (a cleanup worker) during this run; `cleanup status` shows its outcome"
                                ), pass
                            ))
                    } catch {
                        return .failure(error)
                    }
                }
                return true
            }
            for _ in 0..<width where startNext() {}
            while let result = await group.next() {
                switch result {
                case .success(let (item, pass)):
                    if item.outcome == Self.notStarted {
                        // Left as it was (pending): the report says the run was interrupted.
                    } else if item.outcome == CleanupWorker.retryLater {
                        if budget.withdraw() {
                            let wait = min(flags.takeRetryAfter(item.subOrgId), Self.maxPassWaitMillis)
                            queue.append((item.subOrgId, pass + 1, timing.clock.millis() + wait))
                        } else {
                            // The budget is spent: this item is done for this run, as failed.
                            do throws(ConsoleError) {
                                outcomes[item.subOrgId] = try await worker.giveUp(item.subOrgId, error: item.error)
                            } catch {
                                if failure == nil { failure = error }
                            }
                        }
                    } else if item.outcome == CleanupWorker.withdrawn {
                        // Not sent: the operator lost the right (the run stops below).
                        outcomes[item.subOrgId] = RunReport.Item(
                            subOrgId: item.subOrgId, outcome: "pending", attempts: item.attempts, error: item.error)
                    } else {
                        outcomes[item.subOrgId] = item
                    }
                case .failure(let error):
                    if failure == nil { failure = error }
                }
                var partial = RunReport(dryRun: false)
                for item in outcomes.values { partial.count(item.outcome) }
                partial.items = Array(outcomes.values)
                progress?(partial, candidates.count)
                if let lease, failure == nil {
                    do throws(ConsoleError) { try await lease.renewIfDue() } catch { failure = error }
                }
                _ = startNext()
            }
        }
        report.items = outcomes.values.sorted { $0.subOrgId < $1.subOrgId }
        for item in report.items { report.count(item.outcome) }
        if let failure { throw failure }
        if let refused = flags.refused {
            throw ConsoleError(
                refused.kind, code: refused.code,
                "\(refused.message) Stopped the run after \(report.deleted) deleted, \(report.alreadyGone) already gone, \(report.failed) failed; \(candidates.count - report.items.count + report.pending) left pending, nothing more sent."
            )
        }
        if let outage = flags.outageMessage {
            throw ConsoleError(
                .remote, code: "turnkey_unavailable",
                "Turnkey kept failing and the run's retry budget is spent (\(outage)); stopped after \(report.items.count) of \(candidates.count) sub-orgs: \(report.deleted) deleted, \(report.alreadyGone) already gone, \(candidates.count - report.items.count + report.pending) left pending. Run `cleanup run --execute` again when Turnkey recovers."
            )
        }
        if report.items.count < candidates.count {
            report.stoppedReason = "interrupted after \(report.items.count) of \(candidates.count)"
        }
        return report
    }
}

extension CleanupService {
    /// The longest a re-queued pass waits for Turnkey's `Retry-After` (a longer one is cut to
    /// this; the run's passes and budget still bound the whole).
    static let maxPassWaitMillis: Int64 = 300_000

    /// The outcome of a re-queued pass a stop came before: not reported, the item left pending.
    static let notStarted = "notStarted"

    /// Waits `millis`, or less once `stop` says so (looked at every 100 ms).
    static func wait(_ millis: Int64, timing: TurnkeyTiming, unless stop: @escaping @Sendable () -> Bool) async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask { try? await timing.sleep(millis) }
            group.addTask {
                while !stop(), !Task.isCancelled { try? await Task.sleep(for: .milliseconds(100)) }
            }
            await group.next()
            group.cancelAll()
        }
    }
}

/// The tenant's cleanup-run lease, held while a run executes and renewed as it goes.
final class RunLease: @unchecked Sendable {
    static let ttlSeconds: Int64 = 120
    let service: CleanupService
    let tenant: TenantName
    let holder: String
    private var renewedAt: Int64

    private init(service: CleanupService, tenant: TenantName, holder: String, at: Int64) {
        self.service = service
        self.tenant = tenant
        self.holder = holder
        renewedAt = at
    }

    /// - Throws: `cleanup_run_in_progress` while another run holds an unexpired lease.
    static func acquire(_ service: CleanupService, _ session: Session) async throws(ConsoleError) -> RunLease {
        let now = service.nowSeconds
        let holder = ProcessHolder.name(session.operatorName.rawValue)
        var held = try await service.store.acquireCleanupLease(
            tenant: session.tenantName, holder: holder, now: now, expiresAt: now + ttlSeconds, takeOver: nil)
        // A run on this host whose process is gone (killed) is taken over at once; elsewhere
        // its lease expires.
        if let current = held, let pid = ProcessHolder.deadLocalPid(current.holder) {
            held = try await service.store.acquireCleanupLease(
                tenant: session.tenantName, holder: holder, now: now, expiresAt: now + ttlSeconds,
                takeOver: current.holder)
            service.logger.notice("took over the cleanup lease of a killed run (pid \(pid))")
        }
        if let held {
            throw ConsoleError(
                .conflict, code: "cleanup_run_in_progress",
                "Another `cleanup run --execute` holds tenant \(session.tenantName)'s lease (\(held.holder.prefix(120)), until \(Timestamp.format(held.expiresAt))); one run at a time keeps the journal consistent. If that run was killed, its lease expires by then."
            )
        }
        return RunLease(service: service, tenant: session.tenantName, holder: holder, at: now)
    }

    /// Extends the lease once a third of its life has passed.
    /// - Throws: `cleanup_lease_lost` when another run took it over (this one must stop).
    func renewIfDue() async throws(ConsoleError) {
        let now = service.nowSeconds
        guard now - renewedAt >= Self.ttlSeconds / 3 else { return }
        guard
            try await service.store.renewCleanupLease(tenant: tenant, holder: holder, expiresAt: now + Self.ttlSeconds)
        else {
            throw ConsoleError(
                .conflict, code: "cleanup_lease_lost",
                "This run's lease on tenant \(tenant) expired and another run took it over; stopping.")
        }
        renewedAt = now
    }

    func release() async throws(ConsoleError) {
        try await service.store.releaseCleanupLease(tenant: tenant, holder: holder)
    }
}

extension CleanupService {
    /// `cleanup run --execute --queue`: hands the eligible sub-orgs to the cleanup workers, in
    /// one transaction with its audit entry; each is reported `queued`.
    /// - Throws: `queue_unsupported` when the store has no worker queue.
    func queue(_ candidates: [String], session: Session, report: RunReport) async throws(ConsoleError) -> RunReport {
        guard let queue = store as? any CleanupQueueStore else {
            throw .invalid("queue_unsupported", "This console store has no queue for cleanup workers.")
        }
        let queued = try await queue.queueCleanup(
            tenant: session.tenantName, subOrgIds: candidates, queuedBy: session.operatorName.rawValue,
            now: timing.clock.millis(),
            audit: session.audit("cleanup.queue", details: ["queued": "\(candidates.count)"]))
        var report = report
        report.items = candidates.map {
            RunReport.Item(subOrgId: $0, outcome: "queued", attempts: 0, error: nil)
        }
        for item in report.items { report.count(item.outcome) }  // queued items are pending
        if queued < candidates.count {
            report.stoppedReason = "\(candidates.count - queued) of \(candidates.count) were no longer pending"
        }
        return report
    }
}
