import BackupModel
import Foundation
import GRDB

/// The store operations the Turnkey cleanup and the Turnkey sandbox need beyond ``ConsoleStore``.
///
/// A separate protocol so the core protocol stays as it is; ``SQLiteConsoleStore`` conforms.
/// Everything here is bounded: pages, `IN` lists of one page, per-state counts.
public protocol CleanupJournalStore: ConsoleStore {
    /// Which of `ids` (one page, ≤ 1000) some backup of the tenant references.
    func referencedSubOrgs(tenant: TenantName, among ids: [String]) async throws(ConsoleError) -> Set<String>
    /// Up to `limit` sandbox sub-org ids greater than `after`, in id order.
    func sandboxSubOrgPage(tenant: TenantName, after: String, limit: Int) async throws(ConsoleError) -> [String]
    func sandboxSubOrgExists(tenant: TenantName, subOrgId: String) async throws(ConsoleError) -> Bool
    func sandboxSubOrgCount(tenant: TenantName) async throws(ConsoleError) -> Int
    /// Records sandbox sub-orgs with their Turnkey state (`id → JSON`, as the Turnkey sandbox
    /// keeps a sub-org), replacing the state of ids already there; returns how many were new.
    @discardableResult
    func putSandboxSubOrgStates(tenant: TenantName, _ states: [String: String], createdAt: Int64, audit: AuditDraft?)
        async throws(ConsoleError) -> Int
    /// A sandbox sub-org's Turnkey state; `nil` when it has none (or is not there).
    func sandboxSubOrgState(tenant: TenantName, subOrgId: String) async throws(ConsoleError) -> String?
    /// Stores (or replaces) the user-stamped break-glass request for a journaled sub-org.
    func saveStampedTeardown(tenant: TenantName, _ teardown: StampedTeardown, audit: AuditDraft?)
        async throws(ConsoleError)
    func stampedTeardown(tenant: TenantName, subOrgId: String) async throws(ConsoleError) -> StampedTeardown?
    /// How many journal items are in each state.
    func cleanupCounts(tenant: TenantName) async throws(ConsoleError) -> [CleanupItemRecord.State: Int]
}

/// A break-glass deletion stamped by the user (`recovery stamp`): the exact body and its stamp.
public struct StampedTeardown: Sendable, Equatable, Codable {
    public var subOrgId: String
    public var body: String
    /// The `X-Stamp` value (secp256k1 scheme); not a secret, it authorises this one body only.
    public var stamp: String
    public var submittedAt: Int64

    public init(subOrgId: String, body: String, stamp: String, submittedAt: Int64) {
        self.subOrgId = subOrgId
        self.body = body
        self.stamp = stamp
        self.submittedAt = submittedAt
    }
}

extension SQLiteConsoleStore: CleanupJournalStore {
    /// One range scan of the `suborg_refs` primary key between the page's smallest and largest
    /// id when that range is small (a `list_suborgs` page is a sorted slice of ids, and the store
    /// references most listed sub-orgs), else an indexed `IN` query; both are one statement.
    public func referencedSubOrgs(tenant: TenantName, among ids: [String]) async throws(ConsoleError) -> Set<String> {
        // Bounds in SQLite's BINARY order (bytes), not Swift's Unicode order, so no id falls outside.
        let byBytes: (String, String) -> Bool = { $0.utf8.lexicographicallyPrecedes($1.utf8) }
        guard let low = ids.min(by: byBytes), let high = ids.max(by: byBytes) else { return [] }
        let wanted = Set(ids)
        let rangeLimit = 4 * ids.count + 64
        let inRange = try await read("checking \(ids.count) sub-org references") { db in
            try String.fetchAll(
                db.cachedStatement(
                    sql: "SELECT suborg_id FROM suborg_refs WHERE tenant = ? AND suborg_id BETWEEN ? AND ? LIMIT ?"),
                arguments: [tenant.rawValue, low, high, rangeLimit])
        }
        if inRange.count < rangeLimit { return Set(inRange.lazy.filter { wanted.contains($0) }) }
        var found: Set<String> = []
        for chunk in stride(from: 0, to: ids.count, by: 500).map({ ids[$0..<min($0 + 500, ids.count)] }) {
            let marks = Array(repeating: "?", count: chunk.count).joined(separator: ",")
            let rows = try await read("checking \(chunk.count) sub-org references") { db in
                try String.fetchAll(
                    db.cachedStatement(
                        sql: "SELECT DISTINCT suborg_id FROM suborg_refs WHERE tenant = ? AND suborg_id IN (\(marks))"),
                    arguments: StatementArguments([tenant.rawValue] + Array(chunk)))
            }
            found.formUnion(rows)
        }
        return found
    }

