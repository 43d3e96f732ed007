import BackupModel
import BackupService
import ConsoleStore
import Foundation

/// Where the sandbox Backup Service keeps what the real one keeps in S3, DynamoDB and Redis.
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

/// A Backup Service export on disk (`DIR/<id>/metadata`, `DIR/<id>/backup`,
/// `DIR/factor_lookup.jsonl`), served by `backupctl sandbox backup-service --export DIR`.
/// A reset deletes the files and the backup's rows, as the service deletes its objects.
public final class ExportBackend: ServiceBackend, @unchecked Sendable {
    let root: URL
    private let lock = NSLock()
    // Guarded by `lock`.
    private var used: Set<String> = []

    public init(directory: String) throws(ConsoleError) {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory), isDirectory.boolValue
        else {
            throw .invalid("invalid_export", "The export directory \(directory) does not exist.")
        }
        root = URL(fileURLWithPath: directory, isDirectory: true)
    }

    /// Only well-formed ids name files: nothing else may reach the file system.
    private func folder(_ backupId: String) -> URL? {
        guard BackupServiceWire.isBackupAccountIdShape(backupId) else { return nil }
        return root.appendingPathComponent(backupId, isDirectory: true)
    }

    public func metadata(backupId: String) async throws(ConsoleError) -> BackupMetadata? {
        guard let file = folder(backupId)?.appendingPathComponent("metadata"),
            let data = FileManager.default.contents(atPath: file.path)
        else { return nil }
        return try BackupMetadata.decode(data)
    }

    public func blobExists(backupId: String) async throws(ConsoleError) -> Bool {
        guard let file = folder(backupId)?.appendingPathComponent("backup") else { return false }
        var isDirectory: ObjCBool = false
        return FileManager.default.fileExists(atPath: file.path, isDirectory: &isDirectory) && !isDirectory.boolValue
    }

    public func consume(tokenHash: String, backupId: String, now: Int64) async throws(ConsoleError) -> Bool {
        guard lock.withLock({ used.insert(tokenHash).inserted }) else { return false }
        try deleteBackup(backupId: backupId)
        return true
    }

    func deleteBackup(backupId: String) throws(ConsoleError) {
        guard let folder = folder(backupId) else { return }
        lock.lock()
        defer { lock.unlock() }
        do {
            for name in ["backup", "metadata"] {
                try? FileManager.default.removeItem(at: folder.appendingPathComponent(name))
            }
            try? FileManager.default.removeItem(at: folder)
            let index = root.appendingPathComponent("factor_lookup.jsonl")
            guard let data = FileManager.default.contents(atPath: index.path) else { return }
            let kept = String(decoding: data, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: true)
                .filter { line in
                    guard let row = try? JSONDecoder().decode(IndexRow.self, from: Data(line.utf8)) else { return true }
                    return row.BackupId != backupId
                }
            let text = kept.isEmpty ? "" : kept.joined(separator: "\n") + "\n"
            try Data(text.utf8).write(to: index, options: .atomic)
        } catch {
            throw ConsoleError.internalError(
                "Rewriting the export's factor_lookup.jsonl failed: \(error.localizedDescription)")
        }
    }

    private struct IndexRow: Decodable {
        var BackupId: String
    }
}
