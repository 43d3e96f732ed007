import BackupModel
import ConsoleStore
import Foundation
import PostgresNIO

/// The sandbox's Turnkey sub-orgs and reset challenges, as ``SQLiteConsoleStore`` keeps them.
extension PostgresConsoleStore {
    @discardableResult
    public func addSandboxSubOrgs(tenant: TenantName, _ subOrgIds: [String], createdAt: Int64, audit: AuditDraft?)
        async throws(ConsoleError) -> Int
    {
        try await write("recording \(subOrgIds.count) sandbox sub-orgs") { connection in
            // One statement: ids already there keep their first time and do not count.
            let new =
                try await first(
                    """
                    WITH added AS (
                        INSERT INTO sandbox_suborgs (tenant, suborg_id, created_at)
                        SELECT \(tenant.rawValue), id, \(createdAt) FROM unnest(\(subOrgIds)::TEXT[]) AS id
                        ON CONFLICT DO NOTHING RETURNING 1)
                    SELECT count(*) FROM added
                    """, connection
                ) { try $0[0].decode(Int.self) } ?? 0
            if let audit { _ = try await insertAudit(audit, connection) }
            return new
        }
    }

    public func removeSandboxSubOrg(tenant: TenantName, subOrgId: String, audit: AuditDraft?) async throws(ConsoleError)
        -> Bool
    {
        try await write("removing sandbox sub-org \(subOrgId)") { connection in
            let removed = try await exists(
                """
                DELETE FROM sandbox_suborgs WHERE tenant = \(tenant.rawValue) AND suborg_id = \(subOrgId)
                RETURNING suborg_id
                """, connection)
            if let audit { _ = try await insertAudit(audit, connection) }
            return removed
        }
    }

    public func sandboxSubOrgPage(tenant: TenantName, after: String, limit: Int) async throws(ConsoleError) -> [String]
    {
        try await read("listing sandbox sub-orgs") { connection in
            try await all(
                """
                SELECT suborg_id FROM sandbox_suborgs WHERE tenant = \(tenant.rawValue) AND suborg_id > \(after)
                ORDER BY suborg_id LIMIT \(Self.clampBatch(limit))
                """, connection
            ) { try $0[0].decode(String.self) }
        }
    }

    public func sandboxSubOrgExists(tenant: TenantName, subOrgId: String) async throws(ConsoleError) -> Bool {
        try await read("reading sandbox sub-org \(subOrgId)") { connection in
            try await exists(
                "SELECT 1 FROM sandbox_suborgs WHERE tenant = \(tenant.rawValue) AND suborg_id = \(subOrgId)",
                connection)
        }
    }

    public func sandboxSubOrgCount(tenant: TenantName) async throws(ConsoleError) -> Int {
        try await read("counting sandbox sub-orgs") { connection in
            try await first("SELECT count(*) FROM sandbox_suborgs WHERE tenant = \(tenant.rawValue)", connection) {
                try $0[0].decode(Int.self)
            } ?? 0
        }
    }

    @discardableResult
    public func putSandboxSubOrgStates(
        tenant: TenantName, _ states: [String: String], createdAt: Int64, audit: AuditDraft?
    ) async throws(ConsoleError) -> Int {
        let sorted = states.sorted { $0.key < $1.key }
        let ids = sorted.map(\.key)
        let documents = sorted.map(\.value)
        return try await write("recording \(states.count) sandbox sub-orgs with their state") { connection in
            // One statement; `xmax = 0` tells an inserted row from an updated one.
            let new =
                try await first(
                    """
                    WITH put AS (
                        INSERT INTO sandbox_suborgs (tenant, suborg_id, created_at, state)
                        SELECT \(tenant.rawValue), id, \(createdAt), doc
                        FROM unnest(\(ids)::TEXT[], \(documents)::TEXT[]) AS given(id, doc)
                        ON CONFLICT (tenant, suborg_id) DO UPDATE SET state = excluded.state
                        RETURNING (xmax = 0) AS inserted)
                    SELECT count(*) FILTER (WHERE inserted) FROM put
                    """, connection
                ) { try $0[0].decode(Int.self) } ?? 0
            if let audit { _ = try await insertAudit(audit, connection) }
            return new
        }
    }

    public func sandboxSubOrgState(tenant: TenantName, subOrgId: String) async throws(ConsoleError) -> String? {
        try await read("reading the state of sandbox sub-org \(subOrgId)") { connection in
            try await first(
                "SELECT state FROM sandbox_suborgs WHERE tenant = \(tenant.rawValue) AND suborg_id = \(subOrgId)",
                connection
            ) { try $0[0].decode(String?.self) } ?? nil
        }
    }

    // MARK: Reset challenges

    private static let challengeColumns =
        "token_hash, tenant, backup_id, context, challenge, created_at, expires_at, used_at, sent_at"

    private static func challengeRecord(_ row: PostgresRandomAccessRow) throws -> ResetChallengeRecord {
        ResetChallengeRecord(
            tokenHash: try row["token_hash"].decode(String.self),
            tenant: try TenantName(try row["tenant"].decode(String.self)),
            backupId: try row["backup_id"].decode(String.self), context: try row["context"].decode(String.self),
            challenge: [UInt8](try row["challenge"].decode(Data.self)),
            createdAt: try row["created_at"].decode(Int64.self),
            expiresAt: try row["expires_at"].decode(Int64.self), usedAt: try row["used_at"].decode(Int64?.self),
            sentAt: try row["sent_at"].decode(Int64?.self))
    }

    public func insertResetChallenge(_ challenge: ResetChallengeRecord, audit: AuditDraft) async throws(ConsoleError) {
        try await write("storing a reset challenge for \(challenge.backupId)") { connection in
            try await execute(
                """
                INSERT INTO reset_challenges (\(unescaped: Self.challengeColumns))
                VALUES (\(challenge.tokenHash), \(challenge.tenant.rawValue), \(challenge.backupId),
                    \(challenge.context), \(Data(challenge.challenge)), \(challenge.createdAt), \(challenge.expiresAt),
                    \(challenge.usedAt), \(challenge.sentAt))
                """, connection)
            _ = try await insertAudit(audit, connection)
        }
    }

    public func resetChallenge(tokenHash: String) async throws(ConsoleError) -> ResetChallengeRecord? {
        try await read("reading a reset challenge") { connection in
            try await first(
                "SELECT \(unescaped: Self.challengeColumns) FROM reset_challenges WHERE token_hash = \(tokenHash)",
                connection, Self.challengeRecord)
        }
    }
}
