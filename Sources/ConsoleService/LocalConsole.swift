import Access
import BackupCrypto
import BackupModel
@_exported import ConsoleInterface
import ConsoleStore
import Foundation
import Inspect
import Logging
import PostgresStore
import SQLiteStore
import Synchronization

/// The service layer in this process, on the store it opens on first use: a SQLite file, or a
/// PostgreSQL database when the store path is a `postgres://` URL.
///
/// It is the embedded default (the console without `--server`) and the engine of
/// `backupctl serve`, which hands every request to it. Authentication, the tenant choice and
/// the role checks happen here, never in a command, so both paths enforce the same rules.
public final class LocalConsole: ConsoleAPI, @unchecked Sendable {
    public let storePath: String
    public let clock: WallClock
    public let random: any RandomSource
    /// The process environment (crash checkpoints in debug builds read it).
    public let environment: [String: String]
    /// Long-lived helpers of sandbox tenants (their in-process emulators), shared by all calls.
    let wiring = Wiring()
    /// Signs checkpoints of the audit chain (the server's `--audit-key`); `nil` in-process.
    public let auditSigner: AuditSigner?
    /// Public keys of audit keys the signer replaced: `audit verify` without keys of its own
    /// checks older checkpoints with them (``trustRetiredAuditKeys(_:)``).
    public var retiredAuditKeys: [AuditPublicKey] { lock.withLock { retired } }

    private let lock = NSLock()
    private let stopping = Mutex(false)

    /// The serving process was asked to stop (``beginStopping()``).
    public var isStopping: Bool { stopping.withLock { $0 } }

    /// Called when a graceful stop begins: a cleanup run starts no new deletion (its calls in
    /// flight finish and it answers what it did), so it is not cut off mid-call by the drain.
    public func beginStopping() { stopping.withLock { $0 = true } }
    // Guarded by `lock`.
    private var opened: (any FullConsoleStore)?
    /// The one opening of a PostgreSQL store that concurrent first calls all wait for.
    private var opening: Task<Result<any FullConsoleStore, ConsoleError>, Never>?
    private var database: PostgresStoreDatabase?
    private var retired: [AuditPublicKey] = []
    /// The store held no signed checkpoint when first checked: `--db` writes are its normal path.
    private var unsignedChecked = false
    /// With a signer: its start checks (``checkAuditAnchors()``) have passed in this process.
    private var anchorsChecked = false
    private var policy: ServerPolicy?
    /// Operators by token hash and sessions by operator and tenant, each with the store's
    /// access version it was read at (``ConsoleStore/accessVersion()``). A cached one is used only
    /// while that version is unchanged, so a 100,000-line script or a busy server does not
    /// re-read grants per call, yet any change to tenants, operators or grants — by this process
    /// or another — takes effect on the very next call.
    private var operators: [String: (record: OperatorRecord, version: Int64)] = [:]
    private var sessions: [SessionKey: (session: Session, version: Int64)] = [:]
    private var lastToken: (token: SecretBytes, hash: String)?

    public init(
        storePath: String, clock: WallClock = .system, random: any RandomSource = SystemRandom(),
        environment: [String: String] = [:], auditSigner: AuditSigner? = nil
    ) {
        self.storePath = storePath
        self.clock = clock
        self.random = random
        self.environment = environment
        self.auditSigner = auditSigner
    }

    /// A console that signs audit checkpoints with the key in `auditKeyPath` (a file of mode
    /// 0600 or 0400 outside the database, made by `audit keygen`): after every operation once
    /// `auditCheckpointEvery` entries follow the newest checkpoint, and in ``checkpointLoop(every:sleep:)``.
    /// Without a path it is the plain console. The signer's high-water mark is `<key>.hwm`;
    /// `auditWitnessPath` also receives every checkpoint as a JSON line (``AuditAnchor``).
    /// - Throws: `invalid_key_file`, `insecure_key_file` or `invalid_private_key`, one line naming the file.
    public convenience init(
        storePath: String, clock: WallClock = .system, random: any RandomSource = SystemRandom(),
        environment: [String: String] = [:], auditKeyPath: String?, auditCheckpointEvery: Int64 = 100,
        auditWitnessPath: String? = nil
    ) throws(ConsoleError) {
        let signer = try auditKeyPath.map { path throws(ConsoleError) in
            try AuditSigner(
                keyFile: path, clock: clock, everyEntries: auditCheckpointEvery, witnessPath: auditWitnessPath)
        }
        self.init(storePath: storePath, clock: clock, random: random, environment: environment, auditSigner: signer)
    }

