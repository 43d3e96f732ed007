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
        backupId: String?, session: Session, progress: ((Int) throws(ConsoleError) -> Void)? = nil
    ) throws(ConsoleError) -> CheckReport {
        try session.require(.check)
        let tenant = session.tenantName
        let report: CheckReport
        if let backupId {
            let inspector = BackupInspector(store: store)
            let record = try inspector.record(backupId, tenant: tenant)
            var tally = CheckTally(limit: min(findingLimit, HealthCheckName.allCases.count), filter: filter)
            tally.add(backupId: record.backupId, HealthChecks.run(try inspector.healthInput(record, tenant: tenant)))
            report = tally.report(scope: "backup", tenant: tenant.rawValue)
            try store.appendReadAudit(session.audit("backup.check", target: record.backupId))
        } else {
            report = try scan(tenant: tenant, progress: progress)
            try store.appendReadAudit(
                session.audit(
                    "backup.check", details: ["backups": "\(report.backups)", "failing": "\(report.backupsFailing)"]))
        }
        return report
    }

    /// The tenant-wide scan without permission check or audit (``check(backupId:session:progress:)``
    /// does both; the benchmark calls this).
    package func scan(tenant: TenantName, progress: ((Int) throws(ConsoleError) -> Void)? = nil) throws(ConsoleError)
        -> CheckReport
    {
        let shared = SharedTally(CheckTally(limit: findingLimit, filter: filter))
        let group = DispatchGroup()
        let slots = DispatchSemaphore(value: workers)
        let queue = DispatchQueue(label: "backupctl.check", attributes: .concurrent)
        let limit = findingLimit
        let filter = self.filter
        var seen = 0
        defer { group.wait() }
        try store.forEachBackupHealth(tenant: tenant, batchSize: batchSize) {
            (page: [BackupHealthRow]) throws(ConsoleError) in
            slots.wait()
            group.enter()
            queue.async {
                defer {
                    slots.signal()
                    group.leave()
                }
                var local = CheckTally(limit: limit, filter: filter)
                for row in page { local.add(backupId: row.summary.backupId, HealthChecks.run(HealthInput(row))) }
                shared.merge(local)
            }
            seen += page.count
            try progress?(seen)
        }
        group.wait()
        return shared.tally.report(scope: "tenant", tenant: tenant.rawValue)
    }
}

/// The scan's running tally, shared by the workers under a lock.
private final class SharedTally: @unchecked Sendable {
    private let lock = NSLock()
    private var value: CheckTally

    init(_ tally: CheckTally) { value = tally }

    var tally: CheckTally { lock.withLock { value } }

    func merge(_ other: CheckTally) { lock.withLock { value.merge(other) } }
}
