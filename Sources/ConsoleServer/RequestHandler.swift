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
    /// The connection guard's registry (its counts feed `/metrics`; an operator's connection is trusted).
    let connections: ConnectionRegistry?
    let logger: Logger
    /// What `/readyz` answers, checked off the request path (``ReadinessService``).
    let readiness: Readiness
    /// The operations served, by name (``ConsoleOperations/byName``).
    let operations: [String: any ConsoleOperation.Type]

    /// The OpenAPI document, read from the operations' types at start; its request schemas
    /// check every body before it is decoded.
    let document: OpenAPIDocument
    /// Whether every output is checked against its schema before it is sent (an answer off the
    /// document becomes a 500 naming what is wrong): `BACKUPCTL_CHECK_ANSWERS=1`, which the
    /// command tests set on every server they start.
    let checksAnswers: Bool

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
        readiness = Readiness(console: console, metrics: metrics, logger: logger)
        document = OpenAPIDocument(operations: Array(operations.values))
        checksAnswers = ProcessInfo.processInfo.environment["BACKUPCTL_CHECK_ANSWERS"] == "1"
    }

    /// Answers one request: routes it, then adds the headers every answer carries
    /// (``HTTPAnswer/finish(_:requestId:retryAfterSeconds:)``) and logs it under its request id.
    func respond(_ request: Request, context: ServerRequestContext) async -> Response {
        let requestId = HTTPAnswer.requestId(HTTPAnswer.requestIdField.flatMap { request.headers[$0] })
        var logger = logger
        logger[metadataKey: "request"] = "\(requestId)"
        var response = await ServedRequest.$id.withValue(requestId) {
            await LocalConsole.pinningAccessVersion { await route(request, context: context, logger: logger) }
        }
        HTTPAnswer.finish(&response, requestId: requestId, retryAfterSeconds: limiter.limits.windowMillis / 1000)
        let status = response.status.code
        let level: Logger.Level = status >= 500 ? .error : status >= 400 ? .notice : .info
        logger.log(
            level: level, "answered",
            metadata: [
                "path": "\(request.uri.path.prefix(80))", "status": "\(status)", "address": "\(context.clientAddress)",
            ])
        return response
    }

    private func route(_ request: Request, context: ServerRequestContext, logger: Logger) async -> Response {
        let started = ContinuousClock.now
        let path = request.uri.path
        if path.hasPrefix(Wire.opsPrefix) {
            let name = String(path.dropFirst(Wire.opsPrefix.count))
            guard let type = operations[name] else {
                return record(
                    "unknown", started,
                    HTTPAnswer.error(
                        ConsoleError(
                            .notFound, code: "unknown_operation",
                            "This server has no operation \(SecretShape.excerpt(name, limit: 64)); it may be older than the console."
                        )))
            }
            guard request.method == .post else {
                return record(name, started, HTTPAnswer.wrongMethod(path[...], allow: "POST"))
            }
            switch await authenticate(request, context: context, logger: logger) {
            case .refused(let response):
                return record(name, started, response)
            case .caller(let caller, let operatorName):
                return await dispatch(
                    type, request: request, caller: caller, as: operatorName, started: started, logger: logger)
            }
        }
        // A path that exists with another method is 405; one that does not exist is 404 whatever the method.
        guard request.method == .get || request.method == .head || !Self.plainPaths.contains(path) else {
            return record("unknown", started, HTTPAnswer.wrongMethod(path[...], allow: "GET, HEAD"))
        }
        switch path {
        case "/healthz":
            return record("healthz", started, HTTPAnswer.json(200, Data(#"{"status":"ok"}"#.utf8)))
        case "/readyz":
            return record("readyz", started, readiness.response)
        case "/metrics":
            return metricsAnswer()
        case "/openapi.json":
            return record("openapi", started, HTTPAnswer.json(200, document.json))
        default:
            return record(
                "unknown", started, HTTPAnswer.error(.notFound("No route \(SecretShape.excerpt(path, limit: 64)).")))
        }
    }

    /// The routes served on GET and HEAD.
    static let plainPaths: Set<String> = ["/healthz", "/readyz", "/metrics", "/openapi.json"]

    /// Checks readiness once (and takes the audit head as the baseline of the audit-appends
    /// counter) before the server listens.
    func primeMetrics() async { await readiness.check() }

    func record(_ op: String, _ started: ContinuousClock.Instant, _ response: Response) -> Response {
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

    /// The caller behind `Authorization: Bearer …`, from the request head alone.
    ///
    /// No token, or nothing shaped like one, is 401 at once: nothing can be guessed that way, so
    /// it neither spends failures nor writes an audit entry (a flood of them would). A
    /// well-formed token the store does not know is 401 and audited while its credential, its
    /// address and the server have failures left, and 429 with `Retry-After` (audited once a
    /// window) once one has run out. A valid token is never refused for anybody else's
    /// failures, only for its own operator's request rate or refusals
    /// (``RequestLimiter/operatorRequest(_:now:)``).
    func authenticate(_ request: Request, context: ServerRequestContext, logger: Logger) async -> Authentication {
        let address = context.clientAddress
        let token: SecretBytes
        do throws(ConsoleError) {
            guard let header = request.headers[.authorization] else {
                throw ConsoleError(
                    .permissionDenied, code: "missing_token",
                    "No operator token: send `Authorization: Bearer TOKEN` (BACKUPCTL_TOKEN or --token-file).")
            }
            // The scheme is case-insensitive (RFC 9110 §11.1): `bearer TOKEN` is the same.
            guard header.utf8.count > 7, HTTPAnswer.asciiCaseInsensitive(header.utf8.prefix(7), equals: "bearer ")
            else {
                throw ConsoleError(
                    .permissionDenied, code: "invalid_token", "The Authorization header must be `Bearer TOKEN`.")
            }
            token = try OperatorToken.parse(header.utf8.dropFirst(7))
        } catch {
            metrics.failedAuthentication(reason: error.code)
            return .refused(HTTPAnswer.error(error))
        }
        let tenant = Self.tenantField.flatMap { request.headers[$0] }
        let caller = Caller(token: token, tenant: tenant, address: address)
        do throws(ConsoleError) {
            let record = try await console.authenticate(caller)
            let name = record.name.rawValue
            if let refusal = limiter.operatorRequest(name, now: console.clock.millis()) {
                return await .refused(limited(refusal, operatorName: name, address: address))
            }
            // An operator's connection: its requests are no longer evicted to make room.
            connections?.trust(channel: context.channelID)
            return .caller(caller, operatorName: name)
        } catch {
            guard error.code == "missing_token" || error.code == "invalid_token" else {
                return .refused(Self.refusal(error, logger: logger))
            }
            // The failure's credential (what its per-credential limit counts), hashed only now.
            let credential = OperatorToken.hash(
                SecretBytes(Array((request.headers[.authorization] ?? "").utf8)))
            return await .refused(failedSignIn(error, credential: credential, address: address))
        }
    }

    /// The answer to a well-formed token that failed: counted, audited, or refused with 429.
    private func failedSignIn(_ error: ConsoleError, credential: String, address: String) async -> Response {
        let now = console.clock.millis()
        if let refusal = limiter.signInFailure(credential: credential, address: address, now: now) {
            return await limited(refusal, operatorName: nil, address: address)
        }
        metrics.failedAuthentication(reason: error.code)
        await auditFailure(address: address, code: error.code, operatorName: nil, scope: nil)
        logger.notice("refused a request without a valid operator token", metadata: ["address": "\(address)"])
        return HTTPAnswer.error(error)
    }

    /// 429 with `Retry-After`; audited once per key and window.
    private func limited(_ refusal: RequestLimiter.Refusal, operatorName: String?, address: String) async -> Response {
        if operatorName == nil {
            metrics.failedAuthentication(reason: "rate_limited")
        } else {
            metrics.limitedOperator(scope: refusal.scope)
        }
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
        var response = HTTPAnswer.error(ConsoleError(.rateLimited, code: "rate_limited", message))
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

    /// The answer to an authenticated operator's refused operation (its real status); a role
    /// refusal counts against the operator's refusal budget.
    func refused(_ error: ConsoleError, operatorName: String, logger: Logger) -> Response {
        if error.kind == .permissionDenied, error.code == "permission_denied" {
            limiter.operatorDenied(operatorName, now: console.clock.millis())
        }
        return Self.refusal(error, logger: logger)
    }

    /// ``HTTPAnswer/refusal(_:)``, and an answer of 500 or more also logged with its code and
    /// sentence (what the client was told, never a secret): the "answered" line alone gives an
    /// operator only its status.
    static func refusal(_ error: ConsoleError, logger: Logger) -> Response {
        let response = HTTPAnswer.refusal(error)
        if response.status.code >= 500 {
            logger.error(
                "failed", metadata: ["code": "\(error.code)", "reason": "\(error.message.prefix(400))"])
        }
        return response
    }
}
