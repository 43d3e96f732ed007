import BackupCrypto
import BackupModel
import Foundation
import GRDB
import Testing

@testable import ConsoleStore
@testable import SQLiteStore

/// Fixed audit clock (unix ms) so entries are reproducible.
let testClockMillis: Int64 = 1_780_000_000_000
let alpha = try! TenantName("alpha")
let beta = try! TenantName("beta")

/// Opens a real SQLite store in a fresh temporary directory with tenants `alpha` (production)
/// and `beta` (sandbox), runs `body`, and removes the directory.
func withStore<T>(_ body: (SQLiteConsoleStore, URL) async throws -> T) async throws -> T {
    let dir = FileManager.default.temporaryDirectory.appendingPathComponent("consolestore-\(UUID().uuidString)")
    defer { try? FileManager.default.removeItem(at: dir) }
    let store = try SQLiteConsoleStore(path: dir.appendingPathComponent("db/console.db").path) { testClockMillis }
    try await store.createTenant(
        TenantRecord(name: alpha, isSandbox: false, createdAt: 1), audit: draft("tenant.create", target: "alpha"))
    try await store.createTenant(
        TenantRecord(name: beta, isSandbox: true, createdAt: 1), audit: draft("tenant.create", target: "beta"))
    return try await body(store, dir)
}

/// The path of a store file (not yet made) in a fresh temporary directory, which is removed
/// after `body`: for tests that build a store at an older schema before opening it.
func withStorePath<T>(_ label: String, _ body: (String) async throws -> T) async throws -> T {
    let dir = FileManager.default.temporaryDirectory.appendingPathComponent("\(label)-\(UUID().uuidString)")
    defer { try? FileManager.default.removeItem(at: dir) }
    try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
    return try await body(dir.appendingPathComponent("console.db").path)
}

/// A store file at `path` migrated only up to `migration`, with the tenant `alpha`: what an
/// older release left, for a test of the migrations after it.
func olderStore(at path: String, upTo migration: String) throws -> DatabaseQueue {
    let queue = try DatabaseQueue(path: path)
    try Migrations.migrator.migrate(queue, upTo: migration)
    try queue.write { db in
        try db.execute(sql: "INSERT INTO tenants (name, is_sandbox, policy, created_at) VALUES ('alpha', 0, '{}', 1)")
    }
    return queue
}

func draft(_ action: String, tenant: TenantName? = nil, target: String? = nil) -> AuditDraft {
    AuditDraft(operatorName: "tester", tenant: tenant?.rawValue, action: action, target: target)
}

/// Fixture factory over a seeded stream: valid-looking backup ids, credential ids, uuids.
final class Fixtures {
    let rng: SeededRandom

    init(seed: UInt64 = 42) { rng = SeededRandom(seed: seed) }

    /// A real secp256k1 point, as the importer requires.
    func backupId() -> String {
        guard let key = try? Secp256k1.publicKey(secretKey: Secp256k1.generateSecretKey(using: rng)) else {
            preconditionFailure("a generated secret key is always valid")
        }
        return BackupAccountID(compressedPublicKey: key).rawValue
    }
    func credential() -> String { Base64.encode(rng.bytes(24), alphabet: .url, padding: false) }
    func uuid() -> String { rng.uuid() }

    func metadata(
        id: String, passkeys: [String] = [], googleSubs: [String] = [], subOrgs: [String] = [], sync: [String] = []
    ) -> BackupMetadata {
        let at = Timestamp(seconds: 1_770_000_000)
        var factors = passkeys.map {
            Factor(id: uuid(), createdAt: at, kind: .passkey(PasskeyFactor(credentialId: $0, label: "1Password")))
        }
        factors += googleSubs.map {
            Factor(
                id: uuid(), createdAt: at,
                kind: .oidcAccount(
                    OIDCAccountFactor(
                        account: OIDCAccount(provider: .google, sub: $0, maskedEmail: "j***@gmail.com"),
                        turnkeyProviderId: uuid())))
        }
        let keys: [EncryptionKey] =
            // The service keeps one key per kind: one PRF key however many passkeys.
            (passkeys.isEmpty ? [] : [.prf(encryptedKey: "ab12")])
            + subOrgs.map {
                .turnkey(
                    TurnkeyKey(
                        encryptedKey: "cd34", turnkeyAccountId: $0, turnkeyUserId: uuid(), turnkeyPrivateKeyId: uuid()))
            }
        return BackupMetadata(
            id: id, manifestHash: Hex.encode(rng.bytes(32)), factors: factors,
            syncFactors: sync.map { Factor(id: uuid(), createdAt: at, kind: .ecKeypair(publicKey: $0)) }, keys: keys)
    }

    /// A write whose rows are exactly what the metadata implies.
    func write(_ metadata: BackupMetadata, blob: Data? = nil) -> BackupWrite {
        let record = BackupRecord(
            backupId: metadata.id, metadata: metadata, blobSize: blob?.count,
            blobSHA256: blob.map { Hex.encode(SHA256.hash($0)) }, importedAt: 100, updatedAt: 100)
        return BackupWrite(
            record: record, blob: blob,
            lookupRows: metadata.lookupKeys.map { LookupRow(pk: $0.rawValue, backupId: metadata.id) })
    }
}

func passkeyPK(_ credential: String) -> String { "MAIN#PK|\(credential)" }

/// Recomputes every hash of the chain from the entries alone.
func chainIsValid(_ entries: [AuditEntry]) -> Bool {
    var prev = AuditEntry.genesisHash
    for (i, entry) in entries.enumerated() {
        guard entry.seq == Int64(i + 1), entry.prevHash == prev,
            entry.hash == SHA256.hex(Array(prev.utf8) + entry.canonicalBytes)
        else { return false }
        prev = entry.hash
    }
    return true
}
