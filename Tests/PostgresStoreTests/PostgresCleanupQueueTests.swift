import BackupModel
import BackupctlTestSupport
import ConsoleStore
import PostgresNIO
import Testing

@testable import PostgresStore

/// Cleanup items shared by workers in several processes (two pools on one database stand for
/// two machines), and the rate limit they share.
@Suite(.enabled(if: PostgresTestDatabase.enabled, Comment(rawValue: PostgresTestDatabase.skipped)))
struct PostgresCleanupQueueTests {
    static var tenant: TenantName { get throws { try TenantName("prod") } }

    @Test func workersOnTwoMachinesTakeEveryItemExactlyOnce() async throws {
        try await PostgresTestDatabase.make { testDatabase in
            try await withQueues(testDatabase, items: 120) { first, second in
                let queues = [first, second, first, second, first, second]
                let taken = try await withThrowingTaskGroup(of: [String].self) { group in
                    for (index, queue) in queues.enumerated() {
                        group.addTask {
                            var mine: [String] = []
                            // Bounded: 120 items in batches of at least one.
                            for _ in 0..<120 {
                                let batch = try await queue.claim(
                                    tenant: Self.tenant, worker: "w\(index)", states: [.pending], limit: 7, now: 0,
                                    leaseMillis: 60_000)
                                if batch.isEmpty { break }
                                for var item in batch {
                                    item.state = .deleted
                                    item.updatedAt = 1
                                    let written = try await queue.record(
                                        tenant: Self.tenant, worker: "w\(index)", item: item, release: true)
                                    #expect(written?.state == .deleted)
                                    mine.append(item.subOrgId)
                                }
                            }
                            return mine
                        }
                    }
                    var all: [String] = []
                    for try await mine in group { all += mine }
                    return all
                }
                #expect(taken.count == 120)
                #expect(Set(taken).count == 120)
                let left = try await rows(
                    first.database, "SELECT count(*)::BIGINT FROM cleanup_items WHERE state <> 'deleted'",
                    as: Int64.self)
                #expect(left == [0])
            }
        }
    }

