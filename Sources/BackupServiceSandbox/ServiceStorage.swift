import BackupModel
import BackupService
import Foundation

/// The Backup Service's three stores, in memory: S3 (`{id}/backup`, `{id}/metadata` with
/// ETags), the DynamoDB FactorLookup table (hash key `PK`, GSI on `BackupId`) and the Redis keys
/// (used challenge hashes, sync-factor tokens, used OIDC nonces, with their TTLs).
///
/// Each call is one storage operation, as the service makes them, so a route that fails between
/// two of them leaves what the real service would leave. With a directory, every S3 and
/// FactorLookup change is written through in the export layout the console imports
/// (`DIR/<id>/metadata` in the stored form, `DIR/<id>/backup`, `DIR/factor_lookup.jsonl`);
/// Redis state lives only as long as the process, as it would across a Redis restart.
public final class ServiceStorage: ServiceBackend, @unchecked Sendable {
    /// One FactorLookup item.
    public struct LookupItem: Sendable, Equatable, Codable {
        public var backupId: String
        /// Epoch milliseconds.
        public var createdAt: Int64
    }

    /// What `use_sync_factor_token` answers.
    public enum SyncTokenUse: Sendable, Equatable {
        case notFound
        case alreadyUsed
        case used(backupId: String)
    }

    private let lock = NSLock()
    // Everything below is guarded by `lock`.
    private var metadataObjects: [String: (metadata: BackupMetadata, etag: Int)] = [:]
    private var blobs: [String: [UInt8]] = [:]
    private var lookup: [String: LookupItem] = [:]
    private var byBackup: [String: Set<String>] = [:]
    private var usedChallenges: [String: Int64] = [:]
    private var syncTokens: [String: (used: Bool, backupId: String, expires: Int64)] = [:]
    private var usedNonces: [String: Int64] = [:]
    private var nextETag = 1
    let layout: ExportLayout?

    /// Empty storage, kept in memory only.
    public init() { layout = nil }

    /// Storage over an export directory: loaded now, written through on every change.
    /// - Throws: ``ConsoleError`` `invalid_export` when `directory` is not a directory.
    public init(directory: String) throws(ConsoleError) {
        let layout = try ExportLayout(directory: directory)
        self.layout = layout
        let loaded = layout.load()
        for (id, entry) in loaded.backups {
            if let metadata = entry.metadata {
                metadataObjects[id] = (metadata, nextETag)
                nextETag += 1
            }
            if let blob = entry.blob { blobs[id] = blob }
        }
        for (pk, item) in loaded.rows {
            lookup[pk] = item
            byBackup[item.backupId, default: []].insert(pk)
        }
    }

    // MARK: S3

    /// `GetObject {id}/metadata` with its ETag.
    public func getMetadata(_ id: String) -> (metadata: BackupMetadata, etag: Int)? {
        lock.withLock { metadataObjects[id] }
    }

    /// `PutObject {id}/metadata`: `ifNoneMatch` (create) or `ifMatch` (optimistic update);
    /// `false` when the precondition fails (412).
    public func putMetadata(_ metadata: BackupMetadata, ifNoneMatch: Bool = false, ifMatch: Int? = nil)
        throws(ConsoleError) -> Bool
    {
        let id = metadata.id
        let stored: Bool = lock.withLock {
            let current = metadataObjects[id]
            if ifNoneMatch, current != nil { return false }
            if let ifMatch, current?.etag != ifMatch { return false }
            metadataObjects[id] = (metadata, nextETag)
            nextETag += 1
            return true
        }
        if stored { try layout?.writeMetadata(metadata) }
        return stored
    }

    /// `PutObject {id}/backup`; `false` when `ifNoneMatch` and the blob exists.
    public func putBlob(_ id: String, _ bytes: [UInt8], ifNoneMatch: Bool = false) throws(ConsoleError) -> Bool {
        let stored: Bool = lock.withLock {
            if ifNoneMatch, blobs[id] != nil { return false }
            blobs[id] = bytes
            return true
        }
        if stored { try layout?.writeBlob(id, bytes) }
        return stored
    }

    /// `GetObject {id}/backup`.
    public func getBlob(_ id: String) -> [UInt8]? { lock.withLock { blobs[id] } }

    /// `DeleteObject {id}/backup` (deleting a missing object succeeds, as in S3).
    public func deleteBlob(_ id: String) throws(ConsoleError) {
        lock.withLock { _ = blobs.removeValue(forKey: id) }
        try layout?.delete(id, "backup")
    }

    /// `DeleteObject {id}/metadata`.
    public func deleteMetadata(_ id: String) throws(ConsoleError) {
        lock.withLock { _ = metadataObjects.removeValue(forKey: id) }
        try layout?.delete(id, "metadata")
    }

    // MARK: DynamoDB FactorLookup

