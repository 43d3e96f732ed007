import BackupCrypto
import BackupModel
import ConsoleStore
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import ServiceLifecycle

/// Serves a ``BackupServiceEmulator`` over HTTP with Hummingbird on a loopback port.
///
/// The console always talks HTTP to a Backup Service: sandbox tenants get one of these
/// in-process on an ephemeral port, and `backupctl sandbox backup-service` runs one standalone
/// over an export directory. `stop` shuts down gracefully and waits.
public final class BackupServiceSandboxServer: Sendable {
    public let emulator: BackupServiceEmulator
    public let host: String
    public let port: Int
    private let task: Task<Void, any Error>
    private let group: ServiceGroup

    private init(
        emulator: BackupServiceEmulator, host: String, port: Int, task: Task<Void, any Error>, group: ServiceGroup
    ) {
        self.emulator = emulator
        self.host = host
        self.port = port
        self.task = task
        self.group = group
    }

    /// The base URL to give a `BackupServiceClient`.
    public var baseURL: String { "http://\(host):\(port)" }

    struct Dropped: Error {}

    /// Starts serving `emulator` on `host:port` (0 = ephemeral).
    /// - Throws: ``ConsoleError`` `sandbox_listen_failed` when the address cannot be bound.
    public static func start(
        _ emulator: BackupServiceEmulator, host: String = "127.0.0.1", port: Int = 0,
        logger: Logger = Logger(label: "backupctl.backup-service-sandbox")
    ) async throws(ConsoleError) -> BackupServiceSandboxServer {
        let (bound, continuation) = AsyncStream<Int>.makeStream()
        let responder = CallbackResponder<BasicRequestContext> { request, _ in
            var request = request
            // The service's body limit is far above anything a console sends; 1 MiB here.
            let buffer = try await request.collectBody(upTo: 1 << 20)
            let answer = await emulator.handle(
                method: request.method.rawValue, path: request.uri.path, contentType: request.headers[.contentType],
                body: Array(buffer.readableBytesView))
            if answer.drop {
                // The work is done; the answer never arrives: a head, then a body that fails.
                return Response(status: .ok, body: ResponseBody { _ in throw Dropped() })
            }
            var headers = HTTPFields()
            if let type = answer.contentType { headers[.contentType] = type }
            return Response(
                status: .init(code: answer.status), headers: headers,
                body: ResponseBody(byteBuffer: ByteBuffer(bytes: answer.body)))
        }
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
                .invalidInput, code: "sandbox_listen_failed",
                "The Backup Service sandbox could not listen on \(host):\(port).")
        }
        return BackupServiceSandboxServer(emulator: emulator, host: host, port: boundPort, task: task, group: group)
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

/// The sandbox service of a store-backed sandbox tenant.
extension BackupServiceEmulator {
    /// The emulator over a sandbox tenant's backups in the console store. Its token key is
    /// derived from the tenant name, like the sandbox Turnkey's keys: not a secret, it only
    /// ever unlocks this emulator, and every `backupctl` process on the store sees the same one.
    public static func sandbox(
        store: any LiveTenantStore, tenant: TenantName, clock: WallClock = .system,
        faults: ServiceFaults = ServiceFaults()
    ) -> BackupServiceEmulator {
        BackupServiceEmulator(
            backend: StoreBackend(store: store, tenant: tenant),
            key: SHA256.hash(Array("backupctl-sandbox-backup-service|\(tenant)".utf8)), clock: clock, faults: faults)
    }
}
