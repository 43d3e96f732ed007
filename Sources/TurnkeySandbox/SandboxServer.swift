import BackupModel
import Foundation
import Hummingbird
import Logging
import NIOCore
import ServiceLifecycle
import Turnkey

/// Serves a ``TurnkeySandbox`` over HTTP with Hummingbird, on a loopback port.
///
/// `start` binds (port 0 picks a free one) and returns once the server listens; `stop` shuts
/// the server down gracefully (in-flight requests finish, idle connections close, nothing is
/// logged) and waits for it. Tests start one per test; `backupctl sandbox turnkey` runs one
/// until SIGINT/SIGTERM. The server installs no signal handlers of its own.
public final class SandboxServer: Sendable {
    public let sandbox: TurnkeySandbox
    public let host: String
    public let port: Int
    private let task: Task<Void, any Error>
    private let group: ServiceGroup

    private init(sandbox: TurnkeySandbox, host: String, port: Int, task: Task<Void, any Error>, group: ServiceGroup) {
        self.sandbox = sandbox
        self.host = host
        self.port = port
        self.task = task
        self.group = group
    }

    private static let stampHeader = HTTPFields.Element.Name("X-Stamp")

    /// The base URL to give a ``TurnkeyClient``.
    public var baseURL: String { "http://\(host):\(port)" }

    /// Starts serving `sandbox` on `host:port` (0 = ephemeral).
    /// - Throws: ``ConsoleError`` `sandbox_listen_failed` when the address cannot be bound.
    public static func start(
        _ sandbox: TurnkeySandbox, host: String = "127.0.0.1", port: Int = 0,
        logger: Logger = Logger(label: "backupctl.sandbox")
    ) async throws(ConsoleError) -> SandboxServer {
        let (bound, continuation) = AsyncStream<Int>.makeStream()
        let responder = CallbackResponder<BasicRequestContext> { request, _ in
            var request = request
            let buffer = try await request.collectBody(upTo: 1 << 20)
            let answer = await sandbox.handle(
                path: request.uri.path, stamp: Self.stampHeader.flatMap { request.headers[$0] },
                body: Array(buffer.readableBytesView))
            var headers = HTTPFields()
            headers[.contentType] = "application/json"
            if let retryAfter = answer.retryAfter { headers[.retryAfter] = retryAfter }
            return Response(
                status: .init(code: answer.status), headers: headers,
                body: ResponseBody(byteBuffer: ByteBuffer(bytes: answer.body)))
        }
        var quiet = logger
        quiet.logLevel = .warning
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
                .invalidInput, code: "sandbox_listen_failed", "The Turnkey sandbox could not listen on \(host):\(port)."
            )
        }
        return SandboxServer(sandbox: sandbox, host: host, port: boundPort, task: task, group: group)
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

/// In-process ``TurnkeyTransport``: hands requests straight to a ``TurnkeySandbox``.
///
/// Used for sandbox tenants, so `cleanup` against a seeded sandbox needs no port.
public struct SandboxTransport: TurnkeyTransport {
    public let sandbox: TurnkeySandbox

    public init(sandbox: TurnkeySandbox) { self.sandbox = sandbox }

    public func send(_ request: TurnkeyHTTPRequest) async throws(TurnkeyError) -> TurnkeyHTTPResponse {
        if Task.isCancelled { throw TurnkeyError(.cancelled, message: "the call to \(request.path) was cancelled") }
        return await sandbox.handle(path: request.path, stamp: request.stamp, body: request.body)
    }
}
