import AsyncHTTPClient
import BackupCrypto
import BackupModel
import Foundation
import NIOCore
import NIOHTTP1

/// A client of the Backup Service's `GET /health`, `POST /v1/backup/status`,
/// `POST /v1/reset/challenge/keypair` and `POST /v1/reset` over AsyncHTTPClient.
///
/// Live tenants point it at the deployment; sandbox tenants at the in-process emulator on a
/// loopback port, so both go through this one path. `status` and `challenge` are safe to repeat
/// and are retried with full-jitter back-off (transport failures, timeouts, 408 and 5xx), at
/// most ``attempts`` times; `reset` is sent once, because a lost answer must be resolved with
/// `status`, never by replaying a single-use token.
public struct BackupServiceClient: Sendable {
    public let baseURL: String
    let client: HTTPClient
    /// The deadline of each request.
    public var timeoutMillis: Int64
    /// Attempts for the idempotent calls (1 = no retry).
    public var attempts: Int
    /// Cap of the full-jitter back-off between attempts.
    public var backoffCapMillis: Int64
    let sleep: @Sendable (Int64) async throws -> Void
    let random: any RandomSource

    /// The process-wide client: pooled connections, a 5 s connect timeout, no redirects (a
    /// tenant's URL must not lead the console anywhere else).
    public static let sharedClient: HTTPClient = {
        var configuration = HTTPClient.Configuration()
        configuration.timeout.connect = .seconds(5)
        configuration.redirectConfiguration = .disallow
        return HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
    }()

    /// How long `/v1/reset` is given, by default past the service's own 30 s request deadline
    /// (its `TimeoutLayer` answers 408 then), so a slow reset still in progress there is never
    /// taken here for one that did not happen. At least ``timeoutMillis``.
    public var resetTimeoutMillis: Int64

    /// Answers larger than this are refused; the service's are tiny.
    static let maxResponseBytes = 1 << 20

    /// - Throws: ``ConsoleError`` `invalid_url` unless `baseURL` is an http(s) URL with a host.
    public init(
        baseURL: String, client: HTTPClient = BackupServiceClient.sharedClient, timeoutMillis: Int64 = 15_000,
        resetTimeoutMillis: Int64 = 35_000, attempts: Int = 3, backoffCapMillis: Int64 = 2_000,
        random: any RandomSource = SystemRandom(),
        sleep: @escaping @Sendable (Int64) async throws -> Void = { millis in
            if millis > 0 { try await Task.sleep(nanoseconds: UInt64(millis) * 1_000_000) }
        }
    ) throws(ConsoleError) {
        self.baseURL = try Self.normalize(baseURL)
        self.client = client
        self.timeoutMillis = max(1, timeoutMillis)
        self.resetTimeoutMillis = max(1, timeoutMillis, resetTimeoutMillis)
        self.attempts = max(1, attempts)
        self.backoffCapMillis = max(0, backoffCapMillis)
        self.random = random
        self.sleep = sleep
    }

    /// `https://host[:port][/prefix]` without a trailing slash.
    /// - Throws: `invalid_url` for anything else (no scheme, another scheme, no host, a query).
    public static func normalize(_ text: String) throws(ConsoleError) -> String {
        var trimmed = text.trimmingCharacters(in: .whitespaces)
        while trimmed.hasSuffix("/") { trimmed.removeLast() }
        guard trimmed.utf8.count <= 2048, let url = URL(string: trimmed),
            let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https",
            let host = url.host, !host.isEmpty, url.query == nil, url.fragment == nil, url.user == nil
        else {
            throw .invalid(
                "invalid_url",
                "A Backup Service URL must look like https://host[:port], got \"\(BackupServiceError.quote(text, limit: 120))\"."
            )
        }
        return trimmed
    }

    // MARK: - Routes

    /// `GET /health`.
    public func health() async throws(BackupServiceError) -> BackupServiceWire.Health {
        let (status, body) = try await retrying("/health") { () async throws(BackupServiceError) in
            try await send(.GET, "/health", body: nil)
        }
        guard status == 200 else { throw unexpected("/health", status, body) }
        return try decode(BackupServiceWire.Health.self, body, route: "/health")
    }

