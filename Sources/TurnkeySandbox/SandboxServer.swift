import BackupModel
import Foundation
import Hummingbird
import Logging
import NIOCore
import SandboxHTTP
import Turnkey

/// Serves a ``TurnkeySandbox`` over HTTP on a loopback port (a ``LoopbackServer``).
///
/// Tests start one per test; `backupctl sandbox turnkey` runs one until SIGINT/SIGTERM.
public final class SandboxServer: Sendable {
    public let sandbox: TurnkeySandbox
    let server: LoopbackServer

    private init(sandbox: TurnkeySandbox, server: LoopbackServer) {
        self.sandbox = sandbox
        self.server = server
    }

    private static let stampHeader = HTTPFields.Element.Name("X-Stamp")
    private static let webAuthnHeader = HTTPFields.Element.Name(TurnkeySandbox.webAuthnStampHeader)
    private static let faultHeader = HTTPFields.Element.Name(TurnkeySandbox.faultHeader)

    public var host: String { server.host }
    public var port: Int { server.port }
    /// The base URL to give a ``TurnkeyClient``.
    public var baseURL: String { server.baseURL }

    /// Starts serving `sandbox` on `host:port` (0 = ephemeral).
    /// - Throws: ``ConsoleError`` `sandbox_listen_failed` when the address cannot be bound.
    public static func start(
        _ sandbox: TurnkeySandbox, host: String = "127.0.0.1", port: Int = 0,
        logger: Logger = Logger(label: "backupctl.sandbox")
    ) async throws(ConsoleError) -> SandboxServer {
        let server = try await LoopbackServer.start("The Turnkey sandbox", host: host, port: port, logger: logger) {
            request in
            var request = request
            let buffer = try await request.collectBody(upTo: 1 << 20)
            let answer = await sandbox.handle(
                TurnkeySandbox.Request(
                    path: request.uri.path, stamp: Self.stampHeader.flatMap { request.headers[$0] },
                    webAuthnStamp: Self.webAuthnHeader.flatMap { request.headers[$0] },
                    body: Array(buffer.readableBytesView), fault: Self.faultHeader.flatMap { request.headers[$0] }))
            var headers = HTTPFields()
            headers[.contentType] = "application/json"
            if let retryAfter = answer.retryAfter { headers[.retryAfter] = retryAfter }
            return Response(
                status: .init(code: answer.status), headers: headers,
                body: ResponseBody(byteBuffer: ByteBuffer(bytes: answer.body)))
        }
        return SandboxServer(sandbox: sandbox, server: server)
    }

    /// Stops the server gracefully and waits for it.
    public func stop() async { await server.stop() }

    /// Runs until the task is cancelled or the server fails.
    public func wait() async throws { try await server.wait() }
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
