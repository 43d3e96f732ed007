import Access
import BackupModel
import ConsoleService
import ConsoleStore
import Foundation
import Hummingbird
import Logging
import NIOCore

/// Answers every request of `backupctl serve`: the operations and the health, metrics and
/// OpenAPI routes. Authentication is checked on every request against the store (never
/// cached), so a removed or rotated token is refused on its very next use.
final class RequestHandler: Sendable {
    let console: LocalConsole
    let metrics: ServerMetrics
    let limiter: AuthLimiter
    let logger: Logger
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
        console: LocalConsole, metrics: ServerMetrics, limiter: AuthLimiter, logger: Logger,
        operations: [String: any ConsoleOperation.Type]
    ) {
        self.operations = operations
        self.console = console
        self.metrics = metrics
        self.limiter = limiter
        self.logger = logger
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
            await route(request, context: context, logger: logger)
        }
        HTTPAnswer.finish(&response, requestId: requestId, retryAfterSeconds: limiter.windowMillis / 1000)
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
                            "This server has no operation \(name.prefix(64)); it may be older than the console.")))
            }
            guard request.method == .post else {
                return record(name, started, HTTPAnswer.wrongMethod(path[...], allow: "POST"))
            }
            switch await authenticate(request, context: context, verify: type.streams) {
            case .refused(let response):
                return record(name, started, response)
            case .caller(let caller):
                return await dispatch(type, request: request, caller: caller, started: started, logger: logger)
            }
        }
        guard request.method == .get || request.method == .head else {
            return record("unknown", started, HTTPAnswer.wrongMethod(path[...], allow: "GET, HEAD"))
        }
        switch path {
        case "/healthz":
            return record("healthz", started, HTTPAnswer.json(200, Data(#"{"status":"ok"}"#.utf8)))
        case "/readyz":
            return await record("readyz", started, readiness())
        case "/metrics":
            _ = await readiness()
            return HTTPAnswer.json(
                200, Data(metrics.exposition().utf8), contentType: "text/plain; version=0.0.4; charset=utf-8")
        case "/openapi.json":
            return record("openapi", started, HTTPAnswer.json(200, document.json))
        default:
            return record("unknown", started, HTTPAnswer.error(.notFound("No route \(path.prefix(64)).")))
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
            return HTTPAnswer.json(200, Data(#"{"status":"ready"}"#.utf8))
        } catch {
            return HTTPAnswer.error(error, status: 503)
        }
    }

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
        case caller(Caller)
        case refused(Response)
    }

    /// The caller behind `Authorization: Bearer …`. Failures count against the client's
    /// address; once it has used them up it is refused (429) without its token being looked at.
    /// With `verify` (long jobs, whose status line goes out before they run) the token is checked
    /// against the store here; other operations check it as their first step
    /// (``refusedCredentials(_:address:)`` then does the bookkeeping), saving a read per request.
    func authenticate(_ request: Request, context: ServerRequestContext, verify: Bool) async -> Authentication {
        let address = context.clientAddress
        // No token, or nothing shaped like one: 401 at once. Nothing is guessed that way, so it
        // neither spends the address's failures nor writes an audit entry (a flood of them
        // would); the sign-in limiter counts only well-formed tokens the store does not know.
        let token: SecretBytes
        do throws(ConsoleError) {
            guard let header = request.headers[.authorization] else {
                throw ConsoleError(
                    .permissionDenied, code: "missing_token",
                    "No operator token: send `Authorization: Bearer TOKEN` (BACKUPCTL_TOKEN or --token-file).")
            }
            guard header.hasPrefix("Bearer ") else {
                throw ConsoleError(
                    .permissionDenied, code: "invalid_token", "The Authorization header must be `Bearer TOKEN`.")
            }
            token = try OperatorToken.parse(Array(header.utf8.dropFirst(7)))
        } catch {
            metrics.failedAuthentication(reason: error.code)
            return .refused(HTTPAnswer.error(error))
        }
        let now = console.clock.millis()
        if limiter.isLimited(address, now: now) {
            metrics.failedAuthentication(reason: "rate_limited")
            if limiter.shouldAuditRefusal(address, now: now) {
                await auditFailure(address: address, code: "rate_limited")
            }
            return .refused(
                HTTPAnswer.error(
                    ConsoleError(
                        .permissionDenied, code: "rate_limited",
                        "Too many failed sign-ins from this address; wait a minute and retry."), status: 429))
        }
        let tenant = Self.tenantField.flatMap { request.headers[$0] }
        let caller = Caller(token: token, tenant: tenant, address: address)
        if verify {
            do throws(ConsoleError) {
                _ = try await console.authenticate(caller)
            } catch {
                return await .refused(refusedCredentials(error, address: address))
            }
        }
        return .caller(caller)
    }

    /// The answer to a request whose credentials failed; a missing or unknown token counts
    /// against the address and is audited.
    func refusedCredentials(_ error: ConsoleError, address: String) async -> Response {
        guard error.code == "missing_token" || error.code == "invalid_token" else { return HTTPAnswer.refusal(error) }
        limiter.recordFailure(address, now: console.clock.millis())
        metrics.failedAuthentication(reason: error.code)
        await auditFailure(address: address, code: error.code)
        logger.notice("refused a request without a valid operator token", metadata: ["address": "\(address)"])
        return HTTPAnswer.error(error)
    }

    /// An `auth.failed` entry: the address and why, never what was presented.
    private func auditFailure(address: String, code: String) async {
        let draft = AuditDraft(
            operatorName: "-", tenant: nil, action: "auth.failed", target: address,
            details: ["address": address, "code": code, "outcome": "failure"])
        do {
            try await console.store().appendAudit(draft)
        } catch {
            logger.error(
                "could not audit a failed sign-in", metadata: ["address": "\(address)", "code": "\(error.code)"])
        }
    }
}
