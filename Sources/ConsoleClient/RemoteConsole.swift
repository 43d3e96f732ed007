import AsyncHTTPClient
import BackupModel
import ConsoleInterface
import Foundation
import NIOCore
import NIOFoundationCompat
import NIOHTTP1
import NIOSSL
import Synchronization

/// The service layer over HTTP: every operation goes to a `backupctl serve`, which alone opens
/// the store, holds the keys and writes the audit. Errors come back with their code and kind,
/// so the console prints and exits exactly as it would in-process.
public final class RemoteConsole: ConsoleAPI {
    public let baseURL: String
    /// Streamed jobs (progress as JSON lines) go through AsyncHTTPClient.
    let client: HTTPClient
    /// Every other operation: one request, one whole answer (``KeepAliveClient``).
    let plain: KeepAliveClient
    /// `HOST:PORT` as the server URL names them (the `Host` header).
    let hostHeader: String
    let timeout: TimeAmount

    /// A console on `server` that also trusts the certificates of `caFile` (PEM), for a server
    /// whose certificate a private CA signed, or a self-signed one.
    /// - Parameters:
    ///   - server: `http://HOST:PORT` or `https://HOST:PORT` (a trailing slash is ignored).
    ///   - caFile: a PEM file of certificates trusted besides the system's roots.
    ///   - allowPlainHTTP: `--insecure-plain-http`: plain `http://` to a host that is not this
    ///     machine. Without it the token would cross the network in clear, so it is refused.
    /// - Throws: `invalid_server` for anything else than such a URL; `plain_http_refused`,
    ///   `invalid_ca_file` (configuration errors, exit 78).
    public init(
        server: String, caFile: String? = nil, timeout: TimeAmount = .seconds(600), allowPlainHTTP: Bool = false
    ) throws(ConsoleError) {
        var url = server
        while url.hasSuffix("/") { url.removeLast() }
        guard let parsed = URL(string: url), let scheme = parsed.scheme, ["http", "https"].contains(scheme),
            var host = parsed.host, !host.isEmpty, parsed.path.isEmpty, parsed.query == nil, parsed.user == nil
        else {
            throw .configuration(
                "invalid_server",
                "--server must be http://HOST:PORT or https://HOST:PORT (the token goes in --token-file, never in the URL), got \(SecretShape.redact(String(server.prefix { $0 != "?" && $0 != "#" }.prefix(200))).prefix(80))\(server.contains(where: { $0 == "?" || $0 == "#" }) ? "…" : "")."
            )
        }
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        if scheme == "http", !allowPlainHTTP, !NetworkAddress.isLoopback(host: host) {
            throw .configuration(
                "plain_http_refused",
                "Refusing plain HTTP to \(host.prefix(80)), which is not this machine: the operator token would cross "
                    + "the network in clear. Use https://, or pass --insecure-plain-http.")
        }
        baseURL = url
        hostHeader = String(url.dropFirst(scheme.count + 3))
        let tls = try caFile.map { path throws(ConsoleError) in try Self.tls(trusting: path) }
        client = try Self.client(trusting: caFile)
        do {
            plain = try KeepAliveClient(
                host: host, port: parsed.port ?? (scheme == "https" ? 443 : 80),
                tls: scheme == "https" ? tls ?? Self.clientTLS() : nil)
        } catch {
            throw .configuration("invalid_ca_file", "Cannot set up TLS with the CA file \(caFile ?? "-").")
        }
        self.timeout = timeout
    }

    /// One client per CA file (`""` for none) for the whole process: an `HTTPClient` must be shut
    /// down before it goes, so these live as long as the process, as `HTTPClient.shared` does.
    private static let clients = Mutex<[String: HTTPClient]>([:])

    /// A client that trusts `caFile` besides the system's roots. A refused connection or an
    /// untrusted certificate fails the call at once (AsyncHTTPClient would otherwise retry
    /// until the call's deadline, minutes away for a long job).
    static func client(trusting caFile: String?) throws(ConsoleError) -> HTTPClient {
        let key = caFile ?? ""
        if let client = clients.withLock({ $0[key] }) { return client }
        var configuration = HTTPClient.Configuration()
        configuration.connectionPool.retryConnectionEstablishment = false
        // A redirect could carry the token to another host: never followed.
        configuration.redirectConfiguration = .disallow
        configuration.tlsConfiguration =
            try caFile.map { path throws(ConsoleError) in try tls(trusting: path) } ?? clientTLS()
        return clients.withLock { clients in
            if let client = clients[key] { return client }
            let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
            clients[key] = client
            return client
        }
    }

    /// The client's TLS: 1.2 or newer, with the system's roots.
    static func clientTLS() -> TLSConfiguration {
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.minimumTLSVersion = .tlsv12
        return tls
    }