    /// A console over an already open store (tests, and `demo`, which builds its store first).
    public convenience init(
        store: any FullConsoleStore, path: String, clock: WallClock = .system,
        random: any RandomSource = SystemRandom(), environment: [String: String] = [:],
        auditSigner: AuditSigner? = nil
    ) {
        self.init(storePath: path, clock: clock, random: random, environment: environment, auditSigner: auditSigner)
        opened = store
    }

    public func perform<Op: ConsoleOperation>(
        _ operation: Op, as caller: Caller, progress: ProgressSink?
    ) async throws(ConsoleError) -> Op.Output {
        if !Self.auditReadOnly.contains(Op.name) { try await refuseUnsignedWrites() }
        // A signer signs from the first operation on (a read too, once enough entries follow the
        // newest checkpoint): whatever runs it — `serve`, or a `--db` console with
        // BACKUPCTL_AUDIT_KEY — it first checks the store as a starting server does.
        // A store that cannot be opened yet reports that itself, from the operation.
        if let auditSigner, !lock.withLock({ anchorsChecked }), (try? await store()) != nil {
            do {
                try await checkAuditAnchors()
            } catch {
                // `audit verify`, `list` and `export` still run, to say what is wrong, but nothing
                // is signed over a store that failed the check.
                guard Self.auditReadOnly.contains(Op.name) else { throw error }
                auditSigner.suspend(error)
            }
        }
        let cancelled = CancelFlag()
        let context = LocalOperationContext(
            console: self, caller: caller, operation: Op.name, progress: progress, cancelled: cancelled)
        // Refusals are audited too, so the checkpoint check follows failures as well.
        let result: Result<Op.Output, ConsoleError>
        do {
            result = .success(
                try await withTaskCancellationHandler {
                    try await operation.run(context)
                } onCancel: {
                    cancelled.raise()
                })
        } catch let error as ConsoleError {
            result = .failure(error)
        } catch {
            result = .failure(.internalError("\(Op.name) failed: \(error)"))
        }
        await checkpointAfterAppends()
        return try result.get()
    }

    /// Operations that append nothing to the audit: allowed on a signed store without its key.
    static let auditReadOnly: Set<String> = ["audit.verify", "audit.export", "audit.list"]

    /// Without a signer, on a store a signing server keeps (it holds signed checkpoints): every
    /// entry written here would bypass the signer and stay unsigned, so the call is refused.
    /// `BACKUPCTL_AUDIT_KEY` (the key file) lets this process sign instead.
    /// - Parameter recheck: look again even when the store held no checkpoint before (a
    ///   long-running worker: a signing server may have started on the store since).
    func refuseUnsignedWrites(recheck: Bool = false) async throws(ConsoleError) {
        guard auditSigner == nil, recheck || !lock.withLock({ unsignedChecked }) else { return }
        // A store that cannot be opened yet reports that itself, from the operation.
        guard let store = try? await store() else { return }
        if try await store.latestAuditCheckpoint() != nil {
            throw ConsoleError(
                .conflict, code: "audit_signed_store",
                "The audit of \(PostgresStoreConfiguration.displayed(storePath)) is signed by a server (backupctl serve --audit-key); entries written with --db would bypass its signer. Run the command through --server URL, or set BACKUPCTL_AUDIT_KEY to the key file so this process signs."
            )
        }
        lock.withLock { unsignedChecked = true }
    }

