import Access
import BackupCrypto
import BackupModel
import ConsoleStore
import Foundation

/// Everything a command needs at run time: settings, the store (opened on first use), the
/// authenticated operator, the selected tenant, and how to talk to the operator.
///
/// One context lives for a whole process (REPL session or batch), so `use` persists and the
/// store is opened once.
@MainActor
final class CommandContext {
    var settings: GlobalSettings
    let environment: [String: String]
    let clock: WallClock
    let random: any RandomSource
    /// Whether a person is at a terminal (prompts, confirmations, hidden input).
    let interactive: Bool

    private var openedStore: (any ConsoleStore)?
    private var cachedOperator: OperatorRecord?
    /// The tenant chosen by `use`, `--tenant` or `$BACKUPCTL_TENANT`.
    var tenantName: String? {
        didSet { cachedSession = nil }
    }
    /// The last session and when it was read (monotonic ns). Reused for at most a second, so a
    /// 100,000-line script does not re-read its grant per line, yet a revoked role stops
    /// working within a second in a long REPL or batch.
    private var cachedSession: (session: Session, readAt: UInt64)?
    /// Set by `quit`/`exit`.
    var quitRequested = false
    /// A token handed over in-process (`demo`), instead of the file or environment.
    var tokenOverride: SecretBytes?
    /// Set by `demo` on a terminal: open the REPL once the command is done.
    var startREPLAfterCommand = false
    /// Whether commands come from the REPL (set by ``REPL``): `demo` then asks before it
    /// switches the session to its own store and operator.
    var inREPL = false
    /// Output settings a `set` command changed, applied by the executor once the line is done
    /// (its per-line options are undone first).
    var sessionSettings: GlobalSettings?
    /// Batch lines whose output is held for a grouped audit (``Executor/releaseHeld()``).
    var heldBatchLines: [Int] = []
    /// The script and line of the running batch command (`-f`, `-c`, piped stdin); errors name it.
    var batchLine: (file: String, line: Int)?
    /// Batch from a file or `-c`: the audit entries of consecutive lookups and `show`s share
    /// one transaction, and their output waits for it (see ``Executor``).
    var groupsReadAudits = false
    /// Whether the running command's read audits are held (applied to the store when it opens).
    var holdingReadAudits = false {
        didSet { openedStore?.holdReadAudits(holdingReadAudits) }
    }

    init(
        settings: GlobalSettings, environment: [String: String], interactive: Bool,
        clock: WallClock = .system, random: any RandomSource = SystemRandom()
    ) {
        self.settings = settings
        self.environment = environment
        self.interactive = interactive
        self.clock = clock
        self.random = random
        tenantName = settings.tenant ?? environment["BACKUPCTL_TENANT"].flatMap { $0.isEmpty ? nil : $0 }
    }

    var style: RenderStyle {
        RenderStyle(
            color: settings.useColor(isTerminal: Terminal.stdoutIsTerminal, environment: environment),
            width: Terminal.width)
    }

    /// Writes the held read audits, then the output that waited for them. When the audit
    /// cannot be written, that output is dropped (no one may see a read the log does not
    /// record) and the error says so.
    func releaseHeld() throws(ConsoleError) {
        do {
            try openedStore?.flushAudit()
        } catch {
            Terminal.discardHeld()
            throw ConsoleError(
                error.kind, code: error.code,
                "\(error.message) The output of the lookups and shows since the last one printed was withheld: "
                    + "they could not be audited.")
        }
        Terminal.releaseHeld()
    }

    /// Points this context at another store file (closing nothing: SQLite handles close on release).
    func switchStore(to path: String) {
        settings.dbPath = path
        openedStore = nil
        cachedOperator = nil
        cachedSession = nil
    }

    func store() throws(ConsoleError) -> any ConsoleStore {
        if let openedStore { return openedStore }
        let store = try SQLiteConsoleStore(path: settings.dbPath, clock: clock.millis)
        store.holdReadAudits(holdingReadAudits)
        openedStore = store
        return store
    }

