import BackupCrypto
import BackupModel
import ConsoleStore
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import SandboxHTTP

/// Serves a ``BackupServiceEmulator`` over HTTP on a loopback port (a ``LoopbackServer``).
///
/// The console always talks HTTP to a Backup Service: sandbox tenants get one of these
/// in-process on an ephemeral port, and `backupctl sandbox backup-service` runs one standalone
/// over an export directory.
public final class BackupServiceSandboxServer: Sendable {
    public let emulator: BackupServiceEmulator
    let server: LoopbackServer

    private init(emulator: BackupServiceEmulator, server: LoopbackServer) {
        self.emulator = emulator
        self.server = server
    }

    public var host: String { server.host }
    public var port: Int { server.port }
    /// The base URL to give a `BackupServiceClient`.
    public var baseURL: String { server.baseURL }

    struct Dropped: Error {}

    /// Starts serving `emulator` on `host:port` (0 = ephemeral).
    /// - Throws: ``ConsoleError`` `sandbox_listen_failed` when the address cannot be bound.
    public static func start(
        _ emulator: BackupServiceEmulator, host: String = "127.0.0.1", port: Int = 0,
        logger: Logger = Logger(label: "backupctl.backup-service-sandbox")
    ) async throws(ConsoleError) -> BackupServiceSandboxServer {
        let server = try await LoopbackServer.start(
            "The Backup Service sandbox", host: host, port: port, logger: logger
        ) { request in
            var request = request
            // A create or sync of up to 16 MiB (a larger Content-Length is refused before
            // reading), 2 MB elsewhere; past the limit the framework answers 413 without reading on.
            let path = request.uri.path
            let answer: ServiceAnswer
            if let refused = BackupServiceEmulator.refusedBeforeReading(
                path: path, contentLength: request.headers[.contentLength].flatMap { Int($0) })
            {
                answer = refused
            } else if let buffer = try? await request.collectBody(upTo: BackupServiceEmulator.bodyLimit(path: path)) {
                var fields: [String: String] = [:]
                for field in request.headers { fields[field.name.canonicalName] = field.value }
                answer = await emulator.handle(
                    BackupServiceEmulator.Request(
                        method: request.method.rawValue, path: path, headers: fields,
                        body: Array(buffer.readableBytesView)))
            } else {
                answer = BackupServiceEmulator.bodyTooLarge
            }
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
        return BackupServiceSandboxServer(emulator: emulator, server: server)
    }

    /// Stops the server gracefully and waits for it.
    public func stop() async { await server.stop() }

    /// Runs until the task is cancelled or the server fails.
    public func wait() async throws { try await server.wait() }
}

/// The sandbox service of a store-backed sandbox tenant.
extension BackupServiceEmulator {
    /// The emulator over a sandbox tenant's backups in the console store. Its token key is
    /// derived from the tenant name, like the sandbox Turnkey's keys: not a secret, it only
    /// ever unlocks this emulator, and every `backupctl` process on the store sees the same one.
    public static func sandbox(
        store: any SandboxStore, tenant: TenantName, clock: WallClock = .system,
        faults: ServiceFaults = ServiceFaults()
    ) -> BackupServiceEmulator {
        BackupServiceEmulator(
            backend: StoreBackend(store: store, tenant: tenant),
            key: SHA256.hash(Array("backupctl-sandbox-backup-service|\(tenant)".utf8)), clock: clock, faults: faults)
    }
}