    /// Before a process writes audit entries outside ``perform(_:as:progress:)`` (`backupctl
    /// worker`): with a signer, the store must extend its high-water mark
    /// (``checkAuditAnchors()``); without one, a store a server signs is refused
    /// (`audit_signed_store`), as every write of a `--db` console is.
    public func checkAuditWrites() async throws(ConsoleError) {
        if auditSigner != nil {
            try await checkAuditAnchors()
        } else {
            try await refuseUnsignedWrites(recheck: true)
        }
    }

    /// With a signer, why its last attempt to sign failed (`nil` once one succeeded, and
    /// without a signer): `serve`'s readiness reports it.
    public var auditSigningError: ConsoleError? { auditSigner?.lastError }

    /// With a signer: refuses a store whose chain does not extend the signer's high-water mark
    /// or its witness's newest checkpoint (`audit_chain_diverged`, naming both heads), a store
    /// with checkpoints but no high-water mark (`audit_anchor_missing`), or a forged newest
    /// checkpoint; records and signs entries found after the newest checkpoint
    /// (``AuditSigner/checkStart(store:)``). `serve` calls it before it listens.
    /// - Returns: the unsigned entries it adopted, if any.
    @discardableResult
    public func checkAuditAnchors() async throws(ConsoleError) -> ClosedRange<Int64>? {
        guard let auditSigner else { return nil }
        let adopted = try await auditSigner.checkStart(store: try await store())
        lock.withLock { anchorsChecked = true }
        return adopted
    }

    /// `serve --audit-rebase`: anchors the store as it is (``AuditSigner/rebase(store:)``).
    /// - Returns: the `audit.rebased` entry's details; `nil` without a signer.
    public func rebaseAuditAnchors() async throws(ConsoleError) -> [String: String]? {
        guard let auditSigner else { return nil }
        let details = try await auditSigner.rebase(store: try await store())
        lock.withLock { anchorsChecked = true }
        return details
    }

    /// With a signer, signs a checkpoint once ``AuditSigner/everyEntries`` entries follow the
    /// newest one (a cheap read when none is due).
    func checkpointAfterAppends() async {
        guard let auditSigner, let store = lock.withLock({ opened }) else { return }
        await auditSigner.checkpointAfterAppends(store: store)
    }

    /// Signs a checkpoint every `seconds` while entries arrive, and once more when cancelled,
    /// until the calling task is cancelled (`backupctl serve --audit-key` runs it as a
    /// service). Without a signer there is nothing to sign: it waits for cancellation, so a
    /// service group never sees it end early.
    /// - Parameter sleep: waits the given milliseconds (tests inject one that moves their clock).
    public func checkpointLoop(
        every seconds: Int,
        sleep: @Sendable (Int64) async throws -> Void = { millis in try await Task.sleep(for: .milliseconds(millis)) }
    ) async {
        guard let auditSigner else {
            while !Task.isCancelled {
                do { try await sleep(Int64(max(1, seconds)) * 1000) } catch { return }
            }
            return
        }
        await auditSigner.run(
            store: { () async throws(ConsoleError) -> any AuditCheckpointStore in try await self.store() },
            every: seconds,
            sleep: sleep)
    }

    /// Store upkeep while a server runs, until the calling task is cancelled: on SQLite, the
    /// WAL's checkpoints off the request path (``SQLiteConsoleStore/checkpointInBackground(every:events:)``);
    /// PostgreSQL keeps its own. Without a store yet it waits.
    public func maintainStore(every interval: Duration = .milliseconds(500)) async {
        if let sqlite = try? await store() as? SQLiteConsoleStore {
            await sqlite.checkpointInBackground(every: interval)
            return
        }
        while !Task.isCancelled {
            do { try await Task.sleep(for: .seconds(3600)) } catch { return }
        }
    }

    /// The size of the SQLite store's WAL file (0 when there is none), from the file system,
    /// without waiting for the store; `nil` for a PostgreSQL store.
    public var sqliteWALBytes: Int? {
        guard !PostgresStoreConfiguration.isURL(storePath), !storePath.isEmpty else { return nil }
        var info = stat()
        return stat(storePath + "-wal", &info) == 0 ? Int(info.st_size) : 0
    }

