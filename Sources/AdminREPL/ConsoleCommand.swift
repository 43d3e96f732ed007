import ArgumentParser
import BackupModel

/// A command of the tree: parsed by swift-argument-parser, executed against a context.
///
/// `execute` parses nothing and renders nothing: it calls one service and returns values the
/// executor renders as a table or one JSON line.
protocol ConsoleCommand: ParsableCommand {
    @MainActor func execute(_ ctx: CommandContext) async throws -> CommandOutput
}

/// The command tree shared by the REPL, `-c`, `-f` and stdin.
struct ConsoleLine: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "backupctl",
        abstract: "Admin and disaster-recovery console for the end-to-end encrypted backup system.",
        subcommands: [
            InitCommand.self, DemoCommand.self, UseCommand.self, WhoamiCommand.self, QuitCommand.self,
            ExitCommand.self, TenantCommand.self, OperatorCommand.self, ImportCommand.self, SeedCommand.self,
            AuditCommand.self, RecoveryCommand.self, ResetCommand.self, CleanupCommand.self, SandboxCommand.self,
            ServeCommand.self, WorkerCommand.self,
            LookupCommand.self, ShowCommand.self, CheckCommand.self, StatsCommand.self, BackupsCommand.self,
            SetCommand.self, ContextCommand.self,
        ])

}
