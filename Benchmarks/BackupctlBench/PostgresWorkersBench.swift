import Access
import BackupCrypto
import BackupModel
import Cleanup
import ConsoleStore
import Foundation
import PostgresStore
import Turnkey
import TurnkeySandbox

/// Cleanup with two queue workers against one, on PostgreSQL (``CleanupQueueWorker``): the same
/// number of queued orphans in two sandbox tenants, one drained by one worker, the other by two,
/// in the same run. The sandbox answers each Turnkey call after 20 ms (a network round trip) and
/// the tenants' rate (1000/s, shared by their workers through the store) does not bind, so the
/// figure is how well workers overlap their calls and the database work between them.
struct PostgresWorkersBench: BenchSuite {
    let name = "postgres-workers"

    func run(_ scale: BenchScale) async throws -> [String: BenchValue] {
        let orphans = scale.pick(200, quick: 40)
        return try await BenchDatabase.with { _, database in
            try await measure(try await PostgresConsoleStore.open(database), orphans: orphans)
        }
    }

    private func measure(_ store: PostgresConsoleStore, orphans: Int) async throws -> [String: BenchValue] {
        let access = AccessService(store: store)
        let token = try await access.bootstrap(admin: try OperatorName("bench"))
        let op = try await access.authenticate(token: token)
        var seconds: [Int: Double] = [:]
        var deleted: [Int: Int] = [:]
        for workers in [1, 2] {
            let tenant = try TenantName("workers\(workers)")
            try await access.createTenant(
                TenantRecord(
                    name: tenant, isSandbox: true, policy: TenantPolicy(turnkeyRPS: 1000),
                    createdAt: Int64(Date().timeIntervalSince1970)), by: op)
            let session = try await access.session(operator: op, tenant: tenant)
            _ = try await store.seedSandbox(
                tenant: session.tenant, backups: 10, orphans: orphans, seed: UInt64(workers), operatorName: "bench",
                clock: { Int64(Date().timeIntervalSince1970) }, progress: nil)
            let connection = try await SandboxTenant.open(
                store: store, tenant: tenant, faults: SandboxFaults(latencyMillis: 20)
            ).connection
            let service = CleanupService(store: store, connection: connection)
            let queued = try await service.run(
                session: session, options: CleanupRunOptions(execute: true, max: orphans, graceSeconds: 0, queue: true))
            guard queued.items.count == orphans else {
                throw BenchFailure("queued \(queued.items.count) of \(orphans) orphans")
            }
            let start = nowNanos()
            let outcomes = try await withThrowingTaskGroup(of: [RunReport.Item].self) { group in
                for index in 0..<workers {
                    let worker = CleanupQueueWorker(service: service, name: "bench-\(workers)-\(index)") { _ in
                        session
                    }
                    group.addTask { try await worker.drain(tenant: tenant) }
                }
                return try await group.reduce(into: [RunReport.Item]()) { $0 += $1 }
            }
            seconds[workers] = Double(nowNanos() - start) / 1e9
            deleted[workers] = outcomes.filter { $0.outcome == "deleted" }.count
        }
        let one = seconds[1] ?? 1
        let two = seconds[2] ?? 1
        return [
            "orphansPerTenant": .integer(orphans),
            "turnkeyLatencyMillis": .integer(20),
            "oneWorkerSeconds": .number(one),
            "twoWorkersSeconds": .number(two),
            "oneWorkerDeletedPerSecond": .number(Double(deleted[1] ?? 0) / one),
            "twoWorkersDeletedPerSecond": .number(Double(deleted[2] ?? 0) / two),
            "twoToOneSpeedup": .number(one / two),
            "twoToOneTargetSpeedup": .number(1.7),
            "deletedByOne": .integer(deleted[1] ?? 0),
            "deletedByTwo": .integer(deleted[2] ?? 0),
        ]
    }
}
