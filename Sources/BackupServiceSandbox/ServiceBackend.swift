import BackupModel
import BackupService
import ConsoleStore
import Foundation

/// What the console-facing routes (`/v1/backup/status`, `/v1/reset`) need of the service's
/// storage; every backend has this much.
public protocol ServiceBackend: Sendable {
    /// The stored metadata (`{id}/metadata`), `nil` when there is none.
    func metadata(backupId: String) async throws(ConsoleError) -> BackupMetadata?
    /// Whether the sealed blob (`{id}/backup`) exists: the service's HEAD before a reset.
    func blobExists(backupId: String) async throws(ConsoleError) -> Bool
    /// `/v1/reset` steps 6–7: mark the token used (the service's Redis set) and delete the blob,
    /// the metadata, then every FactorLookup row of the backup. `false` when the token was
    /// already used, and then nothing is deleted.
    func consume(tokenHash: String, backupId: String, now: Int64) async throws(ConsoleError) -> Bool
}

/// A sandbox tenant's backups in the console's own store: the store is the service.
///
/// It backs the console's routes only. The full API (create, sync, factors) needs S3,
/// DynamoDB and Redis of its own, which ``ServiceStorage`` provides; the console's store is the
/// console's copy, and nothing but an import writes it.
public struct StoreBackend: ServiceBackend {
    let store: any SandboxStore
    let tenant: TenantName

    public init(store: any SandboxStore, tenant: TenantName) {
        self.store = store
        self.tenant = tenant
    }

    public func metadata(backupId: String) async throws(ConsoleError) -> BackupMetadata? {
        try await store.backup(tenant: tenant, id: backupId)?.metadata
    }

    public func blobExists(backupId: String) async throws(ConsoleError) -> Bool {
        try await store.backup(tenant: tenant, id: backupId)?.blobSize != nil
    }

    /// One store transaction, so a killed process never leaves a burned token on an intact backup.
    public func consume(tokenHash: String, backupId: String, now: Int64) async throws(ConsoleError) -> Bool {
        try await store.sandboxServiceReset(tenant: tenant, tokenHash: tokenHash, backupId: backupId, now: now)
    }
}

/// The directory-backed storage of `backupctl sandbox backup-service --export DIR`.
public typealias ExportBackend = ServiceStorage
