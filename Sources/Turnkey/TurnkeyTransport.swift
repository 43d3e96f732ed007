/// One HTTP exchange with Turnkey, seen from the client: every call is a `POST` of JSON bytes.
///
/// A protocol so the client can be driven by AsyncHTTPClient in production and tests
/// (``HTTPClientTransport`` against a loopback sandbox), or by the sandbox's in-process handler
/// for sandbox tenants, without the client knowing which.
public protocol TurnkeyTransport: Sendable {
    /// Sends `request` and returns whatever status came back.
    ///
    /// - Throws: ``TurnkeyError`` of kind `.transport` (connection refused, reset, DNS) or
    ///   `.timeout` (no answer within `request.timeoutMillis`). HTTP error statuses are not thrown:
    ///   they are answers, classified by the client.
    func send(_ request: TurnkeyHTTPRequest) async throws(TurnkeyError) -> TurnkeyHTTPResponse
}

/// A `POST` to `baseURL + path` with the exact body bytes the stamp signed.
public struct TurnkeyHTTPRequest: Sendable {
    public var baseURL: String
    public var path: String
    public var body: [UInt8]
    /// The `X-Stamp` header value.
    public var stamp: String
    public var timeoutMillis: Int64

    public init(baseURL: String, path: String, body: [UInt8], stamp: String, timeoutMillis: Int64) {
        self.baseURL = baseURL
        self.path = path
        self.body = body
        self.stamp = stamp
        self.timeoutMillis = timeoutMillis
    }

    /// The absolute URL, without a doubled slash between base and path.
    public var url: String {
        baseURL.hasSuffix("/") ? String(baseURL.dropLast()) + path : baseURL + path
    }
}

/// Status, the one header the client reads (`Retry-After`), and the body.
public struct TurnkeyHTTPResponse: Sendable {
    public var status: Int
    public var retryAfter: String?
    public var body: [UInt8]

    public init(status: Int, retryAfter: String? = nil, body: [UInt8]) {
        self.status = status
        self.retryAfter = retryAfter
        self.body = body
    }

    public var isSuccess: Bool { (200..<300).contains(status) }
}