    /// What this console allows when it serves others (`backupctl serve` sets it before it
    /// listens); `nil` in-process.
    public var serverPolicy: ServerPolicy? { lock.withLock { policy } }

    /// Makes this console a server's: imports only below the policy's root, outbound URLs only
    /// to public hosts or those it allows.
    public func serve(_ policy: ServerPolicy) { lock.withLock { self.policy = policy } }

    /// Trusts the public keys of retired audit keys (`serve --audit-retired-key`).
    public func trustRetiredAuditKeys(_ keys: [AuditPublicKey]) {
        lock.withLock { retired = keys }
        auditSigner?.trustRetired(keys)
    }

    /// The store, opened on first use; `create` allows making a new file (`init`, `demo`).
    public func store(create: Bool = false) async throws(ConsoleError) -> any FullConsoleStore {
        if let store = lock.withLock({ opened }) { return store }
        if PostgresStoreConfiguration.isURL(storePath) { return try await openPostgres() }
        if !create, !storePath.isEmpty, !FileManager.default.fileExists(atPath: storePath) {
            throw ConsoleError(
                .notFound, code: "no_store",
                "No console store at \(storePath); run `backupctl init --admin NAME` first (or pass --db).")
        }
        let store = try SQLiteConsoleStore(
            path: storePath, clock: clock.millis, crashPoint: environment["BACKUPCTL_CRASH_AT"])
        return lock.withLock {
            if let opened { return opened }
            opened = store
            return store
        }
    }

    /// Connects the pool (checking the server answers), migrates, and keeps the store; one
    /// attempt at a time, and a failed one is retried by the next call.
    private func openPostgres() async throws(ConsoleError) -> any FullConsoleStore {
        let task = lock.withLock { () -> Task<Result<any FullConsoleStore, ConsoleError>, Never> in
            if let opening { return opening }
            let made = Task { [storePath, environment, clock] () -> Result<any FullConsoleStore, ConsoleError> in
                do throws(ConsoleError) {
                    let configuration = try PostgresStoreConfiguration(url: storePath, environment: environment)
                    // The pool's and the migrations' own lines stay below notice unless asked
                    // for: a command's stderr carries its own messages.
                    var logger = Logger(label: "backupctl.postgres")
                    logger.logLevel =
                        environment["BACKUPCTL_LOG_LEVEL"].flatMap { Logger.Level(rawValue: $0) } ?? .notice
                    let database = PostgresStoreDatabase(configuration: configuration, logger: logger)
                    try await database.start()
                    do throws(ConsoleError) {
                        let store = try await PostgresConsoleStore.open(
                            database, clock: clock.millis, checkpoints: .crash(at: environment["BACKUPCTL_CRASH_AT"]))
                        return .success(store)
                    } catch {
                        await database.shutdown()
                        throw error
                    }
                } catch {
                    return .failure(error)
                }
            }
            opening = made
            return made
        }
        switch await task.value {
        case .success(let store):
            return lock.withLock {
                if let opened { return opened }
                opened = store
                database = (store as? PostgresConsoleStore)?.database
                return store
            }
        case .failure(let error):
            lock.withLock { opening = nil }
            throw error
        }
    }

    /// Closes what this console opened: the sandbox emulators and a PostgreSQL pool (waiting
    /// for its connections to close). A later call opens them again.
    public func close() async {
        await stopSandboxes()
        let database = lock.withLock { () -> PostgresStoreDatabase? in
            guard let database = self.database else { return nil }
            self.database = nil
            opened = nil
            opening = nil
            return database
        }
        await database?.shutdown()
    }

    var access: AccessService {
        get async throws(ConsoleError) { AccessService(store: try await store(), clock: clock, random: random) }
    }

