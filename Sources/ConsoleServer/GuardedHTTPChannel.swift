import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
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
    }

    func handle(value: Value, logger: Logger) async {
        await handleHTTP(asyncChannel: value, logger: logger)
    }
}
