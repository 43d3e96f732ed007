import ArgumentParser
import BackupModel
import BackupServiceSandbox
import Foundation
import Logging
import SandboxHTTP
import TurnkeySandbox

/// `sandbox turnkey --listen 127.0.0.1:PORT --state FILE`: the standalone Turnkey emulator (token-free).
struct SandboxCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sandbox", abstract: "Run emulators for drills and tests.",
        subcommands: [Turnkey.self, BackupService.self, SimulateCommand.self])

    struct Turnkey: ConsoleCommand {
        static let configuration = CommandConfiguration(
            commandName: "turnkey",
            abstract:
                "Serve the Turnkey sandbox on a loopback address until Ctrl-C or SIGTERM (state saved as it changes).")

        @Option(help: "host:port to listen on (port 0 picks one).") var listen: String = "127.0.0.1:0"
        @Option(help: "JSON state file; created with fresh keys (FILE.api-key, FILE.cleanup-key) if missing.")
        var state: String
        @Option(help: "Random sub-orgs to create with a new state file.") var suborgs: Int = 0

        /// How often a changed state is written while serving, in milliseconds.
        static let saveIntervalMillis: UInt64 = 200

        func execute(_ ctx: CommandContext) async throws -> CommandOutput {
            let parts = listen.split(separator: ":")
            guard parts.count == 2, let port = Int(parts[1]), (0...65535).contains(port),
                ["127.0.0.1", "localhost", "::1"].contains(String(parts[0]))
            else { throw ConsoleError.usage("--listen must be a loopback host:port, e.g. 127.0.0.1:8787.") }
            let file = try SandboxStateFile.loadOrCreate(path: state, subOrgCount: suborgs)
            let (sandbox, directory) = try await file.makeSandbox()
            let server = try await SandboxServer.start(sandbox, host: String(parts[0]), port: port)
            Terminal.writeErr(
                "Turnkey sandbox on \(server.baseURL): parent org \(file.parentOrgId), API key \(file.apiKeyFile), cleanup key \(file.cleanupKeyFile). Ctrl-C stops."
            )
            // Durable while serving: whatever changed is written (atomically) within one interval,
            // so the file is current even if this process is killed.
            let saver = StateSaver(file: file, path: state, sandbox: sandbox, directory: directory)
            await saver.markSaved()
            do {
                try await SignalLifecycle.runUntilSignalled(
                    every: .milliseconds(Self.saveIntervalMillis), logger: Logger(label: "backupctl.sandbox")
                ) { try await saver.saveIfChanged() }
            } catch {
                await server.stop()
                throw error
            }
            await server.stop()
            let saved = try await saver.save()
            let remaining = saved.subOrgs.count
            return .message(
                "sandbox stopped; \(remaining) sub-orgs saved to \(state)",
                json: ["url": server.baseURL, "parentOrgId": saved.parentOrgId, "subOrgs": "\(remaining)"])
        }
    }

    struct BackupService: ConsoleCommand {
        static let configuration = CommandConfiguration(
            commandName: "backup-service",
            abstract:
                "Serve the Backup Service sandbox (every route of the service) over an export directory until Ctrl-C or SIGTERM.",
            discussion: """
                The directory is the service's storage: every change is written through in the export
                layout (DIR/<id>/metadata, DIR/<id>/backup, DIR/factor_lookup.jsonl), as the service
                changes its objects; a reset deletes the backup's files and rows. Tokens live 15 minutes
                and are single use for as long as the process runs.
                Example: backupctl sandbox backup-service --listen 127.0.0.1:8788 --export runbooks/fixtures/export
                """)

        @Option(help: "host:port to listen on (port 0 picks one).") var listen: String = "127.0.0.1:0"
        @Option(help: "The export directory the service serves and resets in.") var export: String

        func execute(_ ctx: CommandContext) async throws -> CommandOutput {
            let parts = listen.split(separator: ":")
            guard parts.count == 2, let port = Int(parts[1]), (0...65535).contains(port),
                ["127.0.0.1", "localhost", "::1"].contains(String(parts[0]))
            else { throw ConsoleError.usage("--listen must be a loopback host:port, e.g. 127.0.0.1:8788.") }
            let backend = try ExportBackend(directory: export)
            let emulator = BackupServiceEmulator(backend: backend, key: ctx.random.bytes(32), clock: ctx.clock)
            let server = try await BackupServiceSandboxServer.start(emulator, host: String(parts[0]), port: port)
            Terminal.writeErr("Backup Service sandbox on \(server.baseURL) over \(export). Ctrl-C stops.")
            do {
                try await SignalLifecycle.runUntilSignalled(logger: Logger(label: "backupctl.sandbox"))
            } catch {
                await server.stop()
                throw error
            }
            await server.stop()
            return .message("backup service sandbox stopped", json: ["url": server.baseURL])
        }
    }
}

/// The Turnkey sandbox's state file, written whenever the sandbox changed.
actor StateSaver {
    private var file: SandboxStateFile
    let path: String
    let sandbox: TurnkeySandbox
    let directory: MemoryDirectory
    private var saved: Int?

    init(file: SandboxStateFile, path: String, sandbox: TurnkeySandbox, directory: MemoryDirectory) {
        self.file = file
        self.path = path
        self.sandbox = sandbox
        self.directory = directory
    }

    /// The sandbox as it is now counts as saved (it was just loaded from the file).
    func markSaved() async { saved = await sandbox.mutations }

    func saveIfChanged() async throws {
        let now = await sandbox.mutations
        guard now != saved else { return }
        _ = try await save()
    }

    /// Writes the current state; returns it.
    func save() async throws -> SandboxStateFile {
        let now = await sandbox.mutations
        file = await file.updated(from: sandbox, directory: directory)
        try file.save(to: path)
        saved = now
        return file
    }
}