    /// `GetItem`: the backup a key points at.
    public func lookupBackup(_ pk: String) -> String? { lock.withLock { lookup[pk]?.backupId } }

    /// `PutItem` with `attribute_not_exists(PK)`; `false` when the key exists.
    public func insertLookup(_ pk: String, backupId: String, nowMillis: Int64) throws(ConsoleError) -> Bool {
        let inserted: Bool = lock.withLock {
            guard lookup[pk] == nil else { return false }
            lookup[pk] = LookupItem(backupId: backupId, createdAt: nowMillis)
            byBackup[backupId, default: []].insert(pk)
            return true
        }
        if inserted { try persistIndex() }
        return inserted
    }

    /// `DeleteItem` (a missing key is no error).
    public func deleteLookup(_ pk: String) throws(ConsoleError) {
        let removed: Bool = lock.withLock {
            guard let item = lookup.removeValue(forKey: pk) else { return false }
            byBackup[item.backupId]?.remove(pk)
            if byBackup[item.backupId]?.isEmpty == true { byBackup[item.backupId] = nil }
            return true
        }
        if removed { try persistIndex() }
    }

    /// The GSI query: every key of a backup, sorted.
    public func lookupKeys(backupId: String) -> [String] {
        lock.withLock { (byBackup[backupId] ?? []).sorted() }
    }

    /// Every item, sorted by key (a table scan).
    public func lookupRows() -> [(pk: String, item: LookupItem)] {
        lock.withLock { lookup.sorted { $0.key < $1.key }.map { ($0.key, $0.value) } }
    }

    /// Every backup id with metadata or a blob, sorted.
    public func backupIds() -> [String] {
        lock.withLock { Set(metadataObjects.keys).union(blobs.keys).sorted() }
    }

    func persistIndex() throws(ConsoleError) {
        guard let layout else { return }
        try layout.writeIndex(lookupRows())
    }

    // MARK: Redis

    /// `SET usedChallengeHash#<hash> NX EX ttl`: `false` when the token was used.
    public func useChallengeToken(hash: String, now: Int64, ttl: Int64) -> Bool {
        lock.withLock {
            if let expires = usedChallenges[hash], expires > now { return false }
            usedChallenges[hash] = now + ttl
            if usedChallenges.count % 4096 == 0 { usedChallenges = usedChallenges.filter { $0.value > now } }
            return true
        }
    }

    /// Stores a new sync-factor token for `backupId` (unused) for `ttl` seconds.
    public func createSyncFactorToken(hash: String, backupId: String, now: Int64, ttl: Int64) {
        lock.withLock {
            syncTokens[hash] = (false, backupId, now + ttl)
            if syncTokens.count % 4096 == 0 { syncTokens = syncTokens.filter { $0.value.expires > now } }
        }
    }

    /// The service's atomic check-and-set of a sync-factor token (the TTL is kept).
    public func useSyncFactorToken(hash: String, now: Int64) -> SyncTokenUse {
        lock.withLock {
            guard let entry = syncTokens[hash], entry.expires > now else { return .notFound }
            guard !entry.used else { return .alreadyUsed }
            syncTokens[hash] = (true, entry.backupId, entry.expires)
            return .used(backupId: entry.backupId)
        }
    }

    /// Marks a used sync-factor token unused again (its write did not land); `false` if gone.
    public func unuseSyncFactorToken(hash: String, now: Int64) -> Bool {
        lock.withLock {
            guard let entry = syncTokens[hash], entry.expires > now else { return false }
            syncTokens[hash] = (false, entry.backupId, entry.expires)
            return true
        }
    }

    /// `SET usedOidcNonceHash#<hash> NX EX 1 year`: `false` when the nonce was used.
    public func useOIDCNonce(key: String, now: Int64) -> Bool {
        lock.withLock {
            if let expires = usedNonces[key], expires > now { return false }
            usedNonces[key] = now + 365 * 24 * 3600
            return true
        }
    }

    // MARK: ServiceBackend

    public func metadata(backupId: String) async throws(ConsoleError) -> BackupMetadata? {
        getMetadata(backupId)?.metadata
    }

    public func blobExists(backupId: String) async throws(ConsoleError) -> Bool { getBlob(backupId) != nil }

    /// The reset's steps 6–7 as one call (``BackupServiceEmulator`` runs them one by one).
    public func consume(tokenHash: String, backupId: String, now: Int64) async throws(ConsoleError) -> Bool {
        guard useChallengeToken(hash: tokenHash, now: now, ttl: BackupServiceEmulator.tokenLifetimeSeconds) else {
            return false
        }
        try deleteBlob(backupId)
        try deleteMetadata(backupId)
        for pk in lookupKeys(backupId: backupId) { try deleteLookup(pk) }
        return true
    }
}
