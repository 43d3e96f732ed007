import BackupModel
import ConsoleService
import Foundation
import Hummingbird
import Logging
import NIOCore
import NIOPosix
import ServiceLifecycle
import Synchronization

/// What `/readyz` and `/metrics` report, kept current off the request path: a probe reads the
/// last check and never waits for the store (a load balancer's probe must not time out behind
/// a busy console). ``ReadinessService`` checks every ``interval``.
///
/// Ready means the store answers a query (its newest audit entry, which also feeds the
/// audit-appends counter) and, with `--audit-key`, the signer's last attempt succeeded: a server
/// that cannot sign its checkpoints is taking requests whose entries nothing anchors.
final class Readiness: Sendable {
    static let interval: Duration = .milliseconds(500)
    /// A store that has not answered a check within this is not ready: a database that stopped
    /// answering (a stalled network, a server that accepts and says nothing) must turn the probe
    /// 503 while it lasts, not leave the last "ready" in place.
    static let deadline: Duration = .seconds(2)

    private struct State: Sendable {
        var failure: ConsoleError?
        var checked = false
        /// A check's store query that has not returned yet (it is never started twice).
        var querying = false
    }

    private let state = Mutex(State())
    let console: LocalConsole
    let metrics: ServerMetrics
    let logger: Logger

    init(console: LocalConsole, metrics: ServerMetrics, logger: Logger) {
        self.console = console
        self.metrics = metrics
        self.logger = logger
    }

    /// Checks the store and the signer now, waiting at most ``deadline`` for the store; logs
    /// when readiness changes.
    func check(deadline: Duration = Readiness.deadline) async {
        var failure: ConsoleError?
        switch await headWithin(deadline) {
        case .some(.success(let head)):
            metrics.auditHead(head)
            if let signing = console.auditSigningError {
                failure = ConsoleError(
                    .internalError, code: "audit_signing_failed",
                    "The audit signer cannot sign checkpoints: \(signing.message)")
            }
        case .some(.failure(let error)):
            failure = error
        case .none:
            failure = ConsoleError(
                .remote, code: "store_timeout",
                "The console store did not answer a one-row read within \(deadline) (a database that stopped answering)."
            )
        }
        let (was, checked) = state.withLock { state in
            defer {
                state.failure = failure
                state.checked = true
            }
            return (state.failure, state.checked)
        }
        if let failure, !checked || was?.code != failure.code || was?.message != failure.message {
            logger.error("not ready", metadata: ["code": "\(failure.code)", "reason": "\(failure.message)"])
        } else if failure == nil, checked, was != nil {
            logger.notice("ready again")
        }
    }

    /// The newest audit entry's seq, or `nil` when the store did not answer within `deadline`
    /// (the query goes on in its own task, and no other starts until it returns).
    private func headWithin(_ deadline: Duration) async -> Result<Int64, ConsoleError>? {
        let start = state.withLock { state -> Bool in
            defer { state.querying = true }
            return !state.querying
        }
        guard start else { return nil }
        let first = FirstAnswer<Result<Int64, ConsoleError>>()
        Task { [self] in
            let result: Result<Int64, ConsoleError>
            do throws(ConsoleError) {
                result = .success(try await console.store().latestAuditEntries(tenant: nil, limit: 1).last?.seq ?? 0)
            } catch {
                result = .failure(error)
            }
            state.withLock { $0.querying = false }
            first.answer(result)
        }
        Task {
            try? await Task.sleep(for: deadline)
            first.answer(nil)
        }
        return await first.value()
    }

    /// The code of the last check's failure (`nil`: ready, or not checked yet).
    var failureCode: String? { state.withLock { $0.failure?.code } }

    /// The answer of `/readyz`: 200 `{"status":"ready"}`, or 503 with the failure's code, a
    /// `Retry-After` of the next check, and a message that points to the server's log: the probe
    /// needs no token, so what failed in detail (a path on the server's disk, a database error)
    /// is logged, not answered.
    var response: Response {
        let (failure, checked) = state.withLock { ($0.failure, $0.checked) }
        let unready: ConsoleError
        if let failure {
            unready = ConsoleError(
                .internalError, code: failure.code,
                failure.code == "audit_signing_failed"
                    ? "The audit signer cannot sign checkpoints; the server's log says why."
                    : "The console store did not answer its last check; the server's log says why.")
        } else if !checked {
            unready = ConsoleError(.internalError, code: "not_checked", "The store has not been checked yet.")
        } else {
            return HTTPAnswer.json(200, Data(#"{"status":"ready"}"#.utf8))
        }
        var response = HTTPAnswer.error(unready, status: 503)
        response.headers[.retryAfter] = "1"
        return response
    }
}

/// Checks readiness every ``Readiness/interval`` until the server stops.
struct ReadinessService: Service {
    let readiness: Readiness

    func run() async throws {
        let readiness = readiness
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                await readiness.check()
                do { try await Task.sleep(for: Readiness.interval) } catch { return }
            }
        }
    }
}