    /// `POST /v1/backup/status`: the live backup's main factors.
    /// - Throws: `.service(404, "not_found")` when the service has no metadata for `backupId`.
    public func status(backupId: String) async throws(BackupServiceError) -> BackupServiceWire.StatusResponse {
        let route = "/v1/backup/status"
        let body = try encode(BackupServiceWire.StatusRequest(backupId: backupId))
        let (status, answer) = try await retrying(route) { () async throws(BackupServiceError) in
            try await send(.POST, route, body: body)
        }
        guard status == 200 else { throw unexpected(route, status, answer) }
        return try decode(BackupServiceWire.StatusResponse.self, answer, route: route)
    }

    /// `POST /v1/reset/challenge/keypair`: 32 challenge bytes and the opaque single-use token.
    public func resetChallenge(backupAccountId: String) async throws(BackupServiceError) -> (
        challenge: [UInt8], token: SecretBytes
    ) {
        let route = "/v1/reset/challenge/keypair"
        let body = try encode(BackupServiceWire.ChallengeRequest(backupAccountId: backupAccountId))
        let (status, answer) = try await retrying(route) { () async throws(BackupServiceError) in
            try await send(.POST, route, body: body)
        }
        guard status == 200 else { throw unexpected(route, status, answer) }
        let decoded = try decode(BackupServiceWire.ChallengeResponse.self, answer, route: route)
        guard let challenge = Base64.decode(decoded.challenge, alphabet: .standard), challenge.count == 32,
            !decoded.token.isEmpty, decoded.token.utf8.count <= 8192
        else {
            throw BackupServiceError(
                .malformedResponse(status: status),
                "The Backup Service's challenge answer is not 32 base64 bytes and a token.")
        }
        return (challenge, SecretBytes(Array(decoded.token.utf8)))
    }

    /// `POST /v1/reset`, sent once. Returns on `204` only.
    /// - Throws: the service's refusal, or a failure whose ``BackupServiceError/outcomeUnknown``
    ///   says the reset may or may not have happened.
    public func reset(backupAccountId: String, signature: String, token: SecretBytes) async throws(BackupServiceError) {
        let route = "/v1/reset"
        let text = token.withUnsafeBytes { String(decoding: $0, as: UTF8.self) }
        let body = try encode(
            BackupServiceWire.ResetRequest(backupAccountId: backupAccountId, signature: signature, challengeToken: text)
        )
        let (status, answer) = try await send(
            .POST, route, body: body, timeoutMillis: resetTimeoutMillis)
        guard status == 204 else { throw unexpected(route, status, answer) }
    }

    // MARK: - Transport

    func send(_ method: HTTPMethod, _ route: String, body: [UInt8]?, timeoutMillis: Int64? = nil)
        async throws(BackupServiceError) -> (Int, [UInt8])
    {
        let timeoutMillis = timeoutMillis ?? self.timeoutMillis
        var request = HTTPClientRequest(url: baseURL + route)
        request.method = method
        request.headers.add(name: "Accept", value: "application/json")
        if let body {
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(ByteBuffer(bytes: body))
        }
        let started = ContinuousClock.now
        do {
            let response = try await client.execute(request, timeout: .milliseconds(timeoutMillis))
            // The client's deadline ends with the answer's head; the body gets what is left of it.
            guard
                let bytes = try await Deadline.run(
                    millis: Deadline.remaining(timeoutMillis, since: started),
                    {
                        var buffer = try await response.body.collect(upTo: Self.maxResponseBytes)
                        return buffer.readBytes(length: buffer.readableBytes) ?? []
                    })
            else {
                throw BackupServiceError(
                    .timeout,
                    "The Backup Service at \(baseURL) did not finish its answer to \(route) within \(timeoutMillis) ms."
                )
            }
            return (Int(response.status.code), bytes)
        } catch let error as BackupServiceError {
            throw error
        } catch let error as HTTPClientError {
            if error == .deadlineExceeded || error == .readTimeout || error == .connectTimeout {
                throw BackupServiceError(
                    .timeout, "The Backup Service at \(baseURL) did not answer \(route) within \(timeoutMillis) ms.")
            }
            throw BackupServiceError(
                .transport, "The connection to the Backup Service at \(baseURL) failed on \(route): \(error).")
        } catch is CancellationError {
            throw BackupServiceError(.cancelled, "The call to \(route) was cancelled.")
        } catch {
            let text = "\(error)"
            if text.contains("Connection refused") {
                throw BackupServiceError(
                    .transport, "The Backup Service at \(baseURL) refused the connection (nothing listens there?).")
            }
            throw BackupServiceError(
                .transport,
                "The connection to the Backup Service at \(baseURL) failed on \(route): \(BackupServiceError.quote(text))."
            )
        }
    }

