import BackupModel
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import Synchronization

/// A small HTTP/1.1 client for the console's one-shot operations: one request and its whole
/// answer at a time on each connection, idle connections kept for the next request.
///
/// A lookup through the server is a loopback round trip of a few hundred microseconds, and
/// AsyncHTTPClient's general machinery (a pool state machine, request bags, a delegate, a
/// tracing span per request) cost a third of it on the client. This client writes the request
/// and reads the answer with a single handler on the connection's event loop and resumes the
/// caller once. Streamed jobs still go through AsyncHTTPClient (``RemoteConsole``).
///
/// A request is sent again on a fresh connection only when it never left: the kept connection
/// was found closed, or writing it failed. Once it was written, a failure is the caller's,
/// since the server may have acted on it (a reset must not run twice). So that a server's
/// idle timeout (`serve` closes a connection after 60 s) does not race a request on a kept
/// connection, connections idle for ``idleLimit`` are closed rather than reused.
final class KeepAliveClient: Sendable {
    struct Answer: Sendable {
        var status: HTTPResponseStatus
        var body: ByteBuffer
    }

    enum Failure: Error, CustomStringConvertible {
        /// Writing the request failed: the server cannot have acted on it.
        case notSent(any Error)
        /// The connection closed after the request was written and before the whole answer.
        case closedBeforeAnswer
        case timedOut
        case answerTooLarge(Int)

        var description: String {
            switch self {
            case .notSent(let error): "the request could not be written (\(error))"
            case .closedBeforeAnswer: "the server closed the connection before answering"
            case .timedOut: "no answer before the call's deadline"
            case .answerTooLarge(let limit): "the answer is larger than \(limit) bytes"
            }
        }
    }

    let host: String
    let port: Int
    private let tls: NIOSSLContext?
    /// The TLS server name: the host unless it is an IP address (NIOSSL then checks the
    /// certificate's IP addresses against the peer's).
    private let serverName: String?
    private let group: any EventLoopGroup
    private let idle = Mutex<[Connection]>([])
    private let connectTimeout: TimeAmount

    /// Idle connections kept for reuse; a connection beyond them closes after its request.
    static let maxIdle = 32
    /// How long a connection may sit idle and still be reused: well under the server's idle
    /// timeout.
    static let idleLimit = TimeAmount.seconds(20)

    init(
        host: String, port: Int, tls: TLSConfiguration?, connectTimeout: TimeAmount = .seconds(10),
        group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton
    ) throws {
        self.host = host
        self.port = port
        self.tls = try tls.map { try NIOSSLContext(configuration: $0) }
        serverName = Self.isIPAddress(host) ? nil : host
        self.group = group
        self.connectTimeout = connectTimeout
    }

    deinit {
        for connection in idle.withLock({ $0 }) { connection.channel.close(promise: nil) }
    }

    /// Sends `head` and `body` and returns the status and whole body of the answer.
    /// - Throws: ``Failure``, a connection error, or `CancellationError` when the calling task
    ///   is cancelled (the connection is then closed, which the server sees as a dropped caller).
    func exchange(head: HTTPRequestHead, body: ByteBuffer, timeout: TimeAmount, maxAnswer: Int) async throws -> Answer {
        if let kept = takeIdle() {
            do {
                return try await send(on: kept, head: head, body: body, timeout: timeout, maxAnswer: maxAnswer)
            } catch Failure.notSent {
                // The server closed the kept connection before the request reached it.
            }
        }
        // A new connection the server closed before the request was written (at its cap, or
        // past its head deadline on a busy machine) is replaced once.
        do {
            let fresh = try await connect()
            return try await send(on: fresh, head: head, body: body, timeout: timeout, maxAnswer: maxAnswer)
        } catch Failure.notSent(let inner) where RemoteConsole.tlsFailure(inner) == nil {}
        let fresh = try await connect()
        return try await send(on: fresh, head: head, body: body, timeout: timeout, maxAnswer: maxAnswer)
    }