/// `serve --probe-listen HOST:PORT`: `/healthz`, `/readyz` and `/metrics` on a listener of their
/// own, with an event loop thread of its own, so a probe never queues behind the API's
/// connections or its request tasks. It answers nothing else (404), carries no tokens and no
/// tenant data, and so is plain HTTP on any address (a pod's probes reach its IP).
struct ProbeListener: Service {
    let address: ListenAddress
    let handler: RequestHandler
    let logger: Logger
    let bound: BoundURL

    /// One thread for the probes alone: their sockets and, through ``executor``, their tasks.
    static let loops = MultiThreadedEventLoopGroup(numberOfThreads: 1)
    static let executor = EventLoopTaskExecutor(loops.next())

    #if os(Linux)
        /// The probe thread's kernel id (``WorkPriority`` keeps the other threads below it).
        static func threadID() async -> Int32? {
            try? await loops.next().submit { WorkPriority.currentThreadID() }.get()
        }
    #endif

    func run() async throws {
        #if os(Linux)
            // As `top -H` and /proc/PID/task/TID/comm show it.
            _ = try? await Self.loops.next().submit { WorkPriority.nameCurrentThread(WorkPriority.probeThreadName) }
                .get()
        #endif
        let handler = handler
        let host = address.urlHost
        let port = address.port
        let bound = bound
        let responder = CallbackResponder<BasicRequestContext> { request, _ in
            await handler.probe(request)
        }
        let app = Application(
            responder: responder,
            configuration: .init(address: .hostname(address.host, port: address.port), serverName: "backupctl-probes"),
            onServerRunning: { channel in bound.set("http://\(host):\(channel.localAddress?.port ?? port)") },
            eventLoopGroupProvider: .shared(Self.loops), logger: logger)
        do {
            // Without the preference each probe's task would run on the global executor (the
            // API's event loops once `serve` installs them) and queue behind the API's work.
            // `run()`, the service itself, stops when the server's group shuts down; `runService()`
            // would run a group of its own that took SIGTERM itself and ended first, and the
            // server's group then failed the stop ("a service has finished unexpectedly").
            try await withTaskExecutorPreference(Self.executor) { try await app.run() }
        } catch {
            bound.set(nil)
            throw error
        }
        bound.set(nil)
    }
}

/// A listener's URL once it is bound (`nil` when it stopped first), for whoever waits on it.
final class BoundURL: Sendable {
    private struct State: Sendable {
        var url: String??
        var waiters: [CheckedContinuation<String?, Never>] = []
    }

    private let state = Mutex(State())

    func set(_ url: String?) {
        let waiters = state.withLock { state -> [CheckedContinuation<String?, Never>] in
            guard state.url == nil else { return [] }
            state.url = .some(url)
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume(returning: url) }
    }

    func wait() async -> String? {
        await withCheckedContinuation { (waiter: CheckedContinuation<String?, Never>) in
            let known = state.withLock { state -> String?? in
                if let url = state.url { return .some(url) }
                state.waiters.append(waiter)
                return nil
            }
            if let known { waiter.resume(returning: known) }
        }
    }
}

extension RequestHandler {
    /// A probe's answer on ``ProbeListener``: the same routes and bodies as the API listener's.
    func probe(_ request: Request) async -> Response {
        // A path it does not serve is 404 whatever the method (a console pointed at the probe
        // port by mistake is told so), as on the API's listener.
        guard ["/healthz", "/readyz", "/metrics"].contains(request.uri.path) else {
            return HTTPAnswer.error(.notFound("The probe listener answers /healthz, /readyz and /metrics only."))
        }
        guard request.method == .get || request.method == .head else {
            return HTTPAnswer.wrongMethod(request.uri.path[...], allow: "GET, HEAD")
        }
        let started = ContinuousClock.now
        switch request.uri.path {
        case "/healthz": return record("healthz", started, HTTPAnswer.json(200, Data(#"{"status":"ok"}"#.utf8)))
        case "/readyz": return record("readyz", started, readiness.response)
        case "/metrics": return metricsAnswer()
        default:
            return HTTPAnswer.error(.notFound("The probe listener answers /healthz, /readyz and /metrics only."))
        }
    }

    func metricsAnswer() -> Response {
        if let counts = connections?.snapshot { metrics.connections(open: counts.open, closed: counts.closed) }
        if let bytes = console.sqliteWALBytes { metrics.sqliteWAL(bytes: bytes) }
        return HTTPAnswer.json(
            200, Data(metrics.exposition().utf8), contentType: "text/plain; version=0.0.4; charset=utf-8")
    }
}

/// The first of several answers, to whoever waits for it; later ones are dropped.
final class FirstAnswer<Value: Sendable>: Sendable {
    private struct State: Sendable {
        var value: Value??
        var waiter: CheckedContinuation<Value?, Never>?
    }

    private let state = Mutex(State())

    func answer(_ value: Value?) {
        let waiter = state.withLock { state -> CheckedContinuation<Value?, Never>? in
            guard state.value == nil else { return nil }
            state.value = .some(value)
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume(returning: value)
    }

    func value() async -> Value? {
        await withCheckedContinuation { (waiter: CheckedContinuation<Value?, Never>) in
            let known = state.withLock { state -> Value?? in
                if let value = state.value { return .some(value) }
                state.waiter = waiter
                return nil
            }
            if let known { waiter.resume(returning: known) }
        }
    }
}
