import ArgumentParser
import BackupModel
import Foundation

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
            Exit codes: 0 ok, 1 failed, 2 remote system failed, 64 usage, 77 permission denied.
            """)

    @Option(help: "The embedded store (default $BACKUPCTL_DB, else $XDG_DATA_HOME/backupctl/console.db).")
    var db: String?
    @Option(help: "Tenant for this run (default $BACKUPCTL_TENANT).") var tenant: String?
    @Option(help: "table, json, yaml or csv (default $BACKUPCTL_FORMAT, else table).") var format: String?
    @Option(help: "File holding the operator token (default: the token in $BACKUPCTL_TOKEN).") var tokenFile: String?
    @Option(name: .customShort("c"), help: "Run one command; repeatable, run in order.") var command: [String] = []
    @Option(name: .customShort("f"), help: "Run a script, one command a line, # comments; - is stdin.")
    var file: String?
    @Flag(help: "Batch: go on after a failing command.") var continueOnError = false
    @Flag(help: "Answer yes to confirmations (batch needs it for destructive commands).") var yes = false
    @Option(help: "auto, always or never (NO_COLOR and TERM=dumb turn auto off).") var color: String = "auto"
    @Argument(parsing: .captureForPassthrough, help: "A command to run directly, e.g. `lookup passkey ID`.")
    var words: [String] = []

    func settings(environment: [String: String]) throws(ConsoleError) -> GlobalSettings {
        let formatText = format ?? environment["BACKUPCTL_FORMAT"].flatMap { $0.isEmpty ? nil : $0 } ?? "table"
        guard let format = OutputFormat(rawValue: formatText) else {
            throw .usage("--format must be table, json, yaml or csv, got \(formatText).")
        }
        guard let color = ColorMode(rawValue: color) else {
            throw .usage("--color must be auto, always or never, got \(color).")
        }
        return GlobalSettings(
            dbPath: db ?? GlobalSettings.defaultDBPath(environment: environment), tenant: tenant, format: format,
            tokenFile: tokenFile, continueOnError: continueOnError, yes: yes, color: color)
    }

    @MainActor
    func run() async throws {
        let environment = ProcessInfo.processInfo.environment
        let settings: GlobalSettings
        do {
            settings = try self.settings(environment: environment)
        } catch {
            Terminal.writeErr("error: \(error.message)")
            throw ExitCode(ExitStatus.usage)
        }
        let status = await Launcher(options: self, settings: settings, environment: environment).run()
        if status != 0 { throw ExitCode(status) }
    }
}
