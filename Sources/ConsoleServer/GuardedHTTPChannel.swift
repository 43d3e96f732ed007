import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import NIOHTTP1
import NIOHTTPTypesHTTP1
import NIOSSL

/// HTTP/1.1 (over TLS when given a context) with ``ConnectionGuardHandler`` in front of
/// everything, so the caps and the head deadline cover the TLS handshake too, and
/// ``RequestPhaseHandler`` right after decoding.
struct GuardedHTTPChannel: ServerChildChannel, HTTPChannelHandler {
    typealias Value = HTTP1Channel.Value

    let responder: HTTPChannelHandler.Responder
    let http1: HTTP1Channel.Configuration
    let tls: NIOSSLContext?
    let registry: ConnectionRegistry

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        let watch = ConnectionWatch(registry: registry)
        do {
            try channel.pipeline.syncOperations.addHandler(ConnectionGuardHandler(watch))
            if let tls { try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: tls)) }
        } catch {
            return channel.eventLoop.makeFailedFuture(error)
        }
        var configuration = http1
        configuration.additionalChannelHandlers = { [RequestPhaseHandler(watch)] }
        return HTTP1Channel(responder: responder, configuration: configuration).setup(channel: channel, logger: logger)
            .flatMapThrowing { value in
                // Before the conversion to HTTP types, which drops the request's version.
                let codec = try channel.pipeline.syncOperations.handler(type: HTTP1ToHTTPServerCodec.self)
                try channel.pipeline.syncOperations.addHandler(KeepAliveHandler(), position: .before(codec))
                return value
            }
    }

    func handle(value: Value, logger: Logger) async {
        await handleHTTP(asyncChannel: value, logger: logger)
    }
}

/// An HTTP/1.0 request without `Connection: keep-alive` (or any request saying
/// `Connection: close`) ends its connection: the request is marked `Connection: close` (the
/// server's loop then stops after answering it) and so is the answer. Without it an HTTP/1.0
/// client reading to the end of the stream waited for the idle timeout.
final class KeepAliveHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = HTTPServerRequestPart
    typealias OutboundIn = HTTPServerResponsePart
    typealias OutboundOut = HTTPServerResponsePart

    /// Whether each request read and not yet answered keeps the connection, in order (pipelined
    /// requests are answered in the order they came).
    private var keepAlive: [Bool] = []

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if case .head(var head) = unwrapInboundIn(data) {
            keepAlive.append(head.isKeepAlive)
            if !head.isKeepAlive {
                head.headers.replaceOrAdd(name: "connection", value: "close")
                context.fireChannelRead(wrapInboundOut(.head(head)))
                return
            }
        }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if case .head(var head) = unwrapOutboundIn(data), !keepAlive.isEmpty, !keepAlive.removeFirst() {
            head.headers.replaceOrAdd(name: "connection", value: "close")
            context.write(wrapOutboundOut(.head(head)), promise: promise)
            return
        }
        context.write(data, promise: promise)
    }
}