    /// Opens the store only if its file exists (for commands that must not create it).
    func existingStore() throws(ConsoleError) -> any ConsoleStore {
        if openedStore == nil, !FileManager.default.fileExists(atPath: settings.dbPath) {
            throw ConsoleError(
                .notFound, code: "no_store",
                "No console store at \(settings.dbPath); run `backupctl init --admin NAME` first (or pass --db).")
        }
        return try store()
    }

    var access: AccessService {
        get throws(ConsoleError) { AccessService(store: try existingStore(), clock: clock, random: random) }
    }

    /// The operator behind `--token-file` or `$BACKUPCTL_TOKEN`, authenticated once.
    func currentOperator() throws(ConsoleError) -> OperatorRecord {
        if let cachedOperator { return cachedOperator }
        let token = try readToken()
        let op = try access.authenticate(token: token)
        cachedOperator = op
        return op
    }

    private func readToken() throws(ConsoleError) -> SecretBytes {
        if let tokenOverride { return tokenOverride }
        if let path = settings.tokenFile {
            guard var bytes = FileManager.default.contents(atPath: path).map(Array.init) else {
                throw ConsoleError(.permissionDenied, code: "invalid_token", "Cannot read the token file \(path).")
            }
            defer { for i in bytes.indices { bytes[i] = 0 } }
            return try OperatorToken.parse(bytes)
        }
        if let env = environment["BACKUPCTL_TOKEN"], !env.isEmpty {
            return try OperatorToken.parse(Array(env.utf8))
        }
        throw ConsoleError(
            .permissionDenied, code: "missing_token",
            "No operator token: pass --token-file PATH or set BACKUPCTL_TOKEN.")
    }

    /// The session for the selected tenant (or the operator's only tenant).
    func session() throws(ConsoleError) -> Session {
        let now = DispatchTime.now().uptimeNanoseconds
        if let cached = cachedSession, now - cached.readAt < 1_000_000_000 { return cached.session }
        let session = try readSession()
        cachedSession = (session, now)
        return session
    }

    private func readSession() throws(ConsoleError) -> Session {
        let op = try currentOperator()
        let access = try access
        let name: TenantName
        if let chosen = tenantName {
            name = try TenantName(chosen)
        } else {
            let visible = try access.tenants(visibleTo: op)
            guard visible.count == 1, let only = visible.first else {
                throw ConsoleError.usage(
                    visible.isEmpty
                        ? "Operator \(op.name) has no role in any tenant."
                        : "No tenant selected: pass --tenant NAME or run `use NAME` (tenant list shows yours).")
            }
            name = only.0.name
        }
        return try session(operator: op, tenant: name)
    }

    /// The operator's session in `name`; a miss names a tenant of theirs that is spelled alike.
    func session(operator op: OperatorRecord, tenant name: TenantName) throws(ConsoleError) -> Session {
        let access = try access
        do {
            return try access.session(operator: op, tenant: name)
        } catch {
            guard error.kind == .permissionDenied || error.kind == .notFound else { throw error }
            let visible = ((try? access.tenants(visibleTo: op)) ?? []).map(\.0.name.rawValue)
            let hint = Suggest.didYouMean(name.rawValue, among: visible)
            guard !hint.isEmpty else { throw error }
            throw ConsoleError(error.kind, code: error.code, error.message + hint)
        }
    }

    /// Asks the operator to type the tenant name before a destructive action; in batch mode
    /// `--yes` is required instead.
    func confirmDestructive(_ what: String, tenant: TenantName) throws(ConsoleError) {
        if settings.yes { return }
        guard interactive else {
            throw ConsoleError.usage("\(what): this is destructive; pass --yes to confirm it in batch mode.")
        }
        Terminal.writeErr("\(what). Type the tenant name (\(tenant)) to confirm:")
        FileHandle.standardError.write(Data("> ".utf8))
        let answer = Terminal.readLine()?.trimmingCharacters(in: .whitespaces)
        guard answer == tenant.rawValue else {
            throw ConsoleError(.conflict, code: "not_confirmed", "Not confirmed; nothing was changed.")
        }
    }
}
