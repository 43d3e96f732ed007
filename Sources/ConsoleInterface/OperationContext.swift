import Access
import BackupCrypto
import BackupModel
import Cleanup
import ConsoleStore
import Recovery

/// What an operation runs with: the console's store and services, and who is calling.
///
/// ``LocalConsole`` (module ConsoleService) provides it in-process; this module only names it,
/// so the operations and their types link without a database driver or an HTTP server.
public protocol OperationContext: Sendable {
    var caller: Caller { get }
    var clock: WallClock { get }
    var random: any RandomSource { get }

    func store() async throws(ConsoleError) -> any FullConsoleStore
    var access: AccessService { get async throws(ConsoleError) }

    /// The authenticated operator (operations outside any tenant: `tenant list`, `whoami`).
    func operatorRecord() async throws(ConsoleError) -> OperatorRecord
    /// The caller's session in the chosen tenant (or their only one).
    func session() async throws(ConsoleError) -> Session
    /// `caller`'s session (`use TENANT` asks for another tenant's).
    func session(as caller: Caller) async throws(ConsoleError) -> Session

    /// Reports progress from any thread, and stops the operation with `interrupted` once its
    /// caller has gone (Ctrl-C in the console, a dropped connection to the server).
    func progress(_ event: ProgressEvent) throws(ConsoleError)
    /// Throws `interrupted` once the caller has gone; long jobs call it between batches.
    func checkCancelled(done: Int?) throws(ConsoleError)
    /// Whether the caller has gone (readable from any thread, unlike `Task.isCancelled`).
    var isCancelled: Bool { get }
    /// Whether the serving process is stopping: a job made of many destructive calls (cleanup)
    /// starts no new one, so it answers within the drain instead of being cut off mid-call.
    var isStopping: Bool { get }

    /// The reset service for the session's tenant (its Backup Service: the sandbox's, or the URL's).
    func resetService(_ session: Session) async throws(ConsoleError) -> ResetService
    /// The cleanup service for the session's tenant (its Turnkey: the sandbox, or the live org).
    func cleanupService(_ session: Session) async throws(ConsoleError) -> CleanupService

    /// Drops cached operators and sessions (after a grant, a removal, a tenant deletion).
    func forgetSessions()
    /// What this console allows when it serves others; `nil` in-process.
    var serverPolicy: ServerPolicy? { get }
    /// The signer of audit checkpoints, when this console has one.
    var auditSigner: AuditSigner? { get }
    /// Public keys of audit keys the signer replaced.
    var retiredAuditKeys: [AuditPublicKey] { get }
}

extension OperationContext {
    public func checkCancelled() throws(ConsoleError) { try checkCancelled(done: nil) }
    public var isStopping: Bool { false }
}
