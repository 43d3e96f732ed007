import Access
import BackupCrypto
import BackupModel
import BackupService
import BackupServiceSandbox
import BackupctlTestSupport
import ConsoleStore
import Foundation
import Recovery

/// The reset vector of `reference/vectors/backup-account-id.json` (copied in the repo under
/// Tests/BackupCryptoTests/Vectors), read from the source tree.
struct ResetVector: Decodable {
    var rootKeyJson: String
    var backupAccountId: String
    var challengeBase64: String
    var signatureBase64: String

    static let shared: ResetVector = {
        struct File: Decodable { var resetSignature: ResetVector }
        let url = repoRoot.appendingPathComponent("Tests/BackupCryptoTests/Vectors/backup-account-id.json")
        guard let data = try? Data(contentsOf: url), let file = try? JSONDecoder().decode(File.self, from: data) else {
            fatalError("cannot read \(url.path)")
        }
        return file.resetSignature
    }()
}

/// The package root, from this file's path (Tests/RecoveryTests/Support.swift).
let repoRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent()

func rootKey(_ hexByte: String) -> RootKey {
    try! RootKey(json: Array(#"{"version":"V1","key":"\#(String(repeating: hexByte, count: 32))"}"#.utf8))
}

/// A real store (SQLite in a temporary directory, or a PostgreSQL database of its own) with an
/// admin session in `sandbox`.
final class Fixture {
    let time = ManualTime(1_790_000_000_000)
    let opened: OpenedStore
    var store: any FullConsoleStore { opened.store }
    let admin: OperatorRecord
    let adminToken: SecretBytes
    let session: Session
    let rng = SeededRandom(seed: 99)

    /// A store of `backend` (SQLite unless named).
    init(_ backend: TestBackend = .sqlite) async throws {
        let time = self.time
        opened = try await backend.open(clock: { time.now })
        let access = AccessService(store: opened.store, clock: .manual(time), random: SeededRandom(seed: 7))
        adminToken = try await access.bootstrap(admin: try OperatorName("root"))
        admin = try await access.authenticate(token: adminToken)
        session = try await access.session(operator: admin, tenant: try TenantName("sandbox"))
    }

    var clock: WallClock { .manual(time) }

    /// The sandbox Backup Service over this store, on a loopback port, with its faults.
    let faults = ServiceFaults()
    private var servers: [BackupServiceSandboxServer] = []
    /// The client of the last service started.
    private(set) var lastClient: BackupServiceClient?

    /// The reset service of `tenant`, talking HTTP to a sandbox Backup Service this fixture
    /// started (stopped by ``stop()``).
    func service(tenant: TenantName? = nil) async throws -> ResetService {
        let emulator = BackupServiceEmulator.sandbox(
            store: store, tenant: tenant ?? session.tenantName, clock: clock, faults: faults)
        let server = try await BackupServiceSandboxServer.start(emulator)
        servers.append(server)
        let client = try BackupServiceClient(
            baseURL: server.baseURL, timeoutMillis: 30_000, attempts: 2, backoffCapMillis: 0)
        lastClient = client
        return ResetService(store: store, service: client, clock: clock)
    }

    func stop() async {
        for server in servers { await server.stop() }
        servers = []
    }

    private let accessRandom = SeededRandom(seed: 8)
    var access: AccessService { AccessService(store: store, clock: clock, random: accessRandom) }

    /// A second tenant `other` where root is admin.
    func otherTenant(policy: TenantPolicy = TenantPolicy()) async throws -> Session {
        let name = try TenantName("other")
        try await access.createTenant(
            TenantRecord(name: name, isSandbox: true, policy: policy, createdAt: 1), by: admin)
        return try await access.session(operator: admin, tenant: name)
    }

    /// A session with `role` for a new operator in the fixture's tenant.
    func session(role: Role, name: String) async throws -> Session {
        let token = try await access.addOperator(try OperatorName(name), role: role, session: session)
        let op = try await access.authenticate(token: token)
        return try await access.session(operator: op, tenant: session.tenantName)
    }

    /// Writes a backup owned by `key` with a passkey, a Google account, a device and sub-orgs.
    @discardableResult
    func addBackup(
        _ key: RootKey, tenant: TenantName? = nil, subOrgs: [String] = ["suborg-a", "suborg-b"], withBlob: Bool = true
    ) async throws -> BackupAccountID {
        let id = try BackupAccountKey.derive(rootKey: key)
        let at = Timestamp(seconds: 1_770_000_000)
        let credential = Base64.encode(rng.bytes(24), alphabet: .url, padding: false)
        let device = Base64.encode(
            try P256.publicKey(privateKey: P256.generatePrivateKey(using: rng), compressed: false))
        let metadata = BackupMetadata(
            id: id.rawValue, manifestHash: Hex.encode(rng.bytes(32)),
            factors: [
                Factor(
                    id: rng.uuid(), createdAt: at,
                    kind: .passkey(PasskeyFactor(credentialId: credential, label: "1Password"))),
                Factor(
                    id: rng.uuid(), createdAt: at,
                    kind: .oidcAccount(
                        OIDCAccountFactor(
                            account: OIDCAccount(
                                provider: .google, sub: "104\(rng.uniform(1_000_000))", maskedEmail: "j***@gmail.com"),
                            turnkeyProviderId: rng.uuid()))),
            ],
            syncFactors: [Factor(id: rng.uuid(), createdAt: at, kind: .ecKeypair(publicKey: device))],
            keys: [.prf(encryptedKey: "ab12")]
                + subOrgs.map {
                    .turnkey(
                        TurnkeyKey(
                            encryptedKey: "cd34", turnkeyAccountId: $0, turnkeyUserId: rng.uuid(),
                            turnkeyPrivateKeyId: rng.uuid()))
                })
        let blob = withBlob ? Data(rng.bytes(64)) : nil
        let record = BackupRecord(
            backupId: id.rawValue, metadata: metadata, blobSize: blob?.count, blobSHA256: blob.map { SHA256.hex($0) },
            importedAt: 1, updatedAt: 1)
        try await store.writeBackup(
            tenant: tenant ?? session.tenantName,
            BackupWrite(
                record: record, blob: blob,
                lookupRows: metadata.lookupKeys.map { LookupRow(pk: $0.rawValue, backupId: id.rawValue) }),
            audit: AuditDraft(
                operatorName: "root", tenant: (tenant ?? session.tenantName).rawValue, action: "test.write"))
        return id
    }

    /// Everything a reset could touch, for "nothing changed" and "all or nothing" checks.
    struct Snapshot: Equatable {
        var backups: [String]
        var blobs: [String: Int]
        var lookupRows: [String: [String]]
        var cleanup: [String]
        var challenges: [String: Int64?]
        var auditCount: Int
    }

    func snapshot(ids: [BackupAccountID], tokenHashes: [String] = [], tenant: TenantName? = nil) async throws
        -> Snapshot
    {
        let t = tenant ?? session.tenantName
        var s = Snapshot(backups: [], blobs: [:], lookupRows: [:], cleanup: [], challenges: [:], auditCount: 0)
        for id in ids {
            if try await store.backup(tenant: t, id: id.rawValue) != nil { s.backups.append(id.rawValue) }
            s.blobs[id.rawValue] = try await store.sealedBlob(tenant: t, backupId: id.rawValue)?.count
            s.lookupRows[id.rawValue] = try await store.lookupRows(tenant: t, backupId: id.rawValue).map(\.pk).sorted()
        }
        s.cleanup = try await store.cleanupItems(tenant: t, states: nil).map { "\($0.subOrgId):\($0.reason)" }.sorted()
        for hash in tokenHashes { s.challenges[hash] = try await store.resetChallenge(tokenHash: hash)?.usedAt }
        // Refusals are audited (reset.refused, access.denied); everything else counts.
        s.auditCount = try await store.auditEntries(tenant: nil, afterSeq: 0, limit: 100_000).filter {
            $0.action != "reset.refused" && $0.action != "access.denied"
        }.count
        return s
    }
}

extension ResetChallenge {
    var tokenText: String { token.withUnsafeBytes { String(decoding: $0, as: UTF8.self) } }
    var tokenHash: String { (try? ResetToken.hash(token)) ?? "" }
}

/// The error a throwing call produced, or `nil`.
func consoleError(_ body: () throws -> Void) -> ConsoleError? {
    do {
        try body()
        return nil
    } catch let error as ConsoleError {
        return error
    } catch {
        return ConsoleError.internalError("\(error)")
    }
}

/// The error an async throwing call produced, or `nil`.
func consoleError(_ body: () async throws -> Void) async -> ConsoleError? {
    do {
        try await body()
        return nil
    } catch let error as ConsoleError {
        return error
    } catch {
        return ConsoleError.internalError("\(error)")
    }
}
