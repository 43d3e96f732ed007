import Access
import BackupCrypto
import BackupModel
import BackupctlTestSupport
import ConsoleStore
import Foundation

@testable import Inspect

/// A real store (SQLite in a fresh temporary directory, or a PostgreSQL database of its own),
/// removed when the fixture goes away,
/// with `root` bootstrapped as admin of the sandbox tenant.
final class TempStore {
    let opened: OpenedStore
    var store: any FullConsoleStore { opened.store }
    let time = ManualTime(1_790_000_000_000)
    let op: OperatorRecord
    let session: Session
    let rng = SeededRandom(seed: 99)

    /// A store of `backend` (SQLite unless named).
    init(_ backend: TestBackend = .sqlite) async throws {
        let time = self.time
        opened = try await backend.open(clock: { time.now })
        let access = AccessService(store: opened.store, clock: .manual(time), random: SeededRandom(seed: 7))
        let token = try await access.bootstrap(admin: try OperatorName("root"))
        op = try await access.authenticate(token: token)
        session = try await access.session(operator: op, tenant: try TenantName("sandbox"))
    }

    var tenant: TenantName { session.tenantName }

    /// A session in a second tenant `other`, where `root` is admin.
    func otherSession() async throws -> Session {
        let access = AccessService(store: store, clock: .manual(time), random: SeededRandom(seed: 8))
        let name = try TenantName("other")
        try await access.createTenant(TenantRecord(name: name, isSandbox: true, createdAt: 1), by: op)
        return try await access.session(operator: op, tenant: name)
    }

    // MARK: Fixtures

    func backupId() throws -> String {
        try BackupAccountKey.derive(rootKey: RootKey(version: .v1, secret: rng.secretBytes(32))).rawValue
    }

    /// A P-256 public key: (uncompressed bytes, compressed bytes).
    func p256() throws -> (uncompressed: [UInt8], compressed: [UInt8]) {
        let key = P256.generatePrivateKey(using: rng)
        return (
            try P256.publicKey(privateKey: key, compressed: false),
            try P256.publicKey(privateKey: key, compressed: true)
        )
    }

    func factor(_ kind: FactorKind) -> Factor {
        Factor(id: rng.uuid(), createdAt: Timestamp(seconds: 1_780_000_000), kind: kind)
    }

    func passkey(_ credentialId: [UInt8]) -> Factor {
        factor(
            .passkey(
                PasskeyFactor(
                    credentialId: Base64.encode(credentialId, alphabet: .url, padding: false), label: "1Password")))
    }

    func google(_ sub: String) -> Factor {
        factor(
            .oidcAccount(
                OIDCAccountFactor(
                    account: OIDCAccount(provider: .google, sub: sub, maskedEmail: "j***@gmail.com"),
                    turnkeyProviderId: rng.uuid())))
    }

    func apple(_ sub: String) -> Factor {
        factor(
            .oidcAccount(
                OIDCAccountFactor(
                    account: OIDCAccount(provider: .apple, sub: sub, maskedEmail: "j***@privaterelay.appleid.com"),
                    turnkeyProviderId: rng.uuid())))
    }

    func keypair(_ bytes: [UInt8]) -> Factor { factor(.ecKeypair(publicKey: Base64.encode(bytes))) }

    func turnkeyKey(subOrg: String? = nil) -> EncryptionKey {
        .turnkey(
            TurnkeyKey(
                encryptedKey: "deadbeefcafe", turnkeyAccountId: subOrg ?? rng.uuid(), turnkeyUserId: rng.uuid(),
                turnkeyPrivateKeyId: rng.uuid()))
    }

    /// A healthy backup: one passkey with its PRF key, one device.
    func healthyMetadata(id: String) throws -> BackupMetadata {
        BackupMetadata(
            id: id, manifestHash: Hex.encode(rng.bytes(32)), factors: [passkey(rng.bytes(32))],
            syncFactors: [keypair(try p256().uncompressed)], keys: [.prf(encryptedKey: "a1b2c3d4e5f6")])
    }

    /// Writes `metadata` with a blob; `rows` defaults to exactly what the metadata implies.
    func write(_ metadata: BackupMetadata, blob: Data? = Data(repeating: 7, count: 2048), rows: [String]? = nil)
        async throws
    {
        let record = BackupRecord(
            backupId: metadata.id, metadata: metadata, blobSize: blob?.count,
            blobSHA256: blob.map { SHA256.hex(Array($0)) }, importedAt: 1, updatedAt: 1)
        let pks = rows ?? metadata.lookupKeys.map(\.rawValue)
        try await store.writeBackup(
            tenant: tenant,
            BackupWrite(record: record, blob: blob, lookupRows: pks.map { LookupRow(pk: $0, backupId: metadata.id) }),
            audit: session.audit("test.write", target: metadata.id))
    }

    /// Index rows exactly as given (drift).
    func writeRows(_ rows: [LookupRow]) async throws {
        try await store.writeLookupRows(tenant: tenant, rows, audit: session.audit("test.rows"))
    }

    func audit(_ action: String) async throws -> [AuditEntry] {
        try await store.latestAuditEntries(tenant: tenant, limit: 1000).filter { $0.action == action }
    }
}

/// Runs `body` and returns the ConsoleError it threw, or nil.
func consoleError(_ body: () async throws -> Void) async -> ConsoleError? {
    do {
        try await body()
        return nil
    } catch let error as ConsoleError {
        return error
    } catch {
        return ConsoleError.internalError("unexpected \(error)")
    }
}