    /// Runs `call` up to ``attempts`` times while it fails retryably, sleeping a full-jitter delay between.
    func retrying(_ route: String, _ call: () async throws(BackupServiceError) -> (Int, [UInt8]))
        async throws(BackupServiceError) -> (Int, [UInt8])
    {
        var attempt = 0
        while true {
            attempt += 1
            let failure: BackupServiceError
            do throws(BackupServiceError) {
                let (status, body) = try await call()
                guard status >= 500 || status == 408, attempt < attempts else { return (status, body) }
                failure = unexpected(route, status, body)
            } catch {
                failure = error
            }
            guard failure.retryable, attempt < attempts else { throw failure }
            let ceiling = min(backoffCapMillis, 100 << min(attempt, 20))
            let delay = ceiling > 0 ? Int64(jitter() % UInt64(ceiling + 1)) : 0
            do { try await sleep(delay) } catch {
                throw BackupServiceError(.cancelled, "The call to \(route) was cancelled.")
            }
        }
    }

    private func jitter() -> UInt64 {
        random.bytes(8).reduce(0) { $0 << 8 | UInt64($1) }
    }

    // MARK: - Bodies

    /// The error for any answer that is not the route's success: the app's envelope when it is
    /// one, else the framework's plain text (or something unreadable).
    func unexpected(_ route: String, _ status: Int, _ body: [UInt8]) -> BackupServiceError {
        // Only the service's code is kept, and only when it has the form of one; its message and
        // any other body are never repeated: the URL is a tenant admin's to set, and what answers
        // there must not be relayed to them (the server's own network would be readable).
        if let envelope = try? JSONDecoder().decode(BackupServiceWire.ErrorEnvelope.self, from: Data(body)) {
            let raw = envelope.error.code
            let isCode =
                (1...64).contains(raw.utf8.count)
                && raw.utf8.allSatisfy { (0x61...0x7A).contains($0) || (0x30...0x39).contains($0) || $0 == 0x5F }
            let code = isCode ? raw : "backup_service_error"
            return BackupServiceError(
                .service(status: status, code: code),
                "The Backup Service refused \(route) with \(code) (HTTP \(status)).")
        }
        let detail = body.isEmpty ? "" : " (a body of \(body.count) bytes, not shown)"
        switch status {
        case 400, 413, 415, 422, 408:
            let what =
                [
                    400: "a body that is not valid JSON", 413: "a body over its size limit",
                    415: "a request without Content-Type: application/json",
                    422: "a body that does not fit the request type", 408: "a request that took over 30 s",
                ][status] ?? ""
            return BackupServiceError(
                .framework(status: status),
                "The Backup Service's HTTP framework rejected \(route) (HTTP \(status), \(what))\(detail).")
        case 500...599:
            return BackupServiceError(
                .framework(status: status), "The Backup Service failed on \(route) (HTTP \(status))\(detail).")
        default:
            return BackupServiceError(
                .malformedResponse(status: status),
                "The Backup Service answered \(route) with an unexpected HTTP \(status)\(detail).")
        }
    }

    /// ``unexpected(_:_:_:)`` for tests of the mapping without a server.
    public func unexpectedForTests(_ route: String, _ status: Int, _ body: [UInt8]) -> BackupServiceError {
        unexpected(route, status, body)
    }

    func encode(_ value: some Encodable) throws(BackupServiceError) -> [UInt8] {
        do {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            return Array(try encoder.encode(value))
        } catch {
            throw BackupServiceError(.malformedResponse(status: 0), "Could not encode the request: \(error).")
        }
    }

    func decode<T: Decodable>(_ type: T.Type, _ body: [UInt8], route: String) throws(BackupServiceError) -> T {
        do { return try JSONDecoder().decode(type, from: Data(body)) } catch {
            throw BackupServiceError(
                .malformedResponse(status: 200), "The Backup Service's answer to \(route) is not the expected JSON.")
        }
    }
}