    /// ``clientTLS()`` that also trusts the certificates of `caFile`, read through ``InputFile``
    /// (a FIFO or device is refused at once, never waited on).
    static func tls(trusting caFile: String) throws(ConsoleError) -> TLSConfiguration {
        let bytes = try InputFile.read(
            caFile, what: "The CA file", maxBytes: 1 << 20, code: "invalid_ca_file", kind: .configuration)
        let certificates: [NIOSSLCertificate]
        do {
            certificates = try NIOSSLCertificate.fromPEMBytes(bytes)
        } catch {
            throw .configuration("invalid_ca_file", "Cannot read a PEM certificate from the CA file \(caFile).")
        }
        guard !certificates.isEmpty else {
            throw .configuration("invalid_ca_file", "The CA file \(caFile) holds no certificate.")
        }
        var tls = clientTLS()
        tls.additionalTrustRoots = [.certificates(certificates)]
        return tls
    }

    public func perform<Op: ConsoleOperation>(
        _ operation: Op, as caller: Caller, progress: ProgressSink?
    ) async throws(ConsoleError) -> Op.Output {
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: "application/json")
        if let token = caller.token {
            let text = token.withUnsafeBytes { String(decoding: $0, as: UTF8.self) }
            headers.add(name: "Authorization", value: "Bearer " + text)
        }
        if let tenant = caller.tenant { headers.add(name: Wire.tenantHeader, value: tenant) }
        let body: ByteBuffer
        do {
            body = ByteBuffer(data: try Wire.encoder().encode(operation))
        } catch {
            throw .internalError("Could not encode \(Op.name): \(error)")
        }
        guard Op.streams else {
            return try Self.decode(
                Op.Output.self, from: try await exchange(path: Wire.opsPrefix + Op.name, headers: headers, body: body),
                name: Op.name)
        }
        let url = baseURL + Wire.opsPrefix + Op.name
        var request = HTTPClientRequest(url: url)
        request.method = .POST
        request.headers = headers
        request.headers.add(name: "Accept", value: Wire.jsonLines)
        request.body = .bytes(body)
        let response: HTTPClientResponse
        do {
            response = try await client.execute(request, timeout: timeout)
        } catch {
            throw Self.transportError(error, server: baseURL)
        }
        if response.status == .ok {
            return try await Self.readFrames(response, as: Op.Output.self, progress: progress, server: baseURL)
        }
        let answer = try await Self.collect(response, server: baseURL)
        throw Self.error(status: response.status, body: answer)
    }

    /// One request whose whole answer is read before it returns (``KeepAliveClient``): the
    /// answer is gathered on the connection's event loop and the caller resumes once.
    /// Cancelling the calling task closes the connection, which the server sees as a caller gone.
    private func exchange(path: String, headers: HTTPHeaders, body: ByteBuffer) async throws(ConsoleError) -> Data {
        var head = HTTPRequestHead(version: .http1_1, method: .POST, uri: path, headers: headers)
        head.headers.add(name: "Host", value: hostHeader)
        let answer: KeepAliveClient.Answer
        do {
            answer = try await plain.exchange(head: head, body: body, timeout: timeout, maxAnswer: Self.maxAnswer)
        } catch {
            throw Self.transportError(error, server: baseURL)
        }
        let data = Data(answer.body.readableBytesView)
        guard answer.status == .ok else { throw Self.error(status: answer.status, body: data) }
        return data
    }

    /// `GET path` on the kept connections, as one-shot operations travel: the status and the
    /// body. For the benchmark's transport floor (`GET /healthz`), not for operations.
    package func get(_ path: String) async throws(ConsoleError) -> (status: Int, body: Data) {
        var head = HTTPRequestHead(version: .http1_1, method: .GET, uri: path, headers: HTTPHeaders())
        head.headers.add(name: "Host", value: hostHeader)
        do {
            let answer = try await plain.exchange(
                head: head, body: ByteBuffer(), timeout: timeout, maxAnswer: Self.maxAnswer)
            return (Int(answer.status.code), Data(answer.body.readableBytesView))
        } catch {
            throw Self.transportError(error, server: baseURL)
        }
    }

    /// The largest answer read (a `backups list` or `audit export` page is far smaller).
    static let maxAnswer = 64 << 20

    static func decode<Output: Decodable>(_ type: Output.Type, from body: Data, name: String) throws(ConsoleError)
        -> Output
    {
        do {
            return try JSONDecoder().decode(Output.self, from: body)
        } catch {
            throw ConsoleError(
                .remote, code: "bad_server_answer", "The server's answer to \(name) could not be read: \(error).")
        }
    }

    static func collect(_ response: HTTPClientResponse, server: String) async throws(ConsoleError) -> Data {
        do {
            var buffer = try await response.body.collect(upTo: maxAnswer)
            return Data(buffer.readBytes(length: buffer.readableBytes) ?? [])
        } catch {
            throw transportError(error, server: server)
        }
    }

    /// Reads the JSON lines of a streamed job to the end of the body (so the connection can be
    /// reused): progress goes to `progress`, the result or error line is the outcome.
    static func readFrames<Output: Codable & Sendable>(
        _ response: HTTPClientResponse, as: Output.Type, progress: ProgressSink?, server: String
    ) async throws(ConsoleError) -> Output {
        var pending = Data()
        let decoder = JSONDecoder()
        var outcome: Result<Output, ConsoleError>?
        do {
            for try await chunk in response.body {
                pending.append(contentsOf: chunk.readableBytesView)
                while let newline = pending.firstIndex(of: 0x0A) {
                    let line = pending[pending.startIndex..<newline]
                    pending = Data(pending[(newline + 1)...])
                    guard !line.isEmpty, outcome == nil else { continue }
                    let frame = try decoder.decode(Wire.Frame<Output>.self, from: line)
                    if var event = frame.progress {
                        // A server's words reach the terminal: bounded, without control characters.
                        event.detail = event.detail.map { detail in
                            String(
                                String.UnicodeScalarView(
                                    detail.unicodeScalars.filter {
                                        $0.value >= 0x20 && !(0x7F...0x9F).contains($0.value)
                                    }
                                ).prefix(200))
                        }
                        progress?(event)
                    }
                    if let error = frame.error {
                        outcome = .failure(error.consoleError)
                    } else if let result = frame.result {
                        outcome = .success(result)
                    }
                }
            }
        } catch is DecodingError {
            throw ConsoleError(.remote, code: "bad_server_answer", "The server's progress stream could not be read.")
        } catch {
            // A connection dropped after the outcome arrived does not change it.
            guard outcome != nil else { throw transportError(error, server: server) }
        }
        guard let outcome else {
            throw ConsoleError(
                .remote, code: "server_unavailable",
                "The server at \(server) closed the stream before the job finished.")
        }
        return try outcome.get()
    }

    /// The error document of a non-200 answer, or a plain error for anything else (a proxy).
    static func error(status: HTTPResponseStatus, body: Data) -> ConsoleError {
        if let document = try? JSONDecoder().decode(Wire.ErrorDocument.self, from: body) {
            return document.error.consoleError
        }
        switch status.code {
        case 401:
            return ConsoleError(.permissionDenied, code: "invalid_token", "The server refused the operator token.")
        case 403:
            return ConsoleError(.permissionDenied, code: "permission_denied", "The server refused the request.")
        case 429:
            return ConsoleError(.rateLimited, code: "rate_limited", "The server is limiting requests; retry later.")
        default:
            return ConsoleError(.remote, code: "server_error", "The server answered HTTP \(status.code).")
        }
    }

    static func transportError(_ error: any Error, server: String) -> ConsoleError {
        if error is CancellationError || error as? HTTPClientError == .cancelled {
            return ConsoleError(
                .conflict, code: "interrupted", "Interrupted; the server stops the job after its current call.")
        }
        if let tls = tlsFailure(error) {
            // A configuration to fix, not an outage to retry (exit 78): `tls_untrusted` when the
            // console does not trust the certificate or it names another host.
            let untrusted = tls.hasPrefix("its certificate")
            return .configuration(
                untrusted ? "tls_untrusted" : "tls_failed",
                "TLS with the server at \(server) failed: \(tls). Hint: if a private CA signed its certificate, pass "
                    + "--ca-file PEM (or BACKUPCTL_CA_FILE, or the context's CA); the URL's host must be one the "
                    + "certificate names.")
        }
        let text = String(describing: error)
        var timedOut = error as? HTTPClientError == .connectTimeout
        if case .connectTimeout? = error as? ChannelError { timedOut = true }
        let reason =
            text.contains("Connection refused")
            ? "connection refused (is `backupctl serve` running there?)"
            : timedOut ? "the connection timed out" : String(text.prefix(200))
        // A TLS port given as http:// closes at the first plain byte: say what to try.
        let hint =
            server.hasPrefix("http://") && text.contains("closed the connection before answering")
            ? " If it serves HTTPS (--tls-cert), use https://." : ""
        return ConsoleError(
            .remote, code: "server_unavailable", "Cannot reach the server at \(server): \(reason).\(hint)")
    }

    /// What went wrong in TLS, in a few words, or `nil` for any other error. BoringSSL's own
    /// text (an error stack with build paths) is never shown.
    static func tlsFailure(_ error: any Error) -> String? {
        if case .notSent(let inner)? = error as? KeepAliveClient.Failure { return tlsFailure(inner) }
        if let extra = error as? NIOSSLExtraError, extra == .failedToValidateHostname {
            return "its certificate does not name this host"
        }
        if let ssl = error as? NIOSSLError {
            let text = String(describing: ssl)
            if text.contains("CERTIFICATE_VERIFY_FAILED") { return "its certificate is not trusted" }
            if text.contains("WRONG_VERSION_NUMBER") || text.contains("PACKET_LENGTH_TOO_LONG") {
                return "the server does not speak TLS there (is it plain http://?)"
            }
            if text.contains("UNSUPPORTED_PROTOCOL") || text.contains("PROTOCOL_VERSION") {
                return "no TLS version in common (1.2 or newer is required)"
            }
            return "the TLS handshake failed"
        }
        if error is NIOSSLExtraError || error is BoringSSLError { return "the TLS handshake failed" }
        return nil
    }
}
