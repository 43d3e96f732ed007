import BackupModel
import ConsoleService
import Foundation
import Hummingbird
import HummingbirdCore
import HummingbirdTLS
import Logging
import NIOCore
import NIOSSL
import ServiceLifecycle
import UnixSignals

/// `backupctl serve`: the service layer over HTTP. This process alone opens the store, reads
/// the tenants' credentials and writes the audit; operators reach it with `RemoteConsole`.
///
/// Every operation of ``ConsoleOperations`` answers at `POST /v1/ops/<name>` (see
/// ``OpenAPIDocument``), next to `GET /healthz`, `/readyz`, `/metrics` and `/openapi.json`.
public struct ConsoleServer: Sendable {
    public struct Configuration: Sendable {
        public var listen: ListenAddress
        /// PEM certificate chain and private key; both or neither.
        public var tlsCertificate: String?
        public var tlsKey: String?
        /// Serve plain HTTP on a non-loopback address (`--insecure-plain-http`).
        public var allowPlainHTTP: Bool
        /// How long a graceful shutdown waits for in-flight requests before cancelling them.
        public var drainSeconds: Int
        /// With an audit key: a checkpoint is signed this often while entries arrive (besides
        /// every N entries), and once more when the server stops.
        public var checkpointEverySeconds: Int
        /// Open connections served at once. Beyond it the server stops accepting, and new
        /// connections wait in the kernel's queue until one closes. Without a cap, a client
        /// that opens connections up to the process's file limit made `accept` fail in a
        /// loop: a core spun and every caller waited until idle connections timed out.
        public var maxConnections: Int

        public init(
            listen: ListenAddress, tlsCertificate: String? = nil, tlsKey: String? = nil, allowPlainHTTP: Bool = false,
            drainSeconds: Int = 30, checkpointEverySeconds: Int = 60,
            maxConnections: Int = Configuration.defaultMaxConnections()
        ) {
            self.listen = listen
            self.tlsCertificate = tlsCertificate
            self.tlsKey = tlsKey
            self.allowPlainHTTP = allowPlainHTTP
            self.drainSeconds = drainSeconds
            self.checkpointEverySeconds = checkpointEverySeconds
            self.maxConnections = maxConnections
        }

        /// Half the process's open-file limit (the rest is for the store, the pool, logs and
        /// outgoing calls), between 16 and 1024.
        public static func defaultMaxConnections() -> Int {
            var limit = rlimit()
            guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return 256 }
            let half = Int(clamping: limit.rlim_cur / 2)
            return min(1024, max(16, half))
        }

        var usesTLS: Bool { tlsCertificate != nil }

