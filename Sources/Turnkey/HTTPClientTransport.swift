import AsyncHTTPClient
import BackupModel
import Foundation
import NIOCore
import NIOHTTP1

/// ``TurnkeyTransport`` over AsyncHTTPClient (HTTP/1.1 or 2, TLS by the URL's scheme).
///
/// Uses the shared client by default: it pools connections, so ten thousand `list_suborgs`
/// pages reuse a handful of sockets. Responses are capped at 16 MiB; Turnkey's are small.
public struct HTTPClientTransport: TurnkeyTransport {
    private let client: HTTPClient
    private let maxResponseBytes: Int

    /// The process-wide client: connection pooling as `HTTPClient.shared`, but a connect timeout of
    /// 5 s. AsyncHTTPClient retries connection establishment until the connect timeout, and with
    /// the default that meant a refused or unreachable Turnkey held each attempt for the whole
    /// request deadline.
    public static let sharedClient: HTTPClient = {
        var configuration = HTTPClient.Configuration()
        configuration.timeout.connect = .seconds(5)
        // A tenant's Turnkey URL must not lead the console anywhere else.
        configuration.redirectConfiguration = .disallow
        return HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
    }()

    public init(client: HTTPClient = HTTPClientTransport.sharedClient, maxResponseBytes: Int = 16 << 20) {
        self.client = client
        self.maxResponseBytes = maxResponseBytes
    }

    public func send(_ request: TurnkeyHTTPRequest) async throws(TurnkeyError) -> TurnkeyHTTPResponse {
        var http = HTTPClientRequest(url: request.url)
        http.method = .POST
        http.headers.add(name: "Content-Type", value: "application/json")
        http.headers.add(name: "Accept", value: "application/json")
        http.headers.add(name: "X-Stamp", value: request.stamp)
        http.body = .bytes(ByteBuffer(bytes: request.body))
        let started = ContinuousClock.now
        do {
            let response = try await client.execute(http, timeout: .milliseconds(request.timeoutMillis))
            // The client's deadline ends with the answer's head; the body gets what is left of it,
            // so a peer that stalls mid-answer is a timeout, not a call that never returns.
            let left = Deadline.remaining(request.timeoutMillis, since: started)
            let limit = maxResponseBytes
            guard
                let bytes = try await Deadline.run(
                    millis: left,
                    {
                        var buffer = try await response.body.collect(upTo: limit)
                        return buffer.readBytes(length: buffer.readableBytes) ?? []
                    })
            else {
                throw TurnkeyError(
                    .timeout,
                    message: "the answer from \(request.path) did not finish within \(request.timeoutMillis) ms")
            }
            return TurnkeyHTTPResponse(
                status: Int(response.status.code), retryAfter: response.headers.first(name: "Retry-After"),
                body: bytes)
        } catch let error as TurnkeyError {
            throw error
        } catch let error as HTTPClientError {
            if error == .deadlineExceeded || error == .readTimeout || error == .connectTimeout {
                throw TurnkeyError(
                    .timeout, message: "no answer from \(request.path) within \(request.timeoutMillis) ms")
            }
            throw TurnkeyError(.transport, message: "HTTP client error on \(request.path): \(error)")
        } catch is CancellationError {
            throw TurnkeyError(.cancelled, message: "the call to \(request.path) was cancelled")
        } catch {
            let text = "\(error)"
            if text.contains("Connection refused") {
                throw TurnkeyError(
                    .transport, message: "Turnkey at \(request.url) refused the connection (nothing listens there?)")
            }
            throw TurnkeyError(.transport, message: "connection to Turnkey failed on \(request.path): \(text)")
        }
    }
}
