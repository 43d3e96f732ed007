import Access
import BackupModel
import ConsoleStore
import Foundation

/// `check [BACKUP_ID]`: the health checks over one backup or a whole tenant.
///
/// A tenant is streamed: the store pages the summaries it derived from each backup's metadata
/// at write time, in id order (``batchSize`` at a time), with the page's index drift computed
/// set-wise in SQL, and each page's checks run on a worker while the store reads the next,
/// with at most ``workers`` pages in flight. No metadata JSON is decoded and memory stays
/// bounded by a few pages whatever the tenant size. One backup (`check BACKUP_ID`) is checked
/// from its full metadata, as `show` does; both give the same results.
public struct HealthScan: Sendable {
    let store: any ConsoleStore
    public var batchSize: Int
    /// The most findings a report lists; the rest are counted.
    public var findingLimit: Int
    public var workers: Int
    /// Which findings the report lists (`--failing`, `--check NAME`).
    public var filter = FindingFilter()
    /// The live results of `check --turnkey`, read before the scan; each backup's three live
    /// results follow its static ones.
    public var live: TurnkeyCrossCheck.Outcome?

    var names: [String] {
        CheckTally.staticNames + (live == nil ? [] : LiveCheckName.allCases.map(\.rawValue))
    }

    /// A backup's results: the static checks, then the live ones when there are.
    func results(_ input: HealthInput) -> [HealthResult] {
        let results = HealthChecks.run(input)
        guard let live else { return results }
        return results + TurnkeyCrossCheck.results(live.results[input.backupId])
    }

    public init(
        store: any ConsoleStore, batchSize: Int = 1000, findingLimit: Int = 100,
        workers: Int = ProcessInfo.processInfo.activeProcessorCount
    ) {
        self.store = store
        self.batchSize = batchSize
        self.findingLimit = findingLimit
        self.workers = max(1, workers)
    }

    /// Checks one backup (`backupId`) or the whole tenant (`nil`); audited as `backup.check`.
    /// - Parameter progress: called from the scanning thread with the backups checked so far.
    /// - Throws: ``ConsoleError`` `not_found`, `invalid_backup_account_id`, `permission_denied`,
    ///   or the store's errors.
    public func check(
        backupId: String?, session: Session, progress: ((Int) throws(ConsoleError) -> Void)? = nil,
        turnkey: TurnkeyCrossCheck? = nil
    ) async throws(ConsoleError) -> CheckReport {
        try await session.require(.check)
        let tenant = session.tenantName
        var scan = self
        if let turnkey {
            // Turnkey first (only once the role allows it), then the scan with its results.
            scan.live = try await turnkey.run(tenant: tenant, backupId: backupId, progress: progress)
            return try await scan.checked(backupId: backupId, session: session, progress: progress)
        }
        return try await scan.checked(backupId: backupId, session: session, progress: progress)
    }

    func checked(
        backupId: String?, session: Session, progress: ((Int) throws(ConsoleError) -> Void)?
    ) async throws(ConsoleError) -> CheckReport {
        let tenant = session.tenantName
        let report: CheckReport
        if let backupId {
            let inspector = BackupInspector(store: store)
            let record = try await inspector.record(backupId, tenant: tenant)
            var tally = CheckTally(limit: min(findingLimit, names.count), filter: filter, names: names)
            await tally.add(backupId: record.backupId, results(try inspector.healthInput(record, tenant: tenant)))
            report = tally.report(scope: "backup", tenant: tenant.rawValue)
            try await store.appendAudit(session.audit("backup.check", target: record.backupId))
        } else {
            report = try await scan(tenant: tenant, progress: progress)
            var details = ["backups": "\(report.backups)", "failing": "\(report.backupsFailing)"]
            if let live { details["turnkeySubOrgs"] = "\(live.subOrgsRead)" }
            try await store.appendAudit(session.audit("backup.check", details: details))
        }
        return report
    }

    /// The tenant-wide scan without permission check or audit (``check(backupId:session:progress:)``
    /// does both; the benchmark calls this).
    package func scan(tenant: TenantName, progress: ((Int) throws(ConsoleError) -> Void)? = nil)
        async throws(ConsoleError)
        -> CheckReport
    {
        let limit = findingLimit
        let filter = self.filter
        let names = self.names
        let scan = self
        let pageSize = min(max(batchSize, 1), 100_000)
        let workers = max(1, self.workers)
        var failure: ConsoleError?
        // Pages are read one after another; up to `workers` of them are checked at once.
        let tally = await withTaskGroup(of: CheckTally.self) { group in
            var merged = CheckTally(limit: limit, filter: filter, names: names)
            var running = 0
            var after: String?
            var seen = 0
            do throws(ConsoleError) {
                while true {
                    let page = try await store.backupHealth(tenant: tenant, after: after, limit: pageSize)
                    if !page.isEmpty {
                        if running >= workers, let done = await group.next() {
                            merged.merge(done)
                            running -= 1
                        }
                        group.addTask {
                            var local = CheckTally(limit: limit, filter: filter, names: names)
                            for row in page {
                                local.add(backupId: row.summary.backupId, scan.results(HealthInput(row)))
                            }
                            return local
                        }
                        running += 1
                        seen += page.count
                        try progress?(seen)
                    }
                    guard page.count == pageSize, let last = page.last else { break }
                    after = last.summary.backupId
                }
            } catch {
                failure = error
            }
            for await done in group { merged.merge(done) }
            return merged
        }
        if let failure { throw failure }
        return tally.report(scope: "tenant", tenant: tenant.rawValue)
    }
}
