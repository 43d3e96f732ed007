import Access
import BackupCrypto
import BackupModel
import BackupService
import BackupServiceSandbox
import BackupctlTestSupport
import ConsoleStore
import Foundation
import PostgresStore
import Recovery
import SQLiteStore
import Testing

/// Kills `backupctl reset complete` at each named point (a checkpoint, never a delay), then checks
/// the store holds the whole backup with an unused token, or none of it with the token consumed:
/// on SQLite and on PostgreSQL alike, the `wiped` point being inside the shared rules' transaction.
@Suite(
    .enabled(if: Binary.exists, "build the executable first: swift build --build-tests"), .serialized,
    .timeLimit(.minutes(10)))
struct ResetCrashTests {
    struct Prepared {
        var backend: TestBackend
        var directory: URL
        /// The template store: a SQLite file, or a PostgreSQL database name.
        var template: String
        var adminToken: String
        var tokenFile: String
        var signatureFile: String
        var tokenHash: String
        var backupId: String
    }

    /// A store on the real clock (the child uses it) with one backup and a begun reset.
    static func prepare(_ backend: TestBackend) async throws -> Prepared {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("crash-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let template: String
        switch backend {
        case .sqlite: template = directory.appendingPathComponent("template.db").path
        case .postgres:
            template = "crash_" + String(format: "%016llx", UInt64.random(in: .min ... .max))
            try await PostgresAdmin.execute("CREATE DATABASE \(template)", on: try serverURL())
        }
        let key = rootKey("42")
        var prepared: Prepared?
        try await withStore(backend, try location(backend, template)) { store in
            let access = AccessService(store: store)
            let adminToken = try await access.bootstrap(admin: try OperatorName("root"))
            let op = try await access.authenticate(token: adminToken)
            let session = try await access.session(operator: op, tenant: try TenantName("sandbox"))
            let f = FixtureWriter(store: store, tenant: session.tenantName)
            let id = try await f.addBackup(key)
            // The token comes from the tenant's sandbox Backup Service, as `reset begin` gets it.
            let server = try await BackupServiceSandboxServer.start(
                BackupServiceEmulator.sandbox(store: store, tenant: session.tenantName))
            let service = ResetService(store: store, service: try BackupServiceClient(baseURL: server.baseURL))
            let begun = try await service.begin(backupAccountId: id.rawValue, session: session)
            await server.stop()
            let tokenFile = directory.appendingPathComponent("token")
            let signatureFile = directory.appendingPathComponent("signature")
            try Data(begun.tokenText.utf8).write(to: tokenFile)
            try Data(try UserRecovery.signChallenge(begun.challenge, rootKey: key).utf8).write(to: signatureFile)
            prepared = Prepared(
                backend: backend, directory: directory, template: template,
                adminToken: adminToken.withUnsafeBytes { String(decoding: $0, as: UTF8.self) },
                tokenFile: tokenFile.path, signatureFile: signatureFile.path, tokenHash: begun.tokenHash,
                backupId: id.rawValue)
        }
        // The store is closed here (WAL checkpointed; no connection left), so it is a template.
        return try #require(prepared)
    }

    static func serverURL() throws -> String {
        guard let url = PostgresTestDatabase.serverURL else { throw PostgresTestDatabase.Failure.noCluster }
        return url
    }

    /// What `--db` names for the store `name`: the file, or the database's URL.
    static func location(_ backend: TestBackend, _ name: String) throws -> String {
        backend == .sqlite ? name : try PostgresAdmin.url(try serverURL(), database: name)
    }

    /// Runs `body` on the store at `location` (a file or a URL), closed afterwards.
    static func withStore<T>(
        _ backend: TestBackend, _ location: String, _ body: (any FullConsoleStore) async throws -> T
    )
        async throws -> T
    {
        guard backend == .postgres else { return try await body(try SQLiteConsoleStore(path: location)) }
        let database = PostgresStoreDatabase(
            configuration: try PostgresStoreConfiguration(url: location, environment: [:]))
        try await database.start()
        do {
            let result = try await body(try await PostgresConsoleStore.open(database))
            await database.shutdown()
            return result
        } catch {
            await database.shutdown()
            throw error
        }
    }

    /// A fresh copy of the template store for run `n`; returns what `--db` names.
    static func copy(_ p: Prepared, _ n: Int) async throws -> String {
        switch p.backend {
        case .sqlite:
            let path = p.directory.appendingPathComponent("run-\(n).db").path
            try FileManager.default.copyItem(atPath: p.template, toPath: path)
            for suffix in ["-wal", "-shm"] where FileManager.default.fileExists(atPath: p.template + suffix) {
                try FileManager.default.copyItem(atPath: p.template + suffix, toPath: path + suffix)
            }
            return path
        case .postgres:
            let name = "\(p.template)_\(n)"
            try await PostgresAdmin.execute("CREATE DATABASE \(name) TEMPLATE \(p.template)", on: try serverURL())
            return try location(.postgres, name)
        }
    }

    /// Removes the template and every copy.
    static func cleanUp(_ p: Prepared, runs: [Int]) async {
        try? FileManager.default.removeItem(at: p.directory)
        guard p.backend == .postgres, let server = try? serverURL() else { return }
        for name in runs.map({ "\(p.template)_\($0)" }) + [p.template] {
            try? await PostgresAdmin.execute("DROP DATABASE IF EXISTS \(name) WITH (FORCE)", on: server)
        }
    }

    /// The command's arguments: a file store by `--db`; a database's URL (it holds the test
    /// cluster's password) goes in `BACKUPCTL_DB` (``environment(_:db:_:)``), never in arguments.
    static func args(_ p: Prepared, db: String) -> [String] {
        (p.backend == .sqlite ? ["--db", db] : []) + [
            "--tenant", "sandbox", "--format", "json", "--yes",
            "-c", "reset complete --token-file \(p.tokenFile) --signature-file \(p.signatureFile)",
        ]
    }

    static func environment(_ p: Prepared, db: String, _ extra: [String: String] = [:]) -> [String: String] {
        var variables = extra.merging(["BACKUPCTL_TOKEN": p.adminToken]) { $1 }
        if p.backend == .postgres { variables["BACKUPCTL_DB"] = db }
        return Binary.cleanEnvironment(variables)
    }

    /// Intact: nothing sent, or sent and refused. Service done: the sandbox service reset the
    /// backup but the console had not recorded it yet. Wiped: both parts done.
    enum Outcome { case intact, serviceDone, wiped }

    /// The all-or-nothing invariant, and a valid audit chain, in the store at `db`.
    static func outcome(_ p: Prepared, _ db: String, sourceLocation: SourceLocation = #_sourceLocation) async throws
        -> Outcome?
    {
        try await withStore(p.backend, db) { store in
            let t = try TenantName("sandbox")
            let backup = try await store.backup(tenant: t, id: p.backupId)
            let blob = try await store.sealedBlob(tenant: t, backupId: p.backupId)
            let rows = try await store.lookupRows(tenant: t, backupId: p.backupId)
            let refs = try await store.subOrgReference(tenant: t, subOrgId: "suborg-a")
            let queued = try await store.cleanupItems(tenant: t, states: nil).filter { $0.reason == "reset" }.map(
                \.subOrgId
            ).sorted()
            let used = try #require(try await store.resetChallenge(tokenHash: p.tokenHash)).usedAt != nil
            let audited = try await store.auditEntries(tenant: t, afterSeq: 0, limit: 1000).contains {
                $0.action == "reset.complete"
            }
            #expect(try await AuditLog.verify(store: store).ok, sourceLocation: sourceLocation)
            if backup != nil, blob != nil, rows.count == 3, refs != nil, queued.isEmpty, !used, !audited {
                return .intact
            }
            if backup == nil, blob == nil, rows.isEmpty, refs == nil, queued.isEmpty, !used, !audited {
                return .serviceDone
            }
            if backup == nil, blob == nil, rows.isEmpty, refs == nil, queued == ["suborg-a", "suborg-b"], used, audited
            {
                return .wiped
            }
            Issue.record(
                "torn state: backup \(backup != nil) blob \(blob != nil) rows \(rows.count) refs \(refs != nil) queued \(queued) used \(used) audited \(audited)",
                sourceLocation: sourceLocation)
            return nil
        }
    }

    /// Killed at each named point, the console is intact, or the service has reset the backup
    /// and the console not yet, or both are done — never torn; and running the same command
    /// again always ends with the backup wiped, its sub-orgs queued and the reset audited once.
    @Test(arguments: TestBackend.available) func killedAtEveryNamedPointConvergesOnRerun(backend: TestBackend)
        async throws
    {
        let p = try await Self.prepare(backend)
        let runs = Array(ResetCheckpoint.allCases.indices) + [99]
        do {
            try await Self.runEveryPoint(p)
            await Self.cleanUp(p, runs: runs)
        } catch {
            await Self.cleanUp(p, runs: runs)
            throw error
        }
    }

    static func runEveryPoint(_ p: Prepared) async throws {
        let expected: [ResetCheckpoint: Outcome] = [
            .checked: .intact, .verified: .serviceDone, .wiped: .serviceDone, .committed: .wiped,
        ]
        for (n, point) in ResetCheckpoint.allCases.enumerated() {
            let db = try await Self.copy(p, n)
            let env = Self.environment(p, db: db, ["BACKUPCTL_CRASH_AT": point.rawValue])
            let run = try await Binary.run(Self.args(p, db: db), environment: env)
            #expect(run.status == 137, "\(p.backend) \(point): \(run.stderr)")
            await #expect(try Self.outcome(p, db) == expected[point], "\(p.backend) \(point)")
            try await Self.rerunConverges(p, db, after: "\(p.backend) \(point)")
        }
        let db = try await Self.copy(p, 99)
        let run = try await Binary.run(Self.args(p, db: db), environment: Self.environment(p, db: db))
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stdout.contains(#""wiped":true"#))
        await #expect(try Self.outcome(p, db) == .wiped)
    }

    /// The command run again on `db`: exit 0 and wiped (unless the first run already finished,
    /// when the service answers not_found and nothing changes).
    static func rerunConverges(_ p: Prepared, _ db: String, after: String) async throws {
        let before = try await outcome(p, db)
        let run = try await Binary.run(args(p, db: db), environment: environment(p, db: db))
        if before == .wiped {
            #expect(run.status == 1 && run.stderr.contains("not_found"), "rerun after \(after): \(run.stderr)")
        } else {
            #expect(run.status == 0, "rerun after \(after): \(run.stderr)")
        }
        await #expect(try outcome(p, db) == .wiped, "rerun after \(after)")
        let completes = try await withStore(p.backend, db) { store in
            try await store.auditEntries(tenant: try TenantName("sandbox"), afterSeq: 0, limit: 1000).filter {
                $0.action == "reset.complete"
            }.count
        }
        #expect(completes == 1, "rerun after \(after)")
    }
}

struct FixtureWriter {
    let store: any ConsoleStore
    let tenant: TenantName

    func addBackup(_ key: RootKey) async throws -> BackupAccountID {
        let id = try BackupAccountKey.derive(rootKey: key)
        let rng = SeededRandom(seed: 5)
        let at = Timestamp(seconds: 1_770_000_000)
        let device = Base64.encode(
            try P256.publicKey(privateKey: P256.generatePrivateKey(using: rng), compressed: false))
        let metadata = BackupMetadata(
            id: id.rawValue, manifestHash: Hex.encode(rng.bytes(32)),
            factors: [
                Factor(
                    id: rng.uuid(), createdAt: at,
                    kind: .passkey(PasskeyFactor(credentialId: "Y3JlZC1h", label: "1Password"))),
                Factor(
                    id: rng.uuid(), createdAt: at,
                    kind: .oidcAccount(
                        OIDCAccountFactor(
                            account: OIDCAccount(provider: .google, sub: "1045", maskedEmail: "j***@gmail.com"),
                            turnkeyProviderId: rng.uuid()))),
            ],
            syncFactors: [Factor(id: rng.uuid(), createdAt: at, kind: .ecKeypair(publicKey: device))],
            keys: ["suborg-a", "suborg-b"].map {
                .turnkey(
                    TurnkeyKey(
                        encryptedKey: "cd34", turnkeyAccountId: $0, turnkeyUserId: rng.uuid(),
                        turnkeyPrivateKeyId: rng.uuid()))
            })
        let blob = Data(rng.bytes(4096))
        try await store.writeBackup(
            tenant: tenant,
            BackupWrite(
                record: BackupRecord(
                    backupId: id.rawValue, metadata: metadata, blobSize: blob.count, blobSHA256: SHA256.hex(blob),
                    importedAt: 1, updatedAt: 1),
                blob: blob, lookupRows: metadata.lookupKeys.map { LookupRow(pk: $0.rawValue, backupId: id.rawValue) }),
            audit: AuditDraft(operatorName: "root", tenant: tenant.rawValue, action: "test.write"))
        return id
    }
}