        /// Refuses what must not run: half a TLS pair, plain HTTP beyond this machine.
        public func validate() throws(ConsoleError) {
            guard (tlsCertificate == nil) == (tlsKey == nil) else {
                throw .usage("--tls-cert and --tls-key go together.")
            }
            guard (1...65_536).contains(maxConnections) else {
                throw .usage("--max-connections must be 1…65536, got \(maxConnections).")
            }
            if !usesTLS, !listen.isLoopback, !allowPlainHTTP {
                throw .usage(
                    "Refusing plain HTTP on \(listen.host), which is not a loopback address: operator tokens would "
                        + "cross the network in clear. Pass --tls-cert and --tls-key, or --insecure-plain-http.")
            }
        }
    }

    public let console: LocalConsole
    public let configuration: Configuration
    let logger: Logger
    let handler: RequestHandler

    /// - Parameters:
    ///   - console: the in-process service layer on the store; the server hands it every request.
    ///   - logger: where the server logs (stderr in `backupctl serve`); never a token.
    ///   - operations: the operations served by name (tests add their own).
    public init(
        console: LocalConsole, configuration: Configuration, logger: Logger,
        operations: [String: any ConsoleOperation.Type] = ConsoleOperations.byName
    ) {
        self.console = console
        self.configuration = configuration
        self.logger = logger
        handler = RequestHandler(
            console: console, metrics: ServerMetrics(), limiter: AuthLimiter(), logger: logger, operations: operations)
    }

    /// Runs until SIGINT or SIGTERM, then stops accepting, lets in-flight requests finish
    /// (at most ``Configuration/drainSeconds``) and returns.
    /// - Parameter onListening: called once with the base URL when the socket is bound.
    public func run(onListening: @escaping @Sendable (String) -> Void) async throws {
        let group = try await serviceGroup(signals: [.sigterm, .sigint], onListening: onListening)
        try await group.run()
    }

    /// Starts serving without signal handling (tests); `stop()` on the result shuts it down.
    public func start() async throws -> Running {
        let (bound, continuation) = AsyncStream<String>.makeStream()
        let group = try await serviceGroup(signals: []) { url in
            continuation.yield(url)
            continuation.finish()
        }
        let task = Task { try await group.run() }
        let watcher = Task {
            _ = try? await task.value
            continuation.finish()
        }
        var iterator = bound.makeAsyncIterator()
        let url = await iterator.next()
        _ = watcher
        guard let url else {
            _ = try await task.value
            throw ConsoleError(.internalError, code: "listen_failed", "The server stopped before it listened.")
        }
        return Running(url: url, group: group, task: task)
    }

    /// A server started by ``start()``.
    public struct Running: Sendable {
        public let url: String
        let group: ServiceGroup
        let task: Task<Void, any Error>

        /// Graceful shutdown (in-flight requests finish), then waits for the server to end.
        public func stop() async throws {
            await group.triggerGracefulShutdown()
            try await task.value
        }
    }

    func serviceGroup(signals: [UnixSignal], onListening: @escaping @Sendable (String) -> Void) async throws
        -> ServiceGroup
    {
        try configuration.validate()
        let scheme = configuration.usesTLS ? "https" : "http"
        let host = configuration.listen.urlHost
        let handler = handler
        await handler.primeMetrics()
        let responder = CallbackResponder<ServerRequestContext> { request, context in
            await handler.respond(request, context: context)
        }
        let app = Application(
            responder: responder, server: try serverBuilder(),
            configuration: .init(
                address: .hostname(configuration.listen.host, port: configuration.listen.port),
                serverName: "backupctl",
                availableConnectionsDelegate: MaximumAvailableConnections(configuration.maxConnections, logger: logger)),
            onServerRunning: { channel in
                onListening("\(scheme)://\(host):\(channel.localAddress?.port ?? configuration.listen.port)")
            }, logger: logger)
        // Services stop in reverse order: the API drains first, then the signer writes its last
        // checkpoint, then the store takes its last WAL checkpoint.
        let signer = CheckpointService(console: console, everySeconds: configuration.checkpointEverySeconds)
        var groupConfiguration = ServiceGroupConfiguration(
            services: [StoreUpkeepService(console: console), signer, app], gracefulShutdownSignals: signals,
            cancellationSignals: [], logger: logger)
        groupConfiguration.maximumGracefulShutdownDuration = .seconds(configuration.drainSeconds)
        return ServiceGroup(configuration: groupConfiguration)
    }

    /// A connection with no request for this long is closed (never while a response is being
    /// written: a streamed job may be silent for longer).
    static let idleTimeout = TimeAmount.seconds(60)

    private func serverBuilder() throws -> HTTPServerBuilder {
        let http1 = HTTPServerBuilder.http1(configuration: .init(idleTimeout: Self.idleTimeout))
        guard let certificate = configuration.tlsCertificate, let key = configuration.tlsKey else { return http1 }
        let chain: [NIOSSLCertificate]
        let privateKey: NIOSSLPrivateKey
        do {
            chain = try NIOSSLCertificate.fromPEMFile(certificate)
        } catch {
            throw ConsoleError.invalid("invalid_tls_cert", "Cannot read a PEM certificate chain from \(certificate).")
        }
        do {
            privateKey = try NIOSSLPrivateKey(file: key, format: .pem)
        } catch {
            // The key file's content never enters the message.
            throw ConsoleError.invalid("invalid_tls_key", "Cannot read a PEM private key from \(key).")
        }
        guard !chain.isEmpty else {
            throw ConsoleError.invalid("invalid_tls_cert", "No certificate in \(certificate).")
        }
        let tls = TLSConfiguration.makeServerConfiguration(
            certificateChain: chain.map { .certificate($0) }, privateKey: .privateKey(privateKey))
        return try .tls(http1, tlsConfiguration: tls)
    }
}

/// The request context: Hummingbird's, plus the client's address (rate limits and audit).
struct ServerRequestContext: RequestContext {
    var coreContext: CoreRequestContextStorage
    let remoteAddress: SocketAddress?

    init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        remoteAddress = source.channel.remoteAddress
    }

    /// The address as audited: the IP, without the port.
    var clientAddress: String { remoteAddress?.ipAddress ?? "unknown" }
}

/// Signs audit checkpoints on a timer while the server runs (``LocalConsole/checkpointLoop(every:sleep:)``;
/// it waits idle when the console has no audit key), and a last one at shutdown.
struct CheckpointService: Service {
    let console: LocalConsole
    let everySeconds: Int

    func run() async throws {
        let console = console
        let everySeconds = everySeconds
        await cancelWhenGracefulShutdown { await console.checkpointLoop(every: everySeconds) }
    }
}

/// The store's upkeep while the server runs (``LocalConsole/maintainStore(every:)``: SQLite's WAL
/// checkpoints off the request path), and a last checkpoint at shutdown.
struct StoreUpkeepService: Service {
    let console: LocalConsole

    func run() async throws {
        let console = console
        await cancelWhenGracefulShutdown { await console.maintainStore() }
    }
}
