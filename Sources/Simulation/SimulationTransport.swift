import AsyncHTTPClient
import BackupModel
import BackupServiceSandbox
import Foundation
import NIOCore
import NIOHTTP1
import Turnkey
import TurnkeySandbox

/// How the simulated clients reach the Backup Service and Turnkey: in-process (no socket; the
/// emulators' own request handlers) or over HTTP (the standalone sandboxes).
public protocol SimulationTransport: Sendable {
    func backup(_ request: BackupServiceEmulator.Request) async -> ServiceAnswer?
    func turnkey(_ request: TurnkeySandbox.Request) async -> TurnkeyHTTPResponse?
}

/// Straight into the emulators' handlers.
public struct InProcessTransport: SimulationTransport {
    public let service: BackupServiceEmulator
    public let turnkey: TurnkeySandbox

    public init(service: BackupServiceEmulator, turnkey: TurnkeySandbox) {
        self.service = service
        self.turnkey = turnkey
    }

    public func backup(_ request: BackupServiceEmulator.Request) async -> ServiceAnswer? {
        let answer = await service.handle(request)
        return answer.drop ? nil : answer
    }

    public func turnkey(_ request: TurnkeySandbox.Request) async -> TurnkeyHTTPResponse? {
        await turnkey.handle(request)
    }
}

/// Counts what the clients send — every attempt of every call, challenges and polls included —
/// whatever carries it.
final class CountingTransport: SimulationTransport, @unchecked Sendable {
    let inner: any SimulationTransport
    private let lock = NSLock()
    // Guarded by `lock`.
    private var sent = 0

    init(_ inner: any SimulationTransport) { self.inner = inner }

    var requests: Int { lock.withLock { sent } }

    func backup(_ request: BackupServiceEmulator.Request) async -> ServiceAnswer? {
        lock.withLock { sent += 1 }
        return await inner.backup(request)
    }

    func turnkey(_ request: TurnkeySandbox.Request) async -> TurnkeyHTTPResponse? {
        lock.withLock { sent += 1 }
        return await inner.turnkey(request)
    }
}

/// Over HTTP with AsyncHTTPClient, to `sandbox backup-service` and `sandbox turnkey`. A
/// connection failure or a dropped answer is `nil`, which the clients treat as a transient
/// failure (the request may or may not have been acted on).
public final class HTTPTransport: SimulationTransport {
    let serviceURL: String
    let turnkeyURL: String
    let client: HTTPClient

    public init(serviceURL: String, turnkeyURL: String) {
        self.serviceURL = serviceURL.hasSuffix("/") ? String(serviceURL.dropLast()) : serviceURL
        self.turnkeyURL = turnkeyURL.hasSuffix("/") ? String(turnkeyURL.dropLast()) : turnkeyURL
        var configuration = HTTPClient.Configuration()
        configuration.timeout = .init(connect: .seconds(5), read: .seconds(30))
        configuration.connectionPool = .init(idleTimeout: .seconds(30), concurrentHTTP1ConnectionsPerHostSoftLimit: 16)
        client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
    }

    /// Closes the connection pool.
    public func shutdown() async { try? await client.shutdown() }

    public func backup(_ request: BackupServiceEmulator.Request) async -> ServiceAnswer? {
        guard
            let (status, headers, body) = await send(
                serviceURL + request.path, method: request.method, headers: request.headers, body: request.body)
        else { return nil }
        return ServiceAnswer(status: status, contentType: headers.first(name: "content-type"), body: body)
    }

    public func turnkey(_ request: TurnkeySandbox.Request) async -> TurnkeyHTTPResponse? {
        var headers = ["content-type": "application/json"]
        if let stamp = request.stamp { headers["X-Stamp"] = stamp }
        if let stamp = request.webAuthnStamp { headers[TurnkeySandbox.webAuthnStampHeader] = stamp }
        if let fault = request.fault { headers[TurnkeySandbox.faultHeader] = fault }
        guard
            let (status, fields, body) = await send(
                turnkeyURL + request.path, method: "POST", headers: headers, body: request.body)
        else { return nil }
        return TurnkeyHTTPResponse(status: status, retryAfter: fields.first(name: "retry-after"), body: body)
    }

    func send(_ url: String, method: String, headers: [String: String], body: [UInt8]) async -> (
        Int, HTTPHeaders, [UInt8]
    )? {
        var request = HTTPClientRequest(url: url)
        request.method = HTTPMethod(rawValue: method)
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        if !body.isEmpty || method == "POST" { request.body = .bytes(ByteBuffer(bytes: body)) }
        do {
            let response = try await client.execute(request, timeout: .seconds(30))
            let bytes = try await response.body.collect(upTo: 32 * 1024 * 1024)
            return (Int(response.status.code), response.headers, Array(bytes.readableBytesView))
        } catch {
            return nil
        }
    }
}
