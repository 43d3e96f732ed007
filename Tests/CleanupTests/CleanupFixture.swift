import Access
import BackupCrypto
import BackupModel
import BackupService
import BackupctlTestSupport
import ConsoleStore
import Foundation
import Turnkey

@testable import Cleanup
@testable import TurnkeySandbox

/// A store with seeded backups, a loopback sandbox server listing their sub-orgs plus orphans,
/// and a cleanup service talking to it over real HTTP with virtual time.
final class CleanupFixture: @unchecked Sendable {
    /// A scratch directory of the test's own (exports, a service's store), removed by ``stop()``.
    let directory: URL
    let opened: OpenedStore
    var store: any FullConsoleStore { opened.store }
    let time = ManualTime(1_790_000_000_000)
    let session: Session
    let server: SandboxServer
    let sandbox: TurnkeySandbox
    let orphans: [String]
    let referenced: [String]
    let connection: TurnkeyConnection
    let sleeps = SleepLog()

    /// - Parameters:
    ///   - live: a live tenant (its store is a snapshot) instead of a sandbox one.
    ///   - sandboxSeed: seeds the sandbox's fault draws (runs with different seeds see different faults).
    ///   - backend: the store's backend.
    init(
        backups: Int = 12, orphanCount: Int = 10, faults: SandboxFaults = .none, attempts: Int = 3, live: Bool = false,
        sandboxSeed: UInt64 = 5, backend: TestBackend = .sqlite
    ) async throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("cleanup-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let time = self.time
        opened = try await backend.open(clock: { time.now })
        let store = opened.store
        let access = AccessService(store: store, clock: .manual(time), random: SeededRandom(seed: 3))
        let token = try await access.bootstrap(admin: try OperatorName("root"))
        let op = try await access.authenticate(token: token)
        let name = try TenantName("drill")
        try await access.createTenant(
            TenantRecord(
                name: name, isSandbox: !live,
                policy: TenantPolicy(retryCapMillis: 2000, retryAttempts: attempts, turnkeyRPS: 1000),
                createdAt: time.now / 1000), by: op)
        session = try await access.session(operator: op, tenant: name)
        // The seeder writes only into sandboxes; a live tenant's backups stand for an import.
        var seedAs = session.tenant
        seedAs.isSandbox = true
        _ = try await SandboxSeeder(store: store, clock: { time.now / 1000 }).run(
            tenant: seedAs, backups: backups, orphans: 0, seed: 11, operatorName: "root")
        var refs: [String] = []
        try await store.forEachReferencedSubOrg(tenant: name, batchSize: 100) { refs += $0 }
        referenced = refs
        let rng = SeededRandom(seed: 99)
        orphans = (0..<orphanCount).map { _ in rng.uuid() }.sorted()
        let apiKey = P256.generatePrivateKey(using: rng)
        let cleanupKey = P256.generatePrivateKey(using: rng)
        sandbox = TurnkeySandbox(
            parentOrgId: "00000000-0000-4000-8000-000000000001", directory: try MemoryDirectory(refs + orphans),
            parentUsers: [try SandboxTenant.user("api", apiKey, canDelete: false)],
            defaultSubOrgUsers: [try SandboxTenant.user("sync_factor_user_cleanup", cleanupKey, canDelete: true)],
            faults: faults, timing: .virtual(time), seed: sandboxSeed)
        server = try await SandboxServer.start(sandbox)
        connection = TurnkeyConnection(
            baseURL: server.baseURL, parentOrgId: "00000000-0000-4000-8000-000000000001", apiKey: apiKey,
            cleanupKey: cleanupKey, transport: HTTPClientTransport())
    }

    func service(
        transport: (any TurnkeyTransport)? = nil, budget: Double = 20, backupService: BackupServiceClient? = nil
    ) -> CleanupService {
        var connection = connection
        if let transport { connection.transport = transport }
        let sleeps = sleeps
        var service = CleanupService(
            store: store, connection: connection, backupService: backupService,
            timing: .virtual(time) { sleeps.add($0) },
            random: SeededRandom(seed: 17))
        service.retryBudgetCapacity = budget
        return service
    }

    func stop() async {
        await server.stop()
        try? FileManager.default.removeItem(at: directory)
    }

    func listed() async throws -> Set<String> {
        Set(try await sandbox.directoryIds())
    }
}

/// Delays the client slept, in order.
final class SleepLog: @unchecked Sendable {
    private let lock = NSLock()
    private var values: [Int64] = []
    func add(_ millis: Int64) { lock.withLock { values.append(millis) } }
    var all: [Int64] { lock.withLock { values } }
}

extension TurnkeySandbox {
    func directoryIds() async throws -> [String] {
        var all: [String] = []
        var after: String?
        while true {
            let page = try await directory.page(after: after, limit: 1000)
            guard let last = page.last else { return all }
            all += page
            after = last
        }
    }
}

/// Forwards to another transport and runs a hook before each request.
struct HookTransport: TurnkeyTransport {
    let inner: any TurnkeyTransport
    let hook: @Sendable (TurnkeyHTTPRequest) async throws(TurnkeyError) -> Void
    /// Runs once the request was sent and answered; what it throws replaces the answer (an
    /// answer lost after the request took effect).
    var after: (@Sendable (TurnkeyHTTPRequest) async throws(TurnkeyError) -> Void)?

    init(
        inner: any TurnkeyTransport, hook: @escaping @Sendable (TurnkeyHTTPRequest) async throws(TurnkeyError) -> Void,
        after: (@Sendable (TurnkeyHTTPRequest) async throws(TurnkeyError) -> Void)? = nil
    ) {
        self.inner = inner
        self.hook = hook
        self.after = after
    }

    func send(_ request: TurnkeyHTTPRequest) async throws(TurnkeyError) -> TurnkeyHTTPResponse {
        try await hook(request)
        let response = try await inner.send(request)
        try await after?(request)
        return response
    }
}
