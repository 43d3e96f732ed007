import Access
import BackupCrypto
import BackupModel
import ConsoleClient
import ConsoleService
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

    /// The service layer: in-process on `--db`, or a `backupctl serve` with `--server`.
    private(set) var openedConsole: (any ConsoleAPI)?
    /// The tenant chosen by `use`, `--tenant` or `$BACKUPCTL_TENANT`.
    var tenantName: String?
    /// The operator and tenant the REPL prompt shows (``identity()``).
    var whoami: WhoamiOperation.Output?
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
    /// The script and line of the running batch command (`-f`, `-c`, piped stdin); errors name it.
    var batchLine: (file: String, line: Int)?
    /// A whole script run in-process: the audit entries of its lookups and `show`s are committed
    /// behind them, a group at a time, and their output waits for the commit (``BatchRunner``).
    var auditDeferral: AuditDeferral?
    /// Answers of a script's reads run ahead of their lines, by line (``BatchRunner``):
    /// ``perform(_:progress:)`` hands a line its own instead of calling the service again.
    var readAhead: [Int: ReadAheadAnswer] = [:]
    /// The script lines whose output is held for ``auditDeferral``.
    var heldBatchLines: [Int] = []
    /// Held output whose entries are committing while the script goes on
    /// (``Executor/releaseHeld(behind:)``).
    var releasing: HeldRelease?
    /// The exit status of held reads whose audit failed, released before another command ran
    /// (the script goes on with `--continue-on-error`; ``BatchRunner`` counts the failure).
    var heldFailure: Int32?
    /// The running script goes on after a failure (`--continue-on-error`).
    var continuesOnError = false
    /// Set by ``performJob(_:label:total:)`` when a signal stopped the job: how far it got.
    var interruption: JobInterruption?
    /// A debug build's pause after a script's first read made ahead (``ReadAheadCheckpoint``).
    let readAheadCheckpoint: ReadAheadCheckpoint

    init(
        settings: GlobalSettings, environment: [String: String], interactive: Bool,
        clock: WallClock = .system, random: any RandomSource = SystemRandom()
    ) {
        self.settings = settings
        self.environment = environment
        self.interactive = interactive
        self.clock = clock
        self.random = random
        readAheadCheckpoint = ReadAheadCheckpoint(environment: environment)
        tenantName = settings.tenant ?? environment["BACKUPCTL_TENANT"].flatMap { $0.isEmpty ? nil : $0 }
    }

    var style: RenderStyle {
        RenderStyle(
            color: settings.useColor(isTerminal: Terminal.stdoutIsTerminal, environment: environment),
            width: Terminal.width)
    }

    /// Points this context at another store file (closing nothing: SQLite handles close on release).
    func switchStore(to path: String) {
        settings.dbPath = path
        settings.server = nil
        openedConsole = nil
        whoami = nil
    }

    /// The service layer this context talks to, made on first use.
    var console: any ConsoleAPI {
        get throws(ConsoleError) {
            if let openedConsole { return openedConsole }
            let made: any ConsoleAPI
            if let server = settings.server {
                // A private CA (or a self-signed server certificate) to trust, as PEM.
                made = try RemoteConsole(
                    server: server, caFile: settings.caFile, allowPlainHTTP: settings.insecurePlainHTTP)
            } else {
                // A store a server signs is written here only with its key (the entries are signed then).
                let key = environment["BACKUPCTL_AUDIT_KEY"].flatMap { $0.isEmpty ? nil : $0 }
                made = try LocalConsole(
                    storePath: settings.dbPath, clock: clock, random: random, environment: environment,
                    auditKeyPath: key)
            }
            openedConsole = made
            return made
        }
    }

    /// Who is calling: the token (when one was given) and the chosen tenant.
    var caller: Caller {
        get throws(ConsoleError) {
            let token: SecretBytes?
            do { token = try readToken() } catch  where error.code == "missing_token" { token = nil }
            return Caller(token: token, tenant: tenantName)
        }
    }

    /// Runs one operation of the service layer as this context's operator.
    func perform<Op: ConsoleOperation>(_ operation: Op, progress: ProgressSink? = nil) async throws(ConsoleError)
        -> Op.Output
    {
        if let line = batchLine?.line, let ready = readAhead.removeValue(forKey: line) {
            // A settle for earlier lines may have taken this read's entry and failed: then it
            // is not in the log, and its answer must not be shown.
            if case .success = ready.result,
                let failed = auditDeferral?.failure(keptAfter: ready.keptAfter, through: ready.keptThrough)
            {
                throw ConsoleError(
                    failed.kind, code: failed.code,
                    "\(failed.message) The output of this command was withheld: it could not be audited.")
            }
            if let output = try ready.result.get() as? Op.Output { return output }
        }
        return try await console.perform(operation, as: try caller, progress: progress)
    }

    /// The in-process console; commands that only make sense next to the store (`init`,
    /// `demo`) use it, and refuse against a server.
    var local: LocalConsole {
        get throws(ConsoleError) {
            guard let local = try console as? LocalConsole else {
                throw .usage("This command works on the local store only; run it without --server.")
            }
            return local
        }
    }

    func store() async throws(ConsoleError) -> any FullConsoleStore {
        try await local.store(create: true)
    }

    /// The operator behind `--token-file` or `$BACKUPCTL_TOKEN` (in-process commands only).
    func currentOperator() async throws(ConsoleError) -> OperatorRecord {
        try await local.authenticate(try caller)
    }

    private func readToken() throws(ConsoleError) -> SecretBytes {
        if let tokenOverride { return tokenOverride }
        if let path = settings.tokenFile {
            // Owner-only (others could sign in with it), a regular file (a FIFO never hangs the
            // console); the path is not repeated, in case it is the token itself.
            var bytes: [UInt8]
            do {
                bytes = try InputFile.read(
                    path, what: "The token file", maxBytes: 4096, access: .ownerOnly, code: "invalid_token_file",
                    insecureCode: "insecure_token_file", kind: .configuration)
            } catch {
                throw ConsoleError(
                    .configuration, code: error.code,
                    error.code == "insecure_token_file"
                        ? "The token file given to --token-file can be read or written by others; chmod 600 it."
                        : "Cannot read the token file given to --token-file (missing, unreadable or not a regular file)."
                )
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

    /// The session for the selected tenant (or the operator's only tenant), in-process.
    func session() async throws(ConsoleError) -> Session {
        try await local.session(try caller)
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

/// Output of a script's reads set aside while their audit entries commit: written once
/// ``settling`` finished, dropped if it failed.
struct HeldRelease {
    let settling: AuditSettling
    let output: [Terminal.HeldLine]
    /// The script lines whose output this is.
    let lines: [Int]
}
