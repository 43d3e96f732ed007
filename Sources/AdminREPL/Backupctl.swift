import ArgumentParser
import BackupModel
import Foundation
import PostgresStore

/// The process entry: global options of DESIGN.md §2, then a REPL, a batch, or one command.
@main
struct Backupctl: AsyncParsableCommand {
    static let version = "0.1.0"

    static let configuration = CommandConfiguration(
        commandName: "backupctl",
        abstract: "Admin and disaster-recovery console for the end-to-end encrypted backup system.",
        discussion: """
            With no command, -c or -f: a REPL when stdin is a terminal, otherwise commands are read \
            from stdin, one a line. Run `backupctl help` for the command list.
            Exit codes: 0 ok, 1 failed, 2 remote system failed, 64 usage, 75 rate limited (try later), \
            77 permission denied, 78 configuration (TLS trust, credential files, server URL).
            """)

    @Option(help: "The embedded store (default $BACKUPCTL_DB, else $XDG_DATA_HOME/backupctl/console.db).")
    var db: String?
    @Option(help: "Tenant for this run (default $BACKUPCTL_TENANT).") var tenant: String?
    @Option(help: "Run commands on this `backupctl serve` (default $BACKUPCTL_SERVER, else the current context).")
    var server: String?
    @Option(help: "Use this saved context (default $BACKUPCTL_CONTEXT, else the current one; `context list`).")
    var context: String?
    @Option(help: "A PEM CA certificate to trust for --server (default $BACKUPCTL_CA_FILE, else the context's).")
    var caFile: String?
    @Flag(help: "Allow plain http:// to a --server that is not this machine (the token crosses the network in clear).")
    var insecurePlainHttp = false
    @Option(help: "table, json, yaml or csv (default $BACKUPCTL_FORMAT, else table).") var format: OutputFormat?
    @Option(help: "File holding the operator token (default: the token in $BACKUPCTL_TOKEN).") var tokenFile: String?
    @Option(
        name: .customShort("c"), help: ArgumentHelp("Run one command; repeatable, run in order.", valueName: "command"))
    var command: [String] = []
    @Option(
        name: .customShort("f"),
        help: ArgumentHelp("Run a script, one command a line, # comments; - is stdin.", valueName: "file"))
    var file: String?
    @Flag(help: "Batch: go on after a failing command.") var continueOnError = false
    @Flag(help: "Answer yes to confirmations (batch needs it for destructive commands).") var yes = false
    @Option(help: "auto, always or never (NO_COLOR and TERM=dumb turn auto off).") var color: ColorMode = .auto
    @Flag(help: "Never page long output (default pager: $BACKUPCTL_PAGER, else $PAGER, else less).")
    var noPager = false
    @Argument(parsing: .captureForPassthrough, help: "A command to run directly, e.g. `lookup passkey ID`.")
    var words: [String] = []

    /// The standard entry, except that `--generate-completion-script SHELL` describes the whole
    /// command tree (``CompletionRoot``) instead of this passthrough root.
    func settings(environment: [String: String]) throws(ConsoleError) -> GlobalSettings {
        if let db, PostgresStoreConfiguration.hasPassword(db) {
            throw .usage(
                "--db must not carry a database password (arguments show in `ps`): set PGPASSWORD, use a passfile "
                    + "(passfile=FILE or ~/.pgpass), or put the whole URL in BACKUPCTL_DB.")
        }
        if db != nil, server != nil {
            throw .usage("--db and --server name two different consoles: pass one of them.")
        }
        let envFormat = environment["BACKUPCTL_FORMAT"].flatMap { $0.isEmpty ? nil : $0 } ?? "table"
        var format = self.format ?? .table
        if self.format == nil { format = try OutputFormat.parse(envFormat) }
        var settings = GlobalSettings(
            dbPath: db ?? GlobalSettings.defaultDBPath(environment: environment), tenant: tenant, format: format,
            tokenFile: tokenFile, continueOnError: continueOnError, yes: yes, color: color, noPager: noPager,
            // An explicit --db wins over $BACKUPCTL_SERVER: the store named on the line is the one meant.
            server: server ?? (db != nil ? nil : environment["BACKUPCTL_SERVER"].flatMap { $0.isEmpty ? nil : $0 }))
        settings.insecurePlainHTTP = insecurePlainHttp
        try applyContext(to: &settings, environment: environment)
        // --ca-file, else $BACKUPCTL_CA_FILE, else the context's.
        settings.caFile =
            caFile ?? environment["BACKUPCTL_CA_FILE"].flatMap { $0.isEmpty ? nil : $0 } ?? settings.caFile
        return settings
    }