    private func send(
        on connection: Connection, head: HTTPRequestHead, body: ByteBuffer, timeout: TimeAmount, maxAnswer: Int
    ) async throws -> Answer {
        let eventLoop = connection.channel.eventLoop
        let promise = eventLoop.makePromise(of: ExchangeHandler.Answer.self)
        let handler = connection.handler
        let request = ExchangeHandler.Request(
            head: head, body: body, promise: promise, maxAnswer: maxAnswer, deadline: .now() + timeout)
        if eventLoop.inEventLoop {
            handler.value.start(request)
        } else {
            eventLoop.execute { handler.value.start(request) }
        }
        let answer = try await withTaskCancellationHandler {
            try await promise.futureResult.get()
        } onCancel: {
            eventLoop.execute { handler.value.fail(CancellationError()) }
        }
        if answer.keepAlive { release(connection) } else { connection.channel.close(promise: nil) }
        return Answer(status: answer.status, body: answer.body)
    }

    private func takeIdle() -> Connection? {
        let now = NIODeadline.now()
        return idle.withLock { idle in
            while let last = idle.popLast() {
                if last.channel.isActive, now - last.idleSince < Self.idleLimit { return last }
                last.channel.close(promise: nil)
            }
            return nil
        }
    }

    private func release(_ connection: Connection) {
        var connection = connection
        connection.idleSince = .now()
        let kept = idle.withLock { [connection] idle in
            guard idle.count < Self.maxIdle else { return false }
            idle.append(connection)
            return true
        }
        if !kept { connection.channel.close(promise: nil) }
    }

    /// Waits until every kept connection is closed (by either side): a checkpoint for tests
    /// that close connections from the server's side.
    func keptConnectionsClosed() async {
        for connection in idle.withLock({ $0 }) { try? await connection.channel.closeFuture.get() }
    }

    private func connect() async throws -> Connection {
        let tls = self.tls
        let serverName = self.serverName
        let failure = FirstError()
        let channel = try await ClientBootstrap(group: group)
            .connectTimeout(connectTimeout)
            .channelOption(.tcpOption(.tcp_nodelay), value: 1)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let pipeline = channel.pipeline.syncOperations
                    if let tls {
                        try pipeline.addHandler(NIOSSLClientHandler(context: tls, serverHostname: serverName))
                    }
                    try pipeline.addHTTPClientHandlers()
                    try pipeline.addHandler(ExchangeHandler(failure: failure))
                }
            }
            .connect(host: host, port: port).get()
        do {
            let handler = try await channel.eventLoop.submit {
                NIOLoopBound(
                    try channel.pipeline.syncOperations.handler(type: ExchangeHandler.self),
                    eventLoop: channel.eventLoop)
            }.get()
            return Connection(channel: channel, handler: handler, idleSince: .now())
        } catch {
            // The connection died before it could be used: its own error (a TLS handshake
            // refused), or, closed by the server without one, a request not sent.
            channel.close(promise: nil)
            throw Failure.notSent(failure.value ?? ChannelError.ioOnClosedChannel)
        }
    }

    static func isIPAddress(_ host: String) -> Bool {
        (try? SocketAddress(ipAddress: host, port: 0)) != nil
    }

    struct Connection: Sendable {
        let channel: any Channel
        let handler: NIOLoopBound<ExchangeHandler>
        var idleSince: NIODeadline
    }
}

