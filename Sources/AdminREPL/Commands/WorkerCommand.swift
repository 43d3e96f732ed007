import ArgumentParser
import BackupModel
import ConsoleService
import Foundation
import Logging
import ServiceLifecycle
import UnixSignals

/// `worker [--workers N]`: cleanup workers without the HTTP server, on the store (`--db`, or
/// `BACKUPCTL_DB` for a `postgres://` URL), until SIGTERM or Ctrl-C. They take the items that
/// `cleanup run --execute --queue` queued, in every tenant or the `--tenant` given.
///
/// Its first line on stdout is `{"workers":N}` once the store is open; logs go to stderr.
struct WorkerCommand: ConsoleCommand {
    static let configuration = CommandConfiguration(
        commandName: "worker",
        abstract: "Run cleanup workers on the queued items until SIGTERM or Ctrl-C.",
        discussion: """
            Workers in any number of processes share the queue (no item is taken twice) and each \
            tenant's Turnkey rate. A worker killed mid-item loses its lease; another finishes the \
            item with the body journaled before the first send. SIGTERM (SIGINT, SIGHUP) lets items \
            in hand finish; a worker still waiting on its store or Turnkey \
            BACKUPCTL_STOP_GRACE_SECONDS (60) later ends with stop_timeout and 128 + the signal. \
            On a store whose audit a server signs, set BACKUPCTL_AUDIT_KEY to the key file: the \
            worker signs its entries then; without it, it refuses to start (audit_signed_store).
            """)

    @Option(help: "Worker tasks in this process (1…64).") var workers: Int = 2
    @Option(help: "An idle worker looks for new items after this many milliseconds (doubling to 30 s).")
    var idleMillis: Int64 = 1000
    @Option(help: "A claim lapses this many seconds after the worker's last heartbeat (1…3600).")
    var leaseSeconds: Int64 = 60

    func execute(_ ctx: CommandContext) async throws -> CommandOutput {
        guard (1...64).contains(workers), (1...60_000).contains(idleMillis), (1...3600).contains(leaseSeconds) else {
            throw ConsoleError.usage("--workers must be 1…64, --idle-millis 1…60000 and --lease-seconds 1…3600.")
        }
        let console = try ctx.local
        let only = try ctx.settings.tenant.map { (text) throws(ConsoleError) in try TenantName(text) }
        _ = try await console.store()
        // Its deletions are audited: signed with BACKUPCTL_AUDIT_KEY, else never on a signed store.
        try await console.checkAuditWrites()
        var logger = Logger(label: "backupctl.worker", factory: { StreamLogHandler.standardError(label: $0) })
        logger.logLevel = ctx.environment["BACKUPCTL_LOG_LEVEL"].flatMap { Logger.Level(rawValue: $0) } ?? .notice
        FileHandle.standardOutput.write(Data((#"{"workers":\#(workers)}"# + "\n").utf8))
        let service = CleanupWorkersService(
            console: console, workers: workers, only: only, idleMillis: idleMillis, leaseMillis: leaseSeconds * 1000,
            logger: logger)
        let group = ServiceGroup(
            configuration: ServiceGroupConfiguration(
                services: [.init(service: service)], gracefulShutdownSignals: StopDeadline.signals, logger: logger))
        StopDeadline.arm(command: "backupctl worker", drainSeconds: 0)
        do {
            try await group.run()
        } catch {
            await console.close()
            throw ConsoleError.internalError("The cleanup workers stopped: \(String(describing: error).prefix(200)).")
        }
        await console.close()
        return .empty
    }
}

/// The workers of ``LocalConsole/runCleanupWorkers(count:only:idleMillis:leaseMillis:logger:sleep:)`` as a
/// service: a graceful shutdown cancels them, and items in hand finish first.
struct CleanupWorkersService: Service {
    let console: LocalConsole
    let workers: Int
    let only: TenantName?
    let idleMillis: Int64
    let leaseMillis: Int64
    let logger: Logger

    func run() async throws {
        await cancelWhenGracefulShutdown {
            await console.runCleanupWorkers(
                count: workers, only: only, idleMillis: idleMillis, leaseMillis: leaseMillis, logger: logger)
        }
    }
}
