import Access
import BackupModel
import ConsoleStore
import Turnkey

extension CleanupService {
    /// `cleanup run`: scan, then delete the eligible orphans (or only report them in a dry run).
    ///
    /// Workers take items in id order, at most `concurrency` at once, paced by the client's rate
    /// limiter. For each item: re-read the store (a now-referenced sub-org is `skipped`), journal
    /// the body before the first send, then try the cleanup key and, on PUBLIC_KEY_NOT_FOUND, the
    /// user's pre-stamped break-glass request. `shouldStop` (Ctrl-C) stops new items; items in
    /// flight finish and are recorded.
    /// - Throws: ``ConsoleError`` `max_exceeded` before anything is deleted when more than
    ///   `options.max` are eligible; `turnkey_unavailable` (exit 2) when the retry budget ran out
    ///   (an outage) — what was done is journaled and the next run carries on.
    public func run(
        session: Session, options: CleanupRunOptions, progress: (@Sendable (RunReport, Int) -> Void)? = nil,
        shouldStop: @escaping @Sendable () -> Bool = { false }
    ) async throws(ConsoleError) -> RunReport {
        try session.require(.cleanupRun)
        let client = client(session)
        let scan = try await scanCore(session: session, client: client, graceSeconds: options.graceSeconds)
        let candidates = scan.orphans.filter(\.eligible).map(\.subOrgId)
        var report = RunReport(dryRun: !options.execute)
        guard options.execute else {
            report.items = candidates.map {
                RunReport.Item(subOrgId: $0, outcome: "wouldDelete", attempts: 0, error: nil)
            }
            return report
        }
        guard candidates.count <= options.max else {
            throw ConsoleError(
                .conflict, code: "max_exceeded",
                "\(candidates.count) sub-orgs of tenant \(session.tenantName) are eligible for deletion, more than --max \(options.max); nothing was deleted. Review `cleanup scan`, then pass --max \(candidates.count)."
            )
        }
        let flags = RunFlags()
        let worker = CleanupWorker(
            service: self, session: session, client: client, flags: flags, maxPolls: options.maxPolls)
        let width = max(1, min(options.concurrency, 64))
        var next = 0
        var failure: ConsoleError?
        await withTaskGroup(of: Result<RunReport.Item, ConsoleError>.self) { group in
            func startNext() -> Bool {
                guard next < candidates.count, failure == nil, flags.outageMessage == nil, !shouldStop() else {
                    return false
                }
                let id = candidates[next]
                next += 1
                group.addTask {
                    do throws(ConsoleError) { return .success(try await worker.process(id)) } catch {
                        return .failure(error)
                    }
                }
                return true
            }
            for _ in 0..<width where startNext() {}
            while let result = await group.next() {
                switch result {
                case .success(let item):
                    report.items.append(item)
                    report.count(item.outcome)
                case .failure(let error):
                    if failure == nil { failure = error }
                }
                progress?(report, candidates.count)
                _ = startNext()
            }
        }
        report.items.sort { $0.subOrgId < $1.subOrgId }
        if let failure { throw failure }
        if let outage = flags.outageMessage {
            throw ConsoleError(
                .remote, code: "turnkey_unavailable",
                "Turnkey kept failing and the run's retry budget is spent (\(outage)); stopped after \(report.items.count) of \(candidates.count) sub-orgs: \(report.deleted) deleted, \(report.alreadyGone) already gone, \(candidates.count - report.items.count + report.pending) left pending. Run `cleanup run --execute` again when Turnkey recovers."
            )
        }
        if next < candidates.count {
            report.stoppedReason = "interrupted after \(report.items.count) of \(candidates.count)"
        }
        return report
    }
}
