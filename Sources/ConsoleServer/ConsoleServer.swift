import BackupModel
import ConsoleService
import Foundation
import Hummingbird
import HummingbirdCore
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
        /// Connection caps and phase timeouts (``ConnectionLimits``): `--max-connections`,
        /// `--max-connections-per-address`, `--header-timeout`, `--body-timeout`, …
        public var connections: ConnectionLimits
        /// The oldest TLS version served (`--tls-min-version`): 1.2 or 1.3, never older.
        public var tlsMinimumVersion: ServerTLS.Version
        /// Failed sign-ins, operator request rates and refusals (``RequestLimits``).
        public var requestLimits: RequestLimits
        /// A listener of its own for `/healthz`, `/readyz` and `/metrics` (`--probe-listen`),
        /// plain HTTP on a thread of its own (``ProbeListener``).
        public var probeListen: ListenAddress?
        /// With ``probeListen``: how many nice levels every other thread runs below the probe
        /// listener's (`--work-nice`, 0…19; 0 leaves them alike). See ``WorkPriority``.
        public var workNice: Int

        public init(
            listen: ListenAddress, tlsCertificate: String? = nil, tlsKey: String? = nil, allowPlainHTTP: Bool = false,
            drainSeconds: Int = 30, checkpointEverySeconds: Int = 60,
            maxConnections: Int = Configuration.defaultMaxConnections(), connections: ConnectionLimits? = nil,
            tlsMinimumVersion: ServerTLS.Version = .v1_2, requestLimits: RequestLimits = RequestLimits(),
            probeListen: ListenAddress? = nil, workNice: Int = 0
        ) {
            self.probeListen = probeListen
            self.workNice = workNice
            self.listen = listen
            self.tlsCertificate = tlsCertificate
            self.tlsKey = tlsKey
            self.allowPlainHTTP = allowPlainHTTP
            self.drainSeconds = drainSeconds
            self.checkpointEverySeconds = checkpointEverySeconds
            self.connections = connections ?? ConnectionLimits(maxConnections: maxConnections)
            self.tlsMinimumVersion = tlsMinimumVersion
            self.requestLimits = requestLimits
        }

        /// Open connections served at once (``ConnectionLimits/maxConnections``).
        public var maxConnections: Int { connections.maxConnections }

        /// Half the process's open-file limit (the rest is for the store, the pool, logs and
        /// outgoing calls), between 16 and 1024.
        public static func defaultMaxConnections() -> Int {
            var limit = rlimit()
            guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return 256 }
            let half = Int(clamping: limit.rlim_cur / 2)
            return min(1024, max(16, half))
        }

        var usesTLS: Bool { tlsCertificate != nil }

        /// Refuses what must not run: half a TLS pair, plain HTTP beyond this machine, caps and
        /// timeouts out of range.
        public func validate() throws(ConsoleError) {
            guard (tlsCertificate == nil) == (tlsKey == nil) else {
                throw .usage("--tls-cert and --tls-key go together.")
            }
            try connections.validate()
            try requestLimits.validate()
            if let probeListen, probeListen.host == listen.host, probeListen.port == listen.port, listen.port != 0 {
                throw .usage("--probe-listen must differ from --listen (\(listen.host):\(listen.port)).")
            }
            guard (0...19).contains(workNice) else {
                throw .usage("--work-nice must be 0…19 (nice levels below the probe listener), not \(workNice).")
            }
            if workNice > 0, probeListen == nil {
                throw .usage(
                    "--work-nice goes with --probe-listen: it keeps the request work below the probe listener.")
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
    let registry: ConnectionRegistry

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
        registry = ConnectionRegistry(limits: configuration.connections, logger: logger)
        handler = RequestHandler(
            console: console, metrics: ServerMetrics(), limiter: RequestLimiter(configuration.requestLimits),
            connections: registry, logger: logger, operations: operations)
    }

    /// Runs until SIGINT, SIGTERM or SIGHUP, then stops accepting, lets in-flight requests finish
    /// (at most ``Configuration/drainSeconds``) and returns.
    /// - Parameter onListening: called once with the base URL when the socket is bound.
    public func run(onListening: @escaping @Sendable (String) -> Void) async throws {
        try await run { url, _ in onListening(url) }
    }

    /// Runs until SIGINT, SIGTERM or SIGHUP (as ``run(onListening:)``); `onListening` also gets
    /// the probe listener's URL when ``Configuration/probeListen`` is set (both are bound then).
    public func run(onListening: @escaping @Sendable (_ api: String, _ probes: String?) -> Void) async throws {
        // SIGHUP too: a closed terminal or a `systemctl reload` would otherwise end the server
        // at once, without its drain and its last checkpoint.
        let group = try await serviceGroup(signals: [.sigterm, .sigint, .sighup], onListening: onListening)
        try await group.run()
    }

    /// Starts serving without signal handling (tests); `stop()` on the result shuts it down.
    public func start() async throws -> Running {
        let (bound, continuation) = AsyncStream<(String, String?)>.makeStream()
        let group = try await serviceGroup(signals: []) { url, probes in
            continuation.yield((url, probes))
            continuation.finish()
        }
        let task = Task { try await group.run() }
        let watcher = Task {
            _ = try? await task.value
            continuation.finish()
        }
        var iterator = bound.makeAsyncIterator()
        let urls = await iterator.next()
        _ = watcher
        guard let urls else {
            _ = try await task.value
            throw ConsoleError(.internalError, code: "listen_failed", "The server stopped before it listened.")
        }
        return Running(url: urls.0, probeURL: urls.1, group: group, task: task)
    }

    /// A server started by ``start()``.
    public struct Running: Sendable {
        public let url: String
        /// The probe listener's (``Configuration/probeListen``).
        public let probeURL: String?
        let group: ServiceGroup
        let task: Task<Void, any Error>

        /// Graceful shutdown (in-flight requests finish), then waits for the server to end.
        public func stop() async throws {
            await group.triggerGracefulShutdown()
            try await task.value
        }
    }

    func serviceGroup(
        signals: [UnixSignal], onListening: @escaping @Sendable (_ api: String, _ probes: String?) -> Void
    ) async throws -> ServiceGroup {
        try configuration.validate()
        let scheme = configuration.usesTLS ? "https" : "http"
        let host = configuration.listen.urlHost
        let handler = handler
        await handler.primeMetrics()
        let probes = configuration.probeListen.map { _ in BoundURL() }
        let responder = CallbackResponder<ServerRequestContext> { request, context in
            await handler.respond(request, context: context)
        }
        let app = Application(
            responder: responder, server: try serverBuilder(),
            configuration: .init(
                address: .hostname(configuration.listen.host, port: configuration.listen.port),
                serverName: "backupctl",
                availableConnectionsDelegate: RegistryAdmission(registry: registry)),
            onServerRunning: { [probes] channel in
                let url = "\(scheme)://\(host):\(channel.localAddress?.port ?? configuration.listen.port)"
                onListening(url, await probes?.wait())
            }, logger: logger)
        // Services stop in reverse order: the API drains first, then the signer writes its last
        // checkpoint, then the store takes its last WAL checkpoint.
        let signer = CheckpointService(console: console, everySeconds: configuration.checkpointEverySeconds)
        var services: [any Service] = [
            StoreUpkeepService(console: console), signer, ReadinessService(readiness: handler.readiness),
        ]
        if let address = configuration.probeListen, let probes {
            services.append(ProbeListener(address: address, handler: handler, logger: logger, bound: probes))
            if configuration.workNice > 0 {
                services.append(WorkPriority(drop: Int32(configuration.workNice), logger: logger))
            }
        }
        services.append(app)
        // Last, so told first when the stop begins: jobs stop starting new work while the API
        // drains.
        services.append(StoppingNotice(console: console))
        var groupConfiguration = ServiceGroupConfiguration(
            services: services, gracefulShutdownSignals: signals, cancellationSignals: [], logger: logger)
        groupConfiguration.maximumGracefulShutdownDuration = .seconds(configuration.drainSeconds)
        return ServiceGroup(configuration: groupConfiguration)
    }

    /// HTTP/1.1, over TLS with a certificate, behind the connection guard (``GuardedHTTPChannel``).
    /// The guard owns every deadline, the idle one included (Hummingbird's is off).
    private func serverBuilder() throws(ConsoleError) -> HTTPServerBuilder {
        let tls: NIOSSLContext? =
            if let certificate = configuration.tlsCertificate, let key = configuration.tlsKey {
                try ServerTLS.context(
                    certificate: certificate, key: key, minimumVersion: configuration.tlsMinimumVersion)
            } else {
                nil
            }
        let http1 = HTTP1Channel.Configuration(idleTimeout: nil)
        let registry = registry
        return HTTPServerBuilder { responder in
            GuardedHTTPChannel(responder: responder, http1: http1, tls: tls, registry: registry)
        }
    }

    /// Open connections and those the guard closed, by reason (tests, metrics).
    public var connectionCounts: (open: Int, closed: [String: Int]) { registry.snapshot }
}

/// The request context: Hummingbird's, plus the client's address (rate limits and audit).
struct ServerRequestContext: RequestContext {
    var coreContext: CoreRequestContextStorage
    let remoteAddress: SocketAddress?
    /// The connection's channel (``ConnectionRegistry/trust(channel:)``).
    let channelID: ObjectIdentifier

    init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        remoteAddress = source.channel.remoteAddress
        channelID = ObjectIdentifier(source.channel)
    }

    /// The address as audited: the IP, without the port.
    var clientAddress: String { remoteAddress?.ipAddress ?? "unknown" }
}

/// Signs audit checkpoints on a timer while the server runs (``LocalConsole/checkpointLoop(every:sleep:)``;
/// it waits idle when the console has no audit key), and a last one at shutdown.
/// Tells the console a graceful stop began (``LocalConsole/beginStopping()``).
struct StoppingNotice: Service {
    let console: LocalConsole

    func run() async throws {
        try? await gracefulShutdown()
        console.beginStopping()
    }
}

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
