import BackupModel
import ConsoleStore
import Foundation
import GRDB
import Testing

@testable import SQLiteStore

/// Migration `v11-catalog-parity` on a store made at v9: the rebuilt tables keep their rows and
/// their dependants' rows (foreign keys off while it runs), a half-set claim is cleared, and the
/// new checks then refuse one.
@Suite struct CatalogParityMigrationTests {
    @Test func aV9StoreKeepsItsRowsAndGainsTheChecks() async throws {
        try await withStorePath("parity") { path in
            do {
                let queue = try olderStore(at: path, upTo: "v9-cleanup-queue")
                try await queue.write { db in
                    try db.execute(
                        sql: """
                            INSERT INTO cleanup_items (tenant, suborg_id, reason, first_seen_at, state, updated_at,
                                claimed_by, lease_expires_at)
                            VALUES ('alpha', 's1', 'reset', 1, 'pending', 1, 'w1', 99), ('alpha', 's2', 'reset', 1,
                                'pending', 1, 'half', NULL)
                            """)
                    try db.execute(
                        sql: """
                            INSERT INTO cleanup_stamped (tenant, suborg_id, body, stamp, submitted_at)
                            VALUES ('alpha', 's1', '{}', 'st', 5)
                            """)
                    try db.execute(
                        sql: """
                            INSERT INTO reset_challenges (token_hash, tenant, backup_id, context, challenge, created_at,
                                expires_at, sending_by) VALUES (?, 'alpha', 'b', 'reset', x'01', 1, 2, 'half')
                            """, arguments: [String(repeating: "ab", count: 32)])
                }
            }
            let store = try SQLiteConsoleStore(path: path)
            let alpha = try TenantName("alpha")
            #expect(try await store.stampedTeardown(tenant: alpha, subOrgId: "s1")?.stamp == "st")
            #expect(try await store.renewCleanupClaims(tenant: alpha, worker: "w1", now: 1, leaseMillis: 5) == ["s1"])
            #expect(try await store.renewCleanupClaims(tenant: alpha, worker: "half", now: 1, leaseMillis: 5).isEmpty)
            #expect(try await store.cleanupItems(tenant: alpha, states: nil).map(\.subOrgId) == ["s1", "s2"])
            #expect(
                try await store.claimResetSend(
                    tokenHash: String(repeating: "ab", count: 32), subOrgIds: [], holder: "h", now: 1, until: 2,
                    takeOver: nil) == .claimed(sentBefore: false))
            let refused = await #expect(throws: DatabaseError.self) {
                try await store.pool.write { db in
                    try db.execute(sql: "UPDATE cleanup_items SET claimed_by = 'x', lease_expires_at = NULL")
                }
            }
            #expect(refused?.extendedResultCode == .SQLITE_CONSTRAINT_CHECK)
            let indexes = try await store.pool.read { db in
                try String.fetchAll(
                    db,
                    sql:
                        "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'cleanup_items' AND sql IS NOT NULL ORDER BY name"
                )
            }
            #expect(indexes == ["cleanup_items_by_state", "cleanup_items_queued"])
        }
    }
}
