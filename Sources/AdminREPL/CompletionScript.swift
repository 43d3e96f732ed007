import ArgumentParser

/// What `backupctl --generate-completion-script bash|zsh|fish` describes: the global options
/// and the whole command tree. The process's own root (``Backupctl``) passes command words
/// through untouched, so a script generated from it would know no command.
struct CompletionRoot: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "backupctl",
        abstract: Backupctl.configuration.abstract,
        subcommands: ConsoleLine.configuration.subcommands)

    // The global options of ``Backupctl``; `CompletionTests` checks the two lists match.
    @Option(help: "The embedded store.", completion: .file()) var db: String?
    @Option(help: "Tenant for this run.", completion: .shellCommand(tenantNames)) var tenant: String?
    @Option(help: "table, json, yaml or csv.", completion: .list(OutputFormat.allCases.map(\.rawValue))) var format:
        String?
    @Option(help: "File holding the operator token.", completion: .file()) var tokenFile: String?
    @Option(help: "Run commands on this backupctl serve.") var server: String?
    @Option(help: "Use this saved context.", completion: .shellCommand(contextNames)) var context: String?
    @Option(help: "A PEM CA certificate to trust for --server.", completion: .file()) var caFile: String?
    @Flag(help: "Allow plain http:// to a --server that is not this machine.") var insecurePlainHttp = false
    @Option(name: .customShort("c"), help: ArgumentHelp("Run one command; repeatable.", valueName: "command"))
    var command: [String] = []
    @Option(
        name: .customShort("f"), help: ArgumentHelp("Run a script; - is stdin.", valueName: "file"), completion: .file()
    ) var file: String?
    @Flag(help: "Batch: go on after a failing command.") var continueOnError = false
    @Flag(help: "Answer yes to confirmations.") var yes = false
    @Option(help: "auto, always or never.", completion: .list(ColorMode.allCases.map(\.rawValue)))
    var color: String = "auto"
    @Flag(help: "Never page long output.") var noPager = false

    /// The shell command a completion script runs for tenant names: the operator's own tenants,
    /// with whatever store and token the shell's environment points at.
    static let tenantNames = "backupctl --no-pager --color never tenant list 2>/dev/null | awk 'NR > 1 { print $1 }'"
    static let contextNames =
        "backupctl --no-pager --color never context list 2>/dev/null | awk 'NR > 1 { print ($1 == \"*\" ? $2 : $1) }'"

    /// The script for `shell`, or `nil` for a shell ArgumentParser does not know.
    static func script(for shell: String) -> String? {
        CompletionShell(rawValue: shell).map { completionScript(for: $0) }
    }
}