    public func sandboxSubOrgPage(tenant: TenantName, after: String, limit: Int) async throws(ConsoleError) -> [String]
    {
        try await read("listing sandbox sub-orgs") { db in
            try String.fetchAll(
                db.cachedStatement(
                    sql: """
                        SELECT suborg_id FROM sandbox_suborgs WHERE tenant = ? AND suborg_id > ?
                        ORDER BY suborg_id LIMIT ?
                        """),
                arguments: [tenant.rawValue, after, Self.clampBatch(limit)])
        }
    }

    public func sandboxSubOrgExists(tenant: TenantName, subOrgId: String) async throws(ConsoleError) -> Bool {
        try await read("reading sandbox sub-org \(subOrgId)") { db in
            try Bool.fetchOne(
                db.cachedStatement(sql: "SELECT 1 FROM sandbox_suborgs WHERE tenant = ? AND suborg_id = ?"),
                arguments: [tenant.rawValue, subOrgId]) != nil
        }
    }

    public func sandboxSubOrgCount(tenant: TenantName) async throws(ConsoleError) -> Int {
        try await read("counting sandbox sub-orgs") { db in
            try Int.fetchOne(
                db, sql: "SELECT count(*) FROM sandbox_suborgs WHERE tenant = ?", arguments: [tenant.rawValue])
                ?? 0
        }
    }

    public func saveStampedTeardown(tenant: TenantName, _ teardown: StampedTeardown, audit: AuditDraft?)
        async throws(ConsoleError)
    {
        try await write("storing the stamped teardown of \(teardown.subOrgId)") { db in
            try db.execute(
                sql: """
                    INSERT INTO cleanup_stamped (tenant, suborg_id, body, stamp, submitted_at) VALUES (?, ?, ?, ?, ?)
                    ON CONFLICT (tenant, suborg_id) DO UPDATE
                    SET body = excluded.body, stamp = excluded.stamp, submitted_at = excluded.submitted_at
                    """,
                arguments: [tenant.rawValue, teardown.subOrgId, teardown.body, teardown.stamp, teardown.submittedAt])
            if let audit { _ = try self.insertAudit(audit, db) }
        }
    }

    public func stampedTeardown(tenant: TenantName, subOrgId: String) async throws(ConsoleError) -> StampedTeardown? {
        try await read("reading the stamped teardown of \(subOrgId)") { db in
            try Row.fetchOne(
                db, sql: "SELECT body, stamp, submitted_at FROM cleanup_stamped WHERE tenant = ? AND suborg_id = ?",
                arguments: [tenant.rawValue, subOrgId]
            ).map {
                StampedTeardown(
                    subOrgId: subOrgId, body: $0["body"], stamp: $0["stamp"], submittedAt: $0["submitted_at"])
            }
        }
    }

    public func cleanupCounts(tenant: TenantName) async throws(ConsoleError) -> [CleanupItemRecord.State: Int] {
        let rows = try await read("counting cleanup items") { db in
            try Row.fetchAll(
                db, sql: "SELECT state, count(*) AS items FROM cleanup_items WHERE tenant = ? GROUP BY state",
                arguments: [tenant.rawValue]
            ).map { (row: Row) -> (String, Int) in (row["state"], row["items"]) }
        }
        var counts: [CleanupItemRecord.State: Int] = [:]
        for (state, count) in rows {
            if let state = CleanupItemRecord.State(rawValue: state) { counts[state] = count }
        }
        return counts
    }
}
