import Access
import BackupModel
import ConsoleService
import ConsoleStore
import Foundation
import Hummingbird
import Logging
import NIOCore

/// Answers every request of `backupctl serve`: the operations and the health, metrics and
/// OpenAPI routes. Every operation is authenticated from its head alone, before a byte of its
/// body is read, against the store's current access version, so a removed or rotated token is
/// refused on its very next use and nobody without a token can make the server read a body.
final class RequestHandler: Sendable {
    let console: LocalConsole
    let metrics: ServerMetrics
    let limiter: RequestLimiter
    /// The connection guard's registry (its counts feed `/metrics`).
    let connections: ConnectionRegistry?
    let logger: Logger
    /// The operations served, by name (``ConsoleOperations/byName``).
    let operations: [String: any ConsoleOperation.Type]

    /// The largest operation body accepted.
    static let maxBody = 1 << 20
    static let tenantField = HTTPFields.Element.Name(Wire.tenantHeader)

    init(
        console: LocalConsole, metrics: ServerMetrics, limiter: RequestLimiter, connections: ConnectionRegistry? = nil,
        logger: Logger, operations: [String: any ConsoleOperation.Type]
    ) {
        self.connections = connections
        self.operations = operations
        self.console = console
        self.metrics = metrics
        self.limiter = limiter
        self.logger = logger
    }

