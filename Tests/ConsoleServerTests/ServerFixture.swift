import Access
import AsyncHTTPClient
import BackupCrypto
import BackupModel
import ConsoleClient
import ConsoleServer
import ConsoleService
import ConsoleStore
import Foundation
import Logging
import NIOCore
import NIOHTTP1
import SQLiteStore

/// A real store in a temporary directory — admin `root` (tenant `sandbox`), a second tenant
/// `beta`, and `bob`, a viewer of `sandbox` only — served by a ``ConsoleServer`` on 127.0.0.1
/// in this process. The store is also open here, as a second connection, to change grants and
/// read the audit behind the server's back.
final class ServerFixture: @unchecked Sendable {
    let directory: URL
    let path: String
    let store: SQLiteConsoleStore
    let access: AccessService
    let rootToken: SecretBytes
    let bobToken: SecretBytes
    let running: ConsoleServer.Running
    /// The server's clock (failed sign-ins are limited per minute of it); the store keeps real time.
    let time = ManualTime(1_790_000_000_000)

    var url: String { running.url }

    init(
        configuration: (ListenAddress) -> ConsoleServer.Configuration = { ConsoleServer.Configuration(listen: $0) },
        operations: [String: any ConsoleOperation.Type] = ConsoleOperations.byName,
        directory: URL? = nil
    ) async throws {
        let directory =
            directory
            ?? FileManager.default.temporaryDirectory.appendingPathComponent("server-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        self.directory = directory
        path = directory.appendingPathComponent("console.db").path
        let made = try await StoreSetup(path: path)
        store = made.store
        access = made.access
        rootToken = made.rootToken
        bobToken = made.bobToken
        let console = LocalConsole(storePath: path, clock: .manual(time))
        var logger = Logger(label: "test.serve")
        logger.logLevel = .critical
        let server = ConsoleServer(
            console: console, configuration: configuration(ListenAddress(host: "127.0.0.1", port: 0)), logger: logger,
            operations: operations)
        running = try await server.start()
    }

    /// Runs `body` against a fresh server, then stops it (also when `body` throws).
    static func with(
        configuration: @escaping (ListenAddress) -> ConsoleServer.Configuration = {
            ConsoleServer.Configuration(listen: $0)
        },
        operations: [String: any ConsoleOperation.Type] = ConsoleOperations.byName,
        _ body: (ServerFixture) async throws -> Void
    ) async throws {
        let fixture = try await ServerFixture(configuration: configuration, operations: operations)
        do {
            try await body(fixture)
        } catch {
            await fixture.stop()
            throw error
        }
        await fixture.stop()
    }

    func stop() async {
        try? await running.stop()
        try? FileManager.default.removeItem(at: directory)
    }

    func rootSession() async throws -> Session {
        try await access.session(
            operator: try await access.authenticate(token: rootToken), tenant: try TenantName("sandbox"))
    }

    func remote(caFile: String? = nil) throws -> RemoteConsole {
        try RemoteConsole(server: url, caFile: caFile, timeout: .seconds(60))
    }

    static func text(_ token: SecretBytes) -> String {
        token.withUnsafeBytes { String(decoding: $0, as: UTF8.self) }
    }

    /// A raw request: the status and body as the server sent them.
    func request(
        _ method: HTTPMethod, _ path: String, bearer: String? = nil, tenant: String? = nil, body: String = "{}"
    ) async throws -> (status: Int, body: String) {
        var request = HTTPClientRequest(url: url + path)
        request.method = method
        if let bearer { request.headers.add(name: "Authorization", value: "Bearer " + bearer) }
        if let tenant { request.headers.add(name: Wire.tenantHeader, value: tenant) }
        if method == .POST {
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(ByteBuffer(string: body))
        }
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(30))
        var buffer = try await response.body.collect(upTo: 16 << 20)
        return (Int(response.status.code), buffer.readString(length: buffer.readableBytes) ?? "")
    }

    /// A raw request with the answer's headers.
    func requestWithHeaders(
        _ method: HTTPMethod, _ path: String, bearer: String? = nil, tenant: String? = nil, body: String = "{}"
    ) async throws -> (status: Int, body: String, headers: [String: String]) {
        var request = HTTPClientRequest(url: url + path)
        request.method = method
        if let bearer { request.headers.add(name: "Authorization", value: "Bearer " + bearer) }
        if let tenant { request.headers.add(name: Wire.tenantHeader, value: tenant) }
        request.headers.add(name: "Content-Type", value: "application/json")
        request.body = .bytes(ByteBuffer(string: body))
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(30))
        var buffer = try await response.body.collect(upTo: 16 << 20)
        let headers = Dictionary(response.headers.map { ($0.name, $0.value) }) { $1 }
        return (Int(response.status.code), buffer.readString(length: buffer.readableBytes) ?? "", headers)
    }

    /// The `error.code` of an error document.
    static func errorCode(_ body: String) -> String? {
        let object = try? JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any]
        return (object?["error"] as? [String: Any])?["code"] as? String
    }

    /// Every audit entry, read here (not through the server).
    func audit() async throws -> [AuditEntry] {
        try await store.auditEntries(tenant: nil, afterSeq: 0, limit: 100_000)
    }
}

/// The store every server test starts from: admin `root` (tenant `sandbox`), tenant `beta`,
/// and `bob`, a viewer of `sandbox` only.
struct StoreSetup {
    let store: SQLiteConsoleStore
    let access: AccessService
    let rootToken: SecretBytes
    let bobToken: SecretBytes

    init(path: String) async throws {
        store = try SQLiteConsoleStore(path: path)
        access = AccessService(store: store, clock: .system, random: SystemRandom())
        rootToken = try await access.bootstrap(admin: try OperatorName("root"))
        let root = try await access.authenticate(token: rootToken)
        try await access.createTenant(
            TenantRecord(name: try TenantName("beta"), isSandbox: true, createdAt: 1), by: root)
        let session = try await access.session(operator: root, tenant: try TenantName("sandbox"))
        bobToken = try await access.addOperator(try OperatorName("bob"), role: .viewer, session: session)
    }
}

/// A well-formed token no store knows: `bctl_` and 43 base64url characters.
func unknownToken(_ fill: Character = "Q") -> String {
    "bctl_" + String(repeating: fill, count: 43)
}
