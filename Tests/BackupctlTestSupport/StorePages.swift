import BackupModel
import ConsoleStore

/// Tests walk the store's keyset pages with these: each page is one read, handed to `body`
/// before the next is asked for, until a page comes back short.
extension ConsoleStore {
    public func forEachBackup(
        tenant: TenantName, batchSize: Int, _ body: ([BackupRecord]) async throws -> Void
    ) async throws {
        try await Self.walk(
            batchSize, key: \.backupId, { try await backups(tenant: tenant, after: $0, limit: $1) }, body)
    }

    public func forEachLookupRow(
        tenant: TenantName, batchSize: Int, _ body: ([LookupRow]) async throws -> Void
    ) async throws {
        try await Self.walk(batchSize, key: \.pk, { try await lookupRows(tenant: tenant, after: $0, limit: $1) }, body)
    }

    public func forEachBackupSummary(
        tenant: TenantName, batchSize: Int, _ body: ([BackupSummary]) async throws -> Void
    ) async throws {
        try await Self.walk(
            batchSize, key: \.backupId, { try await backupSummaries(tenant: tenant, after: $0, limit: $1) }, body)
    }

    public func forEachBackupHealth(
        tenant: TenantName, batchSize: Int, _ body: ([BackupHealthRow]) async throws -> Void
    ) async throws {
        try await Self.walk(
            batchSize, key: \.summary.backupId, { try await backupHealth(tenant: tenant, after: $0, limit: $1) }, body)
    }

    public func forEachReferencedSubOrg(
        tenant: TenantName, batchSize: Int, _ body: ([String]) async throws -> Void
    ) async throws {
        try await Self.walk(
            batchSize, key: \.self, { try await referencedSubOrgs(tenant: tenant, after: $0, limit: $1) }, body)
    }

    private static func walk<Item>(
        _ limit: Int, key: KeyPath<Item, String>, _ page: (String?, Int) async throws -> [Item],
        _ body: ([Item]) async throws -> Void
    ) async throws {
        var after: String?
        while true {
            let items = try await page(after, limit)
            if !items.isEmpty { try await body(items) }
            guard items.count == limit, let last = items.last else { return }
            after = last[keyPath: key]
        }
    }
}

extension SandboxStore {
    public func forEachSandboxSubOrg(
        tenant: TenantName, batchSize: Int, _ body: ([String]) async throws -> Void
    ) async throws {
        var after = ""
        while true {
            let ids = try await sandboxSubOrgPage(tenant: tenant, after: after, limit: batchSize)
            if !ids.isEmpty { try await body(ids) }
            guard ids.count == batchSize, let last = ids.last else { return }
            after = last
        }
    }
}