    func respond(_ request: Request, context: ServerRequestContext) async -> Response {
        let started = ContinuousClock.now
        let path = request.uri.path
        if path.hasPrefix(Wire.opsPrefix) {
            let name = String(path.dropFirst(Wire.opsPrefix.count))
            guard let type = operations[name] else {
                return record(
                    "unknown", started,
                    Self.error(
                        ConsoleError(
                            .notFound, code: "unknown_operation",
                            "This server has no operation \(name.prefix(64)); it may be older than the console.")))
            }
            guard request.method == .post else {
                return record(name, started, Self.error(.usage("\(Wire.opsPrefix)\(name) takes POST."), status: 405))
            }
            switch await authenticate(request, context: context) {
            case .refused(let response):
                return record(name, started, response)
            case .caller(let caller, let operatorName):
                return await dispatch(type, request: request, caller: caller, as: operatorName, started: started)
            }
        }
        guard request.method == .get || request.method == .head else {
            return record("unknown", started, Self.error(.usage("\(path.prefix(64)) takes GET."), status: 405))
        }
        switch path {
        case "/healthz":
            return record("healthz", started, Self.json(200, Data(#"{"status":"ok"}"#.utf8)))
        case "/readyz":
            return await record("readyz", started, readiness())
        case "/metrics":
            _ = await readiness()
            if let counts = connections?.snapshot { metrics.connections(open: counts.open, closed: counts.closed) }
            var headers = HTTPFields()
            headers[.contentType] = "text/plain; version=0.0.4; charset=utf-8"
            return Response(
                status: .ok, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(string: metrics.exposition())))
        case "/openapi.json":
            return record("openapi", started, Self.json(200, Data(OpenAPIDocument.json.utf8)))
        default:
            return record("unknown", started, Self.error(.notFound("No route \(path.prefix(64)).")))
        }
    }

    /// Takes the audit head as the baseline of the audit-appends counter (at start).
    func primeMetrics() async { _ = await readiness() }

    /// Ready when the store opens and answers a query (the newest audit entry, which also
    /// feeds the audit-appends counter).
    private func readiness() async -> Response {
        do {
            let head = try await console.store().latestAuditEntries(tenant: nil, limit: 1).last?.seq ?? 0
            metrics.auditHead(head)
            return Self.json(200, Data(#"{"status":"ready"}"#.utf8))
        } catch {
            return Self.error(error, status: 503)
        }
    }

    private func record(_ op: String, _ started: ContinuousClock.Instant, _ response: Response) -> Response {
        metrics.request(op: op, status: response.status.code, nanoseconds: Self.nanoseconds(since: started))
        return response
    }

    static func nanoseconds(since started: ContinuousClock.Instant) -> Int64 {
        let elapsed = ContinuousClock.now - started
        return elapsed.components.seconds * 1_000_000_000 + elapsed.components.attoseconds / 1_000_000_000
    }

    // MARK: Authentication

    enum Authentication {
        case caller(Caller, operatorName: String)
        case refused(Response)
    }

    /// The caller behind `Authorization: Bearer …`, from the request head alone. A valid token
    /// is never refused for anybody else's failures, only for its own operator's request rate
    /// or refusals (``RequestLimiter/operatorRequest(_:now:)``). A missing or unknown token is
    /// answered 401 and audited while its credential, its address and the server have failures
    /// left, and 429 with `Retry-After` (audited once a window) once one has run out.
    func authenticate(_ request: Request, context: ServerRequestContext) async -> Authentication {
        let address = context.clientAddress
        let tenant = Self.tenantField.flatMap { request.headers[$0] }
        var credential: String?
        do throws(ConsoleError) {
            var token: SecretBytes?
            if let header = request.headers[.authorization] {
                credential = OperatorToken.hash(SecretBytes(Array(header.utf8)))
                guard header.hasPrefix("Bearer ") else {
                    throw ConsoleError(
                        .permissionDenied, code: "invalid_token", "The Authorization header must be `Bearer TOKEN`.")
                }
                token = try OperatorToken.parse(Array(header.utf8.dropFirst(7)))
            }
            let caller = Caller(token: token, tenant: tenant, address: address)
            let record = try await console.authenticate(caller)
            let name = record.name.rawValue
            if let refusal = limiter.operatorRequest(name, now: console.clock.millis()) {
                return await .refused(limited(refusal, operatorName: name, address: address))
            }
            return .caller(caller, operatorName: name)
        } catch {
            guard error.code == "missing_token" || error.code == "invalid_token" else {
                return .refused(Self.error(error))
            }
            return await .refused(failedSignIn(error, credential: credential, address: address))
        }
    }

    /// The answer to a request whose credentials failed.
    private func failedSignIn(_ error: ConsoleError, credential: String?, address: String) async -> Response {
        let now = console.clock.millis()
        if let refusal = limiter.signInFailure(credential: credential, address: address, now: now) {
            return await limited(refusal, operatorName: nil, address: address)
        }
        metrics.failedAuthentication(reason: error.code)
        await auditFailure(address: address, code: error.code, operatorName: nil, scope: nil)
        logger.notice("refused a request without a valid operator token", metadata: ["address": "\(address)"])
        return Self.error(error)
    }

    /// 429 with `Retry-After`; audited once per key and window.
    private func limited(_ refusal: RequestLimiter.Refusal, operatorName: String?, address: String) async -> Response {
        metrics.failedAuthentication(reason: "rate_limited")
        if limiter.shouldAudit(refusal, now: console.clock.millis()) {
            await auditFailure(address: address, code: "rate_limited", operatorName: operatorName, scope: refusal.scope)
        }
        let seconds = refusal.retryAfterSeconds
        let message =
            switch refusal.scope {
            case "operator_rate": "Too many requests from this operator; retry in \(seconds) s."
            case "operator_denials":
                "Too many refused requests from this operator (each is audited); retry in \(seconds) s."
            default: "Too many failed sign-ins; retry in \(seconds) s. A valid token is not limited."
            }
        var response = Self.error(ConsoleError(.rateLimited, code: "rate_limited", message))
        response.headers[.retryAfter] = String(seconds)
        return response
    }

    /// An `auth.failed` entry (or, for an operator over its limits, `rate.limited`): the
    /// address and why, never what was presented.
    private func auditFailure(address: String, code: String, operatorName: String?, scope: String?) async {
        var details = ["address": address, "code": code, "outcome": "failure"]
        if let scope { details["scope"] = scope }
        let draft = AuditDraft(
            operatorName: operatorName ?? "-", tenant: nil,
            action: operatorName == nil ? "auth.failed" : "rate.limited",
            target: address, details: details)
        do {
            try await console.store().appendAudit(draft)
        } catch {
            logger.error(
                "could not audit a refused request", metadata: ["address": "\(address)", "code": "\(error.code)"])
        }
    }

    /// Counts a refusal of an authenticated operator against its refusal budget.
    private func noteRefusal(_ error: ConsoleError, operatorName: String) {
        guard error.kind == .permissionDenied, error.code == "permission_denied" else { return }
        limiter.operatorDenied(operatorName, now: console.clock.millis())
    }

    // MARK: Operations

    func dispatch<Op: ConsoleOperation>(
        _ type: Op.Type, request: Request, caller: Caller, as operatorName: String, started: ContinuousClock.Instant
    ) async -> Response {
        if Op.streams {
            return stream(Op.self, request: request, caller: caller, as: operatorName, started: started)
        }
        var request = request
        let operation: Op
        do {
            operation = try Self.decode(Op.self, from: try await request.collectBody(upTo: Self.maxBody))
        } catch {
            return record(Op.name, started, Self.error(Self.unreadable(Op.name)))
        }
        do {
            let output = try await Self.perform(operation, on: console, as: caller)
            return record(Op.name, started, Self.json(200, try Self.encode(output)))
        } catch {
            noteRefusal(error, operatorName: operatorName)
            return record(Op.name, started, Self.error(error))
        }
    }

    /// Runs a quick operation where the request is (with ``ConsoleServer/runTasksOnEventLoops()``,
    /// its connection's event loop), and any other on ``ConsoleServer/blockingExecutor``.
    static func perform<Op: ConsoleOperation>(
        _ operation: Op, on console: LocalConsole, as caller: Caller
    ) async throws(ConsoleError) -> Op.Output {
        if Op.isQuick { return try await console.perform(operation, as: caller, progress: nil) }
        return try await withTaskExecutorPreference(ConsoleServer.blockingExecutor) { () async throws(ConsoleError) in
            try await console.perform(operation, as: caller, progress: nil)
        }
    }

    /// A long job: JSON lines as it runs (`{"progress":…}`), then `{"result":…}` or
    /// `{"error":…}`. A client that goes away cancels the job, which stops after the call it is in.
    func stream<Op: ConsoleOperation>(
        _ type: Op.Type, request: Request, caller: Caller, as operatorName: String, started: ContinuousClock.Instant
    ) -> Response {
        let noteRefusal = { @Sendable (error: ConsoleError) in self.noteRefusal(error, operatorName: operatorName) }
        let console = console
        let metrics = metrics
        let logger = logger
        let isCleanupRun = ServerMetrics.isCleanupRun(Op.name)
        var headers = HTTPFields()
        headers[.contentType] = Wire.jsonLines
        return Response(
            status: .ok, headers: headers,
            body: ResponseBody { writer in
                // The status of the job's outcome (the HTTP status is 200 once the stream began).
                var outcome = 200
                // Whether the result or error line was written (a client may close right after it).
                var delivered = false
                do {
                    try await request.body.consumeWithCancellationOnInboundClose { body in
                        let operation: Op
                        do {
                            operation = try Self.decode(Op.self, from: try await body.collect(upTo: Self.maxBody))
                        } catch {
                            let failure = Self.unreadable(Op.name)
                            outcome = Wire.status(for: failure.kind, code: failure.code)
                            try await writer.write(try Self.line(Wire.Frame<Op.Output>(error: .init(failure))))
                            delivered = true
                            return
                        }
                        let (frames, continuation) = AsyncStream<Wire.Frame<Op.Output>>.makeStream()
                        try await withThrowingTaskGroup(of: Void.self) { group in
                            group.addTask(executorPreference: ConsoleServer.blockingExecutor) {
                                do throws(ConsoleError) {
                                    let output = try await console.perform(operation, as: caller) { event in
                                        if isCleanupRun {
                                            metrics.cleanupProgress(done: event.done, total: event.total)
                                        }
                                        continuation.yield(Wire.Frame(progress: event))
                                    }
                                    continuation.yield(Wire.Frame(result: output))
                                } catch {
                                    noteRefusal(error)
                                    continuation.yield(Wire.Frame(error: .init(error)))
                                }
                                continuation.finish()
                            }
                            for await frame in frames {
                                if let error = frame.error {
                                    outcome = Wire.status(
                                        for: ConsoleError.Kind(rawValue: error.kind) ?? .internalError, code: error.code
                                    )
                                }
                                try await writer.write(try Self.line(frame))
                                if frame.progress == nil { delivered = true }
                            }
                            try await group.waitForAll()
                        }
                    }
                    try await writer.finish(nil)
                } catch  where !delivered {
                    // The client went away (or the server was cancelled): the job was cancelled with it.
                    outcome = 499
                    logger.info("client left during a job; it was stopped", metadata: ["op": "\(Op.name)"])
                } catch {
                    // The outcome was written; the client closed before the end of the body.
                }
                metrics.request(op: Op.name, status: outcome, nanoseconds: Self.nanoseconds(since: started))
            })
    }

    // MARK: Encoding

    static func unreadable(_ name: String) -> ConsoleError {
        ConsoleError(.usage, code: "invalid_request", "The body of \(name) is not a valid \(name) operation.")
    }

    static func decode<Op: Decodable>(_ type: Op.Type, from buffer: ByteBuffer) throws -> Op {
        try JSONDecoder().decode(Op.self, from: Data(buffer.readableBytesView))
    }

    static func encode(_ value: some Encodable) throws(ConsoleError) -> Data {
        do {
            return try Wire.encoder().encode(value)
        } catch {
            throw .internalError("Could not encode the answer: \(error)")
        }
    }

    static func line(_ value: some Encodable) throws(ConsoleError) -> ByteBuffer {
        var data = try encode(value)
        data.append(0x0A)
        return ByteBuffer(bytes: data)
    }

    static func json(_ status: Int, _ body: Data) -> Response {
        var headers = HTTPFields()
        headers[.contentType] = "application/json"
        return Response(
            status: .init(code: status), headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(bytes: body)))
    }

    /// `{"error": {code, kind, message}}` with the status of its kind (or `status`).
    static func error(_ error: ConsoleError, status: Int? = nil) -> Response {
        let body = (try? encode(Wire.ErrorDocument(error))) ?? Data(#"{"error":{"code":"internal_error"}}"#.utf8)
        return json(status ?? Wire.status(for: error.kind, code: error.code), body)
    }
}