    @Test func aDeadWorkersItemsGoToAnotherOnceItsLeaseExpiresWithTheJournaledBody() async throws {
        try await PostgresTestDatabase.make { testDatabase in
            try await withQueues(testDatabase, items: 3) { first, second in
                let claimed = try await first.claim(
                    tenant: Self.tenant, worker: "dead", states: [.pending], limit: 10, now: 1_000, leaseMillis: 5_000)
                #expect(claimed.count == 3)
                // The body is journaled before the first send, then the worker dies.
                var journaled = try #require(claimed.first)
                journaled.body = #"{"type":"ACTIVITY_TYPE_DELETE_SUB_ORGANIZATION","timestampMs":"1000"}"#
                journaled.attempts = 1
                let written = try #require(
                    try await first.record(tenant: Self.tenant, worker: "dead", item: journaled, release: false))
                // While the lease runs, nobody else gets them.
                #expect(
                    try await second.claim(
                        tenant: Self.tenant, worker: "alive", states: [.pending], limit: 10, now: 5_999,
                        leaseMillis: 5_000
                    ).isEmpty)
                // After it, the survivor gets all three, the journaled body unchanged.
                let taken = try await second.claim(
                    tenant: Self.tenant, worker: "alive", states: [.pending], limit: 10, now: 6_001, leaseMillis: 5_000)
                #expect(taken.map(\.subOrgId) == claimed.map(\.subOrgId))
                #expect(taken.first?.body == journaled.body)
                #expect(taken.first?.version == written.version)
                // The dead worker, were it only slow, can no longer write them.
                var late = written
                late.state = .deleted
                #expect(try await first.record(tenant: Self.tenant, worker: "dead", item: late, release: true) == nil)
                #expect(
                    try await first.heartbeat(tenant: Self.tenant, worker: "dead", now: 6_002, leaseMillis: 5_000) == []
                )
            }
        }
    }

    @Test func aHeartbeatKeepsTheItemsOfALiveWorker() async throws {
        try await PostgresTestDatabase.make { testDatabase in
            try await withQueues(testDatabase, items: 2) { first, second in
                let claimed = try await first.claim(
                    tenant: Self.tenant, worker: "slow", states: [.pending], limit: 10, now: 0, leaseMillis: 1_000)
                let held = try await first.heartbeat(tenant: Self.tenant, worker: "slow", now: 900, leaseMillis: 1_000)
                #expect(held == Set(claimed.map(\.subOrgId)))
                #expect(
                    try await second.claim(
                        tenant: Self.tenant, worker: "other", states: [.pending], limit: 10, now: 1_500,
                        leaseMillis: 1_000
                    ).isEmpty)
                var item = try #require(claimed.first)
                item.state = .deleted
                #expect(try await first.record(tenant: Self.tenant, worker: "slow", item: item, release: true) != nil)
            }
        }
    }

    @Test func aStaleVersionWritesNothing() async throws {
        try await PostgresTestDatabase.make { testDatabase in
            try await withQueues(testDatabase, items: 1) { first, _ in
                var item = try #require(
                    try await first.claim(
                        tenant: Self.tenant, worker: "w", states: [.pending], limit: 1, now: 0, leaseMillis: 1_000
                    ).first)
                item.attempts = 1
                let written = try #require(
                    try await first.record(tenant: Self.tenant, worker: "w", item: item, release: false))
                // The version read before that write is stale now.
                item.state = .deleted
                #expect(try await first.record(tenant: Self.tenant, worker: "w", item: item, release: true) == nil)
                var current = written
                current.state = .deleted
                #expect(
                    try await first.record(tenant: Self.tenant, worker: "w", item: current, release: true)?.state
                        == .deleted)
            }
        }
    }

    /// 100 reservations made at the same moment by workers on two machines: `burst` go at
    /// once, then one every interval, never two in one slot — the limit is the tenant's, not
    /// each worker's.
    @Test func workersOnTwoMachinesShareOneRateLimit() async throws {
        try await PostgresTestDatabase.make { testDatabase in
            try await withQueues(testDatabase, items: 0) { first, second in
                let limiters = [
                    PostgresRateLimiter(database: first.database), PostgresRateLimiter(database: second.database),
                ]
                let now: Int64 = 1_000_000_000
                let slots = try await withThrowingTaskGroup(of: Int64.self) { group in
                    for index in 0..<100 {
                        let limiter = limiters[index % 2]
                        group.addTask {
                            try await limiter.reserve(tenant: Self.tenant, perSecond: 10, burst: 5, nowMicros: now)
                        }
                    }
                    var all: [Int64] = []
                    for try await slot in group { all.append(slot) }
                    return all.sorted()
                }
                let expected = (0..<100).map { now + Int64(max(0, $0 - 4)) * 100_000 }
                #expect(slots == expected)
                // A quiet spell refills the burst.
                let later = now + 60_000_000
                #expect(
                    try await limiters[0].reserve(tenant: Self.tenant, perSecond: 10, burst: 5, nowMicros: later)
                        == later)
            }
        }
    }

    /// Two migrated databases' queues (two pools) with the tenant and `items` pending items.
    private func withQueues(
        _ testDatabase: PostgresTestDatabase, items: Int,
        _ body: (PostgresCleanupQueue, PostgresCleanupQueue) async throws -> Void
    ) async throws {
        try await withDatabase(testDatabase) { first in
            _ = try await PostgresMigrator.migrate(first)
            try await first.withConnection("seeding") { connection in
                _ = try await connection.query(
                    """
                    INSERT INTO tenants (name, is_sandbox, policy, created_at)
                    VALUES (\(Self.tenant.rawValue), FALSE, '{}', 0)
                    """, logger: first.logger)
                _ = try await connection.query(
                    """
                    INSERT INTO cleanup_items (tenant, suborg_id, reason, first_seen_at, state, updated_at)
                    SELECT \(Self.tenant.rawValue), 'suborg-' || lpad(n::TEXT, 4, '0'), 'unreferenced', 0, 'pending', 0
                    FROM generate_series(1, \(items)) AS n
                    """, logger: first.logger)
            }
            try await withDatabase(testDatabase) { second in
                try await body(PostgresCleanupQueue(database: first), PostgresCleanupQueue(database: second))
            }
        }
    }
}