    /// The operator a token names.
    public func authenticate(_ caller: Caller) async throws(ConsoleError) -> OperatorRecord {
        if let checked = Self.checkedAccessVersion { return try await authenticate(caller, version: checked) }
        let version = try await store().accessVersion()
        Self.accessVersionPin?.keep(version)
        return try await authenticate(caller, version: version)
    }

    /// The lookups among `operations` are resolved together (``LookupPrefetch``): the first
    /// of them made reads the index for all, in one read of the store.
    public func withOneAccessCheck<T: Sendable>(reading operations: [any ConsoleOperation], _ body: () async -> T)
        async -> (value: T, unchanged: Bool)
    {
        // A store that cannot be opened or read lets each read find that out, and say so.
        guard let store = try? await store(), let before = try? await store.accessVersion() else {
            return (await body(), true)
        }
        let lookups = operations.compactMap { ($0 as? LookupOperation)?.query }
        let prefetch = lookups.count > 1 ? LookupPrefetch(lookups) : nil
        let value = await Self.$checkedAccessVersion.withValue(before) {
            await LookupPrefetch.$current.withValue(prefetch) { await body() }
        }
        guard let after = try? await store.accessVersion() else { return (value, false) }
        return (value, after == before)
    }

    /// The access version read once for a run of reads (``withOneAccessCheck(_:)``), which
    /// their authentication and sessions take instead of reading the store.
    @TaskLocal static var checkedAccessVersion: Int64?

    /// Runs `body` (one served request) so that the access version its authentication reads is
    /// the one its operation's session uses, once: one read of the version per request instead
    /// of two. Any later read in the request (a long job's) reads the store again.
    public static func pinningAccessVersion<T: Sendable>(_ body: () async -> T) async -> T {
        await $accessVersionPin.withValue(AccessVersionPin()) { await body() }
    }

    @TaskLocal static var accessVersionPin: AccessVersionPin?

    /// The access version a request's authentication read, until its session takes it.
    final class AccessVersionPin: Sendable {
        private let value = Mutex<Int64?>(nil)
        func keep(_ version: Int64) { value.withLock { $0 = version } }
        func take() -> Int64? {
            value.withLock { value in
                defer { value = nil }
                return value
            }
        }
    }

    private func authenticate(_ caller: Caller, version: Int64) async throws(ConsoleError) -> OperatorRecord {
        guard let token = caller.token else {
            throw ConsoleError(
                .permissionDenied, code: "missing_token",
                "No operator token: pass --token-file PATH or set BACKUPCTL_TOKEN.")
        }
        let hash = tokenHash(token)
        if let cached = lock.withLock({ operators[hash] }), cached.version == version { return cached.record }
        let record = try await access.authenticate(token: token)
        lock.withLock { operators[hash] = (record, version) }
        return record
    }

    /// The token's hash, kept for the last token seen (compared in constant time): a script or
    /// a client sends the same token with every call.
    private func tokenHash(_ token: SecretBytes) -> String {
        if let last = lock.withLock({ lastToken }), last.token == token { return last.hash }
        let hash = OperatorToken.hash(token)
        lock.withLock { lastToken = (token, hash) }
        return hash
    }

    /// The caller's session in their chosen tenant, or in their only one.
    /// - Parameter command: the operation asking, named in the `access.denied` entry of a refusal.
    public func session(_ caller: Caller, command: String = "use tenant") async throws(ConsoleError) -> Session {
        let version: Int64
        if let checked = Self.checkedAccessVersion {
            version = checked
        } else if let pinned = Self.accessVersionPin?.take() {
            version = pinned
        } else {
            version = try await store().accessVersion()
        }
        let op = try await authenticate(caller, version: version)
        let key = SessionKey(operatorName: op.name.rawValue, tenant: caller.tenant)
        if let cached = lock.withLock({ sessions[key] }), cached.version == version { return cached.session }
        let session = try await readSession(op, tenant: caller.tenant, command: command)
        lock.withLock { sessions[key] = (session, version) }
        return session
    }

