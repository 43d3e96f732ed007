import Access
import BackupModel
import Cleanup
import ConsoleStore
import Foundation
import Logging

extension LocalConsole {
    /// Runs `count` cleanup workers (`backupctl worker`, `serve --workers N`) until the calling
    /// task is cancelled, each holding its claims for `leaseMillis` between heartbeats: each drains the queued items of every tenant (or of `only`), then waits
    /// `idleMillis`, doubling up to 30 s while there is nothing to do. Workers in other processes
    /// on the same store share the queue and each tenant's Turnkey rate.
    ///
    /// Their audit entries follow the console's rule for writes: with an audit signer they are
    /// signed (a checkpoint once one is due after a pass, and one over whatever is left when the
    /// workers stop); without one, a pass on a store a server signs does nothing and fails with
    /// `audit_signed_store` (logged), since its entries would bypass the signer.
    /// - Parameter sleep: waits the given milliseconds (tests inject their own).
    public func runCleanupWorkers(
        count: Int, only: TenantName? = nil, idleMillis: Int64 = 1000, leaseMillis: Int64 = 60_000, logger: Logger,
        sleep: @escaping @Sendable (Int64) async throws -> Void = { try await Task.sleep(for: .milliseconds($0)) }
    ) async {
        await withTaskGroup(of: Void.self) { group in
            for index in 0..<max(0, count) {
                group.addTask {
                    await self.workerLoop(
                        name: ProcessHolder.name("worker\(index)"), only: only, idleMillis: idleMillis,
                        leaseMillis: leaseMillis, logger: logger, sleep: sleep)
                }
            }
        }
        // In a task of its own: the caller's is cancelled by now, and a cancelled task's
        // PostgreSQL queries would not run.
        if let auditSigner, let store = try? await store() {
            await Task { _ = await auditSigner.checkpointIfBehind(store: store) }.value
        }
    }

    private func workerLoop(
        name: String, only: TenantName?, idleMillis: Int64, leaseMillis: Int64, logger: Logger,
        sleep: @Sendable (Int64) async throws -> Void
    ) async {
        var idle = max(1, idleMillis)
        while !Task.isCancelled {
            var done = 0
            do throws(ConsoleError) {
                done = try await drainOnce(worker: name, only: only, leaseMillis: leaseMillis, logger: logger)
            } catch {
                logger.error("cleanup worker \(name): \(error.message)")
            }
            idle = done > 0 ? max(1, idleMillis) : min(30_000, idle * 2)
            if done > 0 { continue }
            do { try await sleep(idle) } catch { return }
        }
    }

    /// One pass over the tenants; returns how many items it finished.
    func drainOnce(worker name: String, only: TenantName?, leaseMillis: Int64, logger: Logger)
        async throws(ConsoleError) -> Int
    {
        try await refuseUnsignedWrites(recheck: true)
        let store = try await store()
        var done = 0
        for tenant in try await store.tenants() where only == nil || tenant.name == only {
            guard !Task.isCancelled else { break }
            let service = try await cleanupService(tenant: tenant)
            let access = try await access
            var worker = CleanupQueueWorker(service: service, name: name) { queuedBy throws(ConsoleError) in
                guard let op = try await store.operatorRecord(named: try OperatorName(queuedBy)) else {
                    throw .notFound("Operator \(queuedBy) no longer exists.")
                }
                return try await access.session(operator: op, tenant: tenant.name)
            }
            worker.leaseMillis = leaseMillis
            let items = try await worker.drain(tenant: tenant.name, shouldStop: { Task.isCancelled })
            if !items.isEmpty {
                var report = RunReport(dryRun: false)
                for item in items { report.count(item.outcome) }
                logger.notice(
                    "cleanup worker \(name) on \(tenant.name): \(report.deleted) deleted, \(report.alreadyGone) already gone, \(report.failed) failed, \(report.needsUser) need the user, \(report.skipped) skipped, \(report.pending) left pending"
                )
            }
            done += items.count
        }
        if done > 0 { await checkpointAfterAppends() }
        return done
    }
}
