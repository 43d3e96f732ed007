import BackupModel
import Foundation
import Hummingbird
import Logging
import NIOCore
import ServiceLifecycle

/// A Hummingbird server on a loopback address for the emulators (Turnkey, Backup Service).
///
/// `start` binds (port 0 picks a free one) and returns once the server listens; `stop` shuts
/// it down gracefully (in-flight requests finish, idle connections close, nothing is logged)
/// and waits for it. The server installs no signal handlers of its own: `backupctl sandbox …`
/// stops it on SIGINT/SIGTERM, tests stop it themselves.
public final class LoopbackServer: Sendable {
    public let host: String
    public let port: Int
    private let task: Task<Void, any Error>
    private let group: ServiceGroup

    private init(host: String, port: Int, task: Task<Void, any Error>, group: ServiceGroup) {
        self.host = host
        self.port = port
        self.task = task
        self.group = group
    }

    /// `http://host:port`.
    public var baseURL: String { "http://\(host):\(port)" }

    /// Starts serving `respond` on `host:port` (0 = ephemeral).
    /// - Parameter what: names the emulator in the bind error ("The Turnkey sandbox").
    /// - Throws: ``ConsoleError`` `sandbox_listen_failed` when the address cannot be bound.
    public static func start(
        _ what: String, host: String = "127.0.0.1", port: Int = 0, logger: Logger,
        respond: @escaping @Sendable (Request) async throws -> Response
    ) async throws(ConsoleError) -> LoopbackServer {
        let (bound, continuation) = AsyncStream<Int>.makeStream()
        let responder = CallbackResponder<BasicRequestContext> { request, _ in try await respond(request) }
        var quiet = logger
        quiet.logLevel = .critical
        let app = Application(
            responder: responder, configuration: .init(address: .hostname(host, port: port)),
            onServerRunning: { channel in
                continuation.yield(channel.localAddress?.port ?? 0)
                continuation.finish()
            }, logger: quiet)
        let group = ServiceGroup(
            configuration: .init(services: [app], gracefulShutdownSignals: [], cancellationSignals: [], logger: quiet))
        let task = Task { try await group.run() }
        // A bind failure ends the server task without a port: end the stream then too.
        let watcher = Task {
            _ = try? await task.value
            continuation.finish()
        }
        var iterator = bound.makeAsyncIterator()
        let boundPort = await iterator.next()
        _ = watcher
        guard let boundPort, boundPort > 0 else {
            task.cancel()
            throw ConsoleError(
                .invalidInput, code: "sandbox_listen_failed", "\(what) could not listen on \(host):\(port).")
        }
        return LoopbackServer(host: host, port: boundPort, task: task, group: group)
    }

    /// Stops the server gracefully and waits for it; cancels it if it has not stopped in 5 s.
    public func stop() async {
        await group.triggerGracefulShutdown()
        let task = task
        let deadline = Task {
            try await Task.sleep(nanoseconds: 5_000_000_000)
            task.cancel()
        }
        _ = try? await task.value
        deadline.cancel()
    }

    /// Runs until the task is cancelled or the server fails.
    public func wait() async throws {
        try await task.value
    }
}