/// The last handler of a ``KeepAliveClient`` connection: writes one request, gathers its
/// answer, completes its promise exactly once (answer, failure, deadline, cancellation or the
/// connection closing), all on the connection's event loop.
final class ExchangeHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPClientResponsePart
    typealias OutboundOut = HTTPClientRequestPart

    struct Request {
        var head: HTTPRequestHead
        var body: ByteBuffer
        var promise: EventLoopPromise<Answer>
        var maxAnswer: Int
        var deadline: NIODeadline
    }

    struct Answer: Sendable {
        var status: HTTPResponseStatus
        var body: ByteBuffer
        var keepAlive: Bool
    }

    private var context: ChannelHandlerContext?
    private var promise: EventLoopPromise<Answer>?
    private var maxAnswer = 0
    private var status: HTTPResponseStatus?
    private var keepAlive = false
    private var body = ByteBuffer()
    /// The answer read in full, handed over when the read that brought it ends
    /// (``channelReadComplete(context:)``): anything else in the same read is an answer nobody
    /// asked for, and the connection must not go back to the pool.
    private var finished: Answer?
    private var deadline: Scheduled<Void>?
    /// Whether the request was written in full (a failure after that may have been acted on).
    private var written = false
    /// The connection's own failure (a TLS handshake refused), reported instead of the
    /// "closed channel" a request then meets.
    private var connectionError: (any Error)?

    /// Where the connection's first error is kept for ``KeepAliveClient`` (the handler may be
    /// gone by the time it looks).
    private let failure: FirstError

    init(failure: FirstError = FirstError()) { self.failure = failure }

    func handlerAdded(context: ChannelHandlerContext) { self.context = context }
    func handlerRemoved(context: ChannelHandlerContext) { self.context = nil }

    func start(_ request: Request) {
        guard let context, context.channel.isActive, promise == nil else {
            request.promise.fail(KeepAliveClient.Failure.notSent(connectionError ?? ChannelError.ioOnClosedChannel))
            return
        }
        promise = request.promise
        maxAnswer = request.maxAnswer
        status = nil
        body.clear()
        written = false
        deadline = context.eventLoop.assumeIsolated().scheduleTask(deadline: request.deadline) { [weak self] in
            self?.fail(KeepAliveClient.Failure.timedOut)
        }
        var head = request.head
        head.headers.replaceOrAdd(name: "Content-Length", value: String(request.body.readableBytes))
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        context.write(wrapOutboundOut(.body(.byteBuffer(request.body))), promise: nil)
        let sent = context.eventLoop.makePromise(of: Void.self)
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: sent)
        sent.futureResult.assumeIsolated().whenComplete { [weak self] result in
            switch result {
            case .success: self?.written = true
            case .failure(let error): self?.fail(KeepAliveClient.Failure.notSent(error))
            }
        }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        // An answer nobody asked for (a second one to one request): the connection is out of
        // step, and the next request on it could be given this answer. Close it. Seen in the
        // read of the answer itself, the answer is still handed over, on a connection that is
        // not kept; seen later, the connection is already idle and closes.
        guard promise != nil, finished == nil else {
            finished?.keepAlive = false
            context.close(promise: nil)
            return
        }
        switch unwrapInboundIn(data) {
        case .head(let head):
            status = head.status
            keepAlive = head.isKeepAlive
        case .body(var part):
            guard body.readableBytes + part.readableBytes <= maxAnswer else {
                fail(KeepAliveClient.Failure.answerTooLarge(maxAnswer))
                return
            }
            body.writeBuffer(&part)
        case .end:
            guard let status else { return }
            finished = Answer(status: status, body: body, keepAlive: keepAlive)
            body = ByteBuffer()
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        handOver()
        context.fireChannelReadComplete()
    }

    /// Completes the request with the answer read in full, if there is one.
    private func handOver() {
        guard let answer = finished else { return }
        finished = nil
        complete(.success(answer))
    }

    func channelInactive(context: ChannelHandlerContext) {
        handOver()
        fail(
            written
                ? KeepAliveClient.Failure.closedBeforeAnswer
                : .notSent(connectionError ?? ChannelError.ioOnClosedChannel))
        context.fireChannelInactive()
    }

    /// A decoding or connection error. With no request in hand it still closes the connection:
    /// NIO's decoder stays in its error state (an answer nobody asked for is one), and the
    /// next request on the connection would fail after it was sent.
    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        connectionError = connectionError ?? error
        failure.keep(error)
        if finished != nil {
            // After a whole answer, in the same read: the decoder met an answer nobody asked
            // for. The request has its answer; the connection is not kept.
            finished?.keepAlive = false
            handOver()
            context.close(promise: nil)
            return
        }
        // Before the whole request was written the server cannot have acted on it; after, a
        // connection reset before any answer is the connection closing before the answer.
        if !written {
            fail(KeepAliveClient.Failure.notSent(error))
        } else if error is IOError, status == nil {
            fail(KeepAliveClient.Failure.closedBeforeAnswer)
        } else {
            fail(error)
        }
        context.close(promise: nil)
    }

    /// Fails the request in hand (if any) and closes the connection: what is left on it
    /// cannot be matched to a request any more.
    func fail(_ error: any Error) {
        // An answer already read in full is the request's answer, whatever happens next.
        handOver()
        let pending = promise != nil
        complete(.failure(error))
        if pending { context?.close(promise: nil) }
    }

    private func complete(_ result: Result<Answer, any Error>) {
        guard let promise else { return }
        self.promise = nil
        deadline?.cancel()
        deadline = nil
        promise.completeWith(result)
    }
}

/// The first error a connection met, readable from any thread.
final class FirstError: Sendable {
    private let stored = Mutex<(any Error)?>(nil)

    func keep(_ error: any Error) { stored.withLock { $0 = $0 ?? error } }
    var value: (any Error)? { stored.withLock { $0 } }
}