    /// Fills what the run did not say from the chosen context: `--context` or
    /// `$BACKUPCTL_CONTEXT`, else the current context when the run names neither a server nor a
    /// store of its own. Flags and environment variables win over the context's values.
    private func applyContext(to settings: inout GlobalSettings, environment: [String: String]) throws(ConsoleError) {
        // Local commands never need a context (and must work with a broken config to fix it).
        if let first = words.first, ["context", "init", "demo", "recovery", "sandbox", "help"].contains(first) {
            return
        }
        let named = context ?? environment["BACKUPCTL_CONTEXT"].flatMap { $0.isEmpty ? nil : $0 }
        let ownStore = settings.server != nil || db != nil || environment["BACKUPCTL_DB"].map { !$0.isEmpty } == true
        if named == nil, let server = settings.server {
            // `--server URL` alone: the CA of a context for that very server (the current one
            // first) still applies; nothing else of it does.
            settings.caFile = (try? ClientConfig.load(environment: environment))?.caFile(forServer: server)
            return
        }
        guard named != nil || !ownStore else { return }
        let config = try ClientConfig.load(environment: environment)
        guard let (name, chosen) = try config.selected(named: named, hasOwnStore: ownStore) else { return }
        settings.contextName = name
        if settings.server == nil { settings.server = chosen.server }
        let envToken = environment["BACKUPCTL_TOKEN"].map { !$0.isEmpty } == true
        if settings.tokenFile == nil, !envToken { settings.tokenFile = chosen.tokenFile }
        if settings.tenant == nil, environment["BACKUPCTL_TENANT"].map({ !$0.isEmpty }) != true {
            settings.tenant = chosen.tenant
        }
        settings.caFile = chosen.caFile
    }

    /// Parses the global options itself so that a bad one is the same one-line error, with its
    /// code, as any other (ArgumentParser's own report is several lines of help).
    @MainActor static func main() async {
        let arguments = Array(CommandLine.arguments.dropFirst())
        if let index = arguments.firstIndex(where: { $0.hasPrefix("--generate-completion-script") }) {
            let inline = arguments[index].split(separator: "=", maxSplits: 1).dropFirst().first.map(String.init)
            let shell = inline ?? (index + 1 < arguments.count ? arguments[index + 1] : "")
            guard let script = CompletionRoot.script(for: shell) else {
                reportUsage(
                    "--generate-completion-script takes bash, zsh or fish, got '\(shell)'.", arguments: arguments)
                Foundation.exit(ExitStatus.usage)
            }
            Terminal.writeOut(script)
            return
        }
        do {
            // As ArgumentParser's own `main()` (its async parse included: the REPL's Ctrl-C
            // handling depends on how the main task starts); only the error report differs.
            var command = try await asyncParseAsRoot(arguments)
            if var asyncCommand = command as? any AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch {
            if error is ExitCode || exitCode(for: error) == .success {
                exit(withError: error)
            }
            let first = message(for: error).split(separator: "\n").first.map(String.init) ?? "invalid options"
            reportUsage(first.hasPrefix("Error: ") ? String(first.dropFirst(7)) : first, arguments: arguments)
            Foundation.exit(ExitStatus.usage)
        }
    }

    /// A usage error before the settings exist: JSON when the words or the environment ask for it.
    static func reportUsage(_ message: String, arguments: [String]) {
        report(.usage(message), arguments: arguments)
    }

    /// An error before the settings exist, in the executor's form.
    static func report(_ error: ConsoleError, arguments: [String]) {
        let message = error.message
        let environment = ProcessInfo.processInfo.environment
        let json =
            zip(arguments, arguments.dropFirst()).contains { $0 == "--format" && $1 == "json" }
            || arguments.contains("--format=json") || environment["BACKUPCTL_FORMAT"] == "json"
        if json {
            Terminal.writeErr(JSONLine.encode(["error": ["code": error.code, "message": SecretShape.redact(message)]]))
        } else {
            Terminal.writeErr("error[\(error.code)]: \(SafeText.message(message))")
        }
    }

    @MainActor
    func run() async throws {
        let environment = ProcessInfo.processInfo.environment
        let settings: GlobalSettings
        var options = self
        do {
            try options.absorbTrailingOptions()
            settings = try options.settings(environment: environment)
        } catch  where error.kind == .usage {
            Self.reportUsage(error.message, arguments: Array(CommandLine.arguments.dropFirst()))
            throw ExitCode(ExitStatus.usage)
        } catch {
            // A broken or unsafe client config: its own code and exit status.
            Self.report(error, arguments: Array(CommandLine.arguments.dropFirst()))
            throw ExitCode(ExitStatus.code(for: error))
        }
        let localOnly = ["init", "demo", "sandbox", "recovery", "context"]
        if settings.server != nil, !localOnly.contains(options.words.first ?? "") { EventLoopTakeover.install() }
        let status = await Launcher(options: options, settings: settings, environment: environment).run()
        if status != 0 { throw ExitCode(status) }
    }
}

extension Backupctl {
    /// Global options written after the command words (`backupctl cleanup run --execute --yes`)
    /// count as if given before them (``TrailingOptions``).
    @MainActor
    mutating func absorbTrailingOptions() throws(ConsoleError) {
        let (kept, trailing) = try TrailingOptions.extract(words)
        guard !trailing.isEmpty else { return }
        words = kept
        db = trailing.db ?? db
        tenant = trailing.tenant ?? tenant
        server = trailing.server ?? server
        context = trailing.context ?? context
        if let text = trailing.format { format = try OutputFormat.parse(text) }
        tokenFile = trailing.tokenFile ?? tokenFile
        if let text = trailing.color { color = try ColorMode.parse(text) }
        caFile = trailing.caFile ?? caFile
        insecurePlainHttp = insecurePlainHttp || trailing.insecurePlainHTTP
        yes = yes || trailing.yes
        continueOnError = continueOnError || trailing.continueOnError
        noPager = noPager || trailing.noPager
    }
}