    /// Drops the operators and sessions read so far. The access version already retires them
    /// when grants change; this also frees the memory (after a removal, a tenant deletion).
    public func forgetSessions() {
        lock.withLock {
            operators = [:]
            sessions = [:]
            lastToken = nil
        }
    }

    private func readSession(_ op: OperatorRecord, tenant chosen: String?, command: String) async throws(ConsoleError)
        -> Session
    {
        let access = try await access
        let name: TenantName
        if let chosen {
            name = try TenantName(chosen)
        } else {
            let visible = try await access.tenants(visibleTo: op)
            guard !visible.isEmpty else {
                // Not a usage mistake: no choice of tenant would let this operator in (exit 77, as
                // with a named tenant).
                throw ConsoleError(
                    .permissionDenied, code: "permission_denied",
                    "Operator \(op.name) has no role in any tenant; an admin grants one with `operator grant`.")
            }
            guard visible.count == 1, let only = visible.first else {
                throw ConsoleError.usage(
                    "No tenant selected: pass --tenant NAME or run `use NAME` (tenant list shows yours).")
            }
            name = only.0.name
        }
        do {
            return try await access.session(operator: op, tenant: name, command: command)
        } catch {
            guard error.kind == .permissionDenied || error.kind == .notFound else { throw error }
            let visible = await ((try? access.tenants(visibleTo: op)) ?? []).map(\.0.name.rawValue)
            let hint = Suggest.didYouMean(name.rawValue, among: visible)
            guard !hint.isEmpty else { throw error }
            throw ConsoleError(error.kind, code: error.code, error.message + hint)
        }
    }

    private struct SessionKey: Hashable {
        var operatorName: String
        var tenant: String?
    }
}

/// What an operation runs with in-process: this console's store and services, and who is calling.
public struct LocalOperationContext: OperationContext {
    public let console: LocalConsole
    public let caller: Caller
    /// The operation's name (`operator.grant`), for the `access.denied` entry of a refusal.
    let operation: String
    let progressSink: ProgressSink?
    let cancelled: CancelFlag

    init(console: LocalConsole, caller: Caller, operation: String, progress: ProgressSink?, cancelled: CancelFlag) {
        self.console = console
        self.caller = caller
        self.operation = operation
        progressSink = progress
        self.cancelled = cancelled
    }

    public var clock: WallClock { console.clock }
    public var random: any RandomSource { console.random }

    public func store() async throws(ConsoleError) -> any FullConsoleStore { try await console.store() }

    public var access: AccessService {
        get async throws(ConsoleError) { try await console.access }
    }

    public func operatorRecord() async throws(ConsoleError) -> OperatorRecord { try await console.authenticate(caller) }

    public func session() async throws(ConsoleError) -> Session {
        try await console.session(caller, command: operation)
    }

    public func session(as caller: Caller) async throws(ConsoleError) -> Session {
        try await console.session(caller, command: operation)
    }

    public func progress(_ event: ProgressEvent) throws(ConsoleError) {
        progressSink?(event)
        try checkCancelled(done: event.done)
    }

    public func checkCancelled(done: Int?) throws(ConsoleError) {
        guard isCancelled else { return }
        throw ConsoleError(
            .conflict, code: "interrupted",
            "Interrupted\(done.map { " after \($0)" } ?? ""); what was done so far is saved and a rerun continues from it."
        )
    }

    public var isCancelled: Bool { cancelled.isRaised }
    public var isStopping: Bool { console.isStopping }

    public func forgetSessions() { console.forgetSessions() }
    public var serverPolicy: ServerPolicy? { console.serverPolicy }
    public var auditSigner: AuditSigner? { console.auditSigner }
    public var retiredAuditKeys: [AuditPublicKey] { console.retiredAuditKeys }
}

/// Set once when the calling task is cancelled; read from the threads a job runs on.
final class CancelFlag: Sendable {
    private let raised = Mutex(false)
    func raise() { raised.withLock { $0 = true } }
    var isRaised: Bool { raised.withLock { $0 } }
}
