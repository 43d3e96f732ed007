import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization

/// An HTTP/1.1 server on 127.0.0.1 whose answers the path chooses, for the client's edge cases:
/// `/echo` answers the body, `/status/N` answers status N, `/close` answers and closes,
/// `/big/N` answers N bytes, `/hang` never answers, `/drop` closes without an answer, `/twice`
/// answers twice. Made with `redirectingTo: PORT`, it answers every request with a 307 to
/// the same path on 127.0.0.2:PORT instead.
/// It counts connections and requests, and can close every connection it holds (as a server
/// does when a kept connection has been idle too long). Made with `closingFirst: N`, it closes
/// each of its first N connections as soon as it accepts it (as a server at its cap, or past a
/// deadline, does), before any byte is read.
final class ScriptedServer: Sendable {
    struct Counts: Sendable, Equatable {
        var connections = 0
        var requests = 0
        var closed = 0
    }

    let port: Int
    private let channel: any Channel
    private let state: State

    final class State: Sendable {
        let counts = Mutex(Counts())
        let open = Mutex<[ObjectIdentifier: any Channel]>([:])
        /// Resumed with each request's path as it arrives.
        let arrivals: AsyncStream<String>
        let arrived: AsyncStream<String>.Continuation
        /// Connections still to close at once.
        let toClose: Mutex<Int>

        init(closingFirst: Int) {
            (arrivals, arrived) = AsyncStream.makeStream(of: String.self)
            toClose = Mutex(closingFirst)
        }
    }

    init(host: String = "127.0.0.1", redirectingTo target: Int? = nil, closingFirst: Int = 0) async throws {
        let state = State(closingFirst: closingFirst)
        channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    state.counts.withLock { $0.connections += 1 }
                    let close = state.toClose.withLock { left in
                        defer { left = max(0, left - 1) }
                        return left > 0
                    }
                    if close {
                        channel.close(promise: nil)
                        return
                    }
                    state.open.withLock { $0[ObjectIdentifier(channel)] = channel }
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline(withPipeliningAssistance: false)
                    try channel.pipeline.syncOperations.addHandler(Responder(state: state, redirect: target))
                }
            }
            .bind(host: host, port: 0).get()
        port = channel.localAddress?.port ?? 0
        self.state = state
    }

    var counts: Counts { state.counts.withLock { $0 } }

    /// Each request's path as it arrives (one consumer).
    var arrivals: AsyncStream<String> { state.arrivals }

    /// Closes every open connection, waiting until they are closed.
    func closeConnections() async throws {
        let open = state.open.withLock { $0.values }
        for channel in open { try? await channel.close() }
    }

    func stop() async throws {
        try await closeConnections()
        try await channel.close()
        state.arrived.finish()
    }

    private final class Responder: ChannelInboundHandler {
        typealias InboundIn = HTTPServerRequestPart
        typealias OutboundOut = HTTPServerResponsePart

        let state: State
        let redirect: Int?
        var path = ""
        var body = ByteBuffer()

        init(state: State, redirect: Int?) {
            self.state = state
            self.redirect = redirect
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            switch unwrapInboundIn(data) {
            case .head(let head):
                path = head.uri
                body.clear()
            case .body(var part):
                body.writeBuffer(&part)
            case .end:
                state.counts.withLock { $0.requests += 1 }
                state.arrived.yield(path)
                answer(context: context)
            }
        }

        func channelInactive(context: ChannelHandlerContext) {
            state.counts.withLock { $0.closed += 1 }
            let id = ObjectIdentifier(context.channel)
            state.open.withLock { _ = $0.removeValue(forKey: id) }
            context.fireChannelInactive()
        }

        private func answer(context: ChannelHandlerContext) {
            if let redirect {
                send(
                    context: context, status: .temporaryRedirect, body: ByteBuffer(),
                    location: "http://127.0.0.2:\(redirect)\(path)")
                return
            }
            switch path {
            case "/echo": send(context: context, status: .ok, body: body)
            case "/close": send(context: context, status: .ok, body: ByteBuffer(string: "bye"), close: true)
            case "/hang": break
            case "/twice":
                // Both in one write, as a server out of step sends them: they reach the
                // client in one read.
                send(context: context, status: .ok, body: ByteBuffer(string: "first"), flush: false)
                send(context: context, status: .ok, body: ByteBuffer(string: "unasked"))
            case "/drop": context.close(promise: nil)
            default:
                if path.hasPrefix("/status/"), let code = Int(path.dropFirst(8)) {
                    send(context: context, status: .init(statusCode: code), body: ByteBuffer(string: #"{"x":1}"#))
                } else if path.hasPrefix("/big/"), let size = Int(path.dropFirst(5)) {
                    send(context: context, status: .ok, body: ByteBuffer(repeating: 0x61, count: size))
                } else {
                    send(context: context, status: .notFound, body: ByteBuffer())
                }
            }
        }

        private func send(
            context: ChannelHandlerContext, status: HTTPResponseStatus, body: ByteBuffer, close: Bool = false,
            location: String? = nil, flush: Bool = true
        ) {
            var headers = HTTPHeaders()
            if let location { headers.add(name: "Location", value: location) }
            headers.add(name: "Content-Length", value: String(body.readableBytes))
            if close { headers.add(name: "Connection", value: "close") }
            context.write(
                wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: status, headers: headers))),
                promise: nil)
            context.write(wrapOutboundOut(.body(.byteBuffer(body))), promise: nil)
            guard flush else {
                context.write(wrapOutboundOut(.end(nil)), promise: nil)
                return
            }
            let done = context.writeAndFlush(wrapOutboundOut(.end(nil)))
            if close { done.assumeIsolated().whenComplete { _ in context.close(promise: nil) } }
        }
    }
}
