import Hummingbird
import HummingbirdCore
import NIOCore
import NIOHTTPTypes

/// One connection's phase and its deadline, shared by ``ConnectionGuardHandler`` (raw bytes,
/// first in the pipeline) and ``RequestPhaseHandler`` (decoded request parts). Both run on the
/// connection's event loop, which alone touches this state.
final class ConnectionWatch: @unchecked Sendable {
    let registry: ConnectionRegistry
    var limits: ConnectionLimits { registry.limits }
    private(set) var phase = ConnectionRegistry.Phase.head
    /// Admitted to wait for a slot: nothing is read until its turn.
    private(set) var waiting = false
    private var id: ObjectIdentifier { ObjectIdentifier(self) }
    private var channel: (any Channel)?
    private var deadline: Scheduled<Void>?
    private var writeDeadline: Scheduled<Void>?

    init(registry: ConnectionRegistry) { self.registry = registry }

    /// Registers the connection; false when it must close. A served one's head deadline
    /// starts now; one that must wait for a slot is not read (nor timed) until ``resume()``.
    /// Called on the connection's event loop before its first read.
    func open(_ channel: any Channel) -> Bool {
        guard self.channel == nil else { return true }
        self.channel = channel
        let address = channel.remoteAddress?.ipAddress ?? "unknown"
        let admission = registry.admit(id, address: address, channel: channel) { [weak self] in
            guard let watch = self else { return }
            channel.eventLoop.execute { watch.resume() }
        }
        switch admission {
        case .refuse:
            return false
        case .wait:
            // ``ConnectionGuardHandler`` holds back every read (whoever asks: NIO's automatic
            // reads and Hummingbird's on demand) until ``resume()``.
            waiting = true
        case .serve:
            schedule(limits.headerTimeout, reason: "header_timeout")
        }
        return true
    }

    /// A waiting connection's turn: read it, and start its head deadline.
    private func resume() {
        guard let channel, channel.isActive, waiting else { return }
        waiting = false
        channel.read()
        schedule(limits.headerTimeout, reason: "header_timeout")
    }

    func enter(_ next: ConnectionRegistry.Phase) {
        guard next != phase, channel != nil else { return }
        phase = next
        registry.setPhase(id, next)
        switch next {
        case .idle: schedule(limits.idleTimeout, reason: "idle_timeout")
        case .head: schedule(limits.headerTimeout, reason: "header_timeout")
        case .body: schedule(limits.bodyTimeout, reason: "body_timeout")
        case .busy: cancelDeadline()
        }
    }

    /// The socket stopped (or resumed) taking writes: a client that does not read its answer
    /// for ``ConnectionLimits/writeTimeout`` loses the connection.
    func writable(_ isWritable: Bool) {
        writeDeadline?.cancel()
        writeDeadline = nil
        guard !isWritable, let channel else { return }
        let registry = registry
        writeDeadline = channel.eventLoop.scheduleTask(in: limits.writeTimeout) {
            registry.countClosed("write_timeout", address: channel.remoteAddress?.ipAddress ?? "unknown")
            channel.close(promise: nil)
        }
    }

    func close() {
        cancelDeadline()
        writeDeadline?.cancel()
        writeDeadline = nil
        if channel != nil { registry.remove(id) }
        channel = nil
    }

    private func schedule(_ timeout: TimeAmount, reason: String) {
        cancelDeadline()
        guard let channel else { return }
        let registry = registry
        deadline = channel.eventLoop.scheduleTask(in: timeout) {
            registry.countClosed(reason, address: channel.remoteAddress?.ipAddress ?? "unknown")
            channel.close(promise: nil)
        }
    }

    private func cancelDeadline() {
        deadline?.cancel()
        deadline = nil
    }
}

/// First in a connection's pipeline, before TLS: admits the connection against the caps and
/// starts the head deadline at the first byte of each request.
final class ConnectionGuardHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    let watch: ConnectionWatch

    init(_ watch: ConnectionWatch) { self.watch = watch }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { admit(context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        admit(context)
        context.fireChannelActive()
    }

    private func admit(_ context: ChannelHandlerContext) {
        if !watch.open(context.channel) { context.close(promise: nil) }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if watch.phase == .idle { watch.enter(.head) }
        context.fireChannelRead(data)
    }

    /// Reads wait while the connection waits for a slot (its turn reads again).
    func read(context: ChannelHandlerContext) {
        guard !watch.waiting else { return }
        context.read()
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        watch.writable(context.channel.isWritable)
        context.fireChannelWritabilityChanged()
    }

    func channelInactive(context: ChannelHandlerContext) {
        watch.close()
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) { watch.close() }
}

/// After HTTP decoding: a request head moves the connection to its body deadline, the body's
/// end to no deadline while it is served, the response's end back to idle. A response written
/// before its request's body was read (a refusal: no token, a body too large) closes the
/// connection, so an unauthenticated body is never read, however slowly it trickles.
final class RequestPhaseHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    let watch: ConnectionWatch
    /// Request heads, request ends and response ends seen on this connection.
    private var heads = 0
    private var ends = 0
    private var answered = 0

    init(_ watch: ConnectionWatch) { self.watch = watch }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head:
            heads += 1
            if heads == answered + 1 { watch.enter(.body) }
        case .body:
            break
        case .end:
            ends += 1
            if ends == answered + 1 { watch.enter(.busy) }
        }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        switch unwrapOutboundIn(data) {
        case .head(var head) where ends <= answered && head.status.code >= 400:
            // A refusal before the body was read (a streamed job's 200 reads it after its
            // head): the connection will close, and the answer says so.
            head.headerFields[.connection] = "close"
            context.write(wrapOutboundOut(.head(head)), promise: promise)
        case .end where ends <= answered:
            answered += 1
            let closing = context.eventLoop.makePromise(of: Void.self)
            let channel = context.channel
            closing.futureResult.whenComplete { _ in channel.close(promise: nil) }
            closing.futureResult.cascade(to: promise)
            context.writeAndFlush(data, promise: closing)
        case .end:
            answered += 1
            guard heads == answered else {
                // A pipelined request is already in.
                watch.enter(ends > answered ? .busy : .body)
                context.write(data, promise: promise)
                return
            }
            // Idle once the answer is out: an idle connection may be closed to make room, and
            // that must not cut this answer short.
            let written = context.eventLoop.makePromise(of: Void.self)
            let watch = watch
            let answeredNow = answered
            written.futureResult.assumeIsolatedUnsafeUnchecked().whenSuccess { [weak self] in
                guard let self, self.heads == answeredNow else { return }
                watch.enter(.idle)
            }
            written.futureResult.cascade(to: promise)
            context.write(data, promise: written)
        default:
            context.write(data, promise: promise)
        }
    }
}
