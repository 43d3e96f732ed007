import BackupModel
import Logging
import PostgresNIO
import ServiceLifecycle
import Synchronization

/// One PostgreSQL database: a postgres-nio `PostgresClient` pool and the task that runs it.
///
/// postgres-nio leases connections only while `client.run()` runs in some task. Either call
/// ``start()`` and, at the end, ``shutdown()`` (the pool runs in a task this object owns), or hand
/// the database to a `ServiceGroup`, whose task runs ``run()`` until graceful shutdown. Every
/// error leaves as a ``ConsoleError`` (``PostgresErrors``), never naming the password.
public final class PostgresStoreDatabase: Service, Sendable {
    public let configuration: PostgresStoreConfiguration
    public let client: PostgresClient
    /// Given to the pool and every query; never receives the password.
    public let logger: Logger
    private let runner = Mutex<Task<Void, Never>?>(nil)
    /// The connection of ``withHotConnection(_:_:)``, opened on first use.
    private let hot = Mutex<Task<PostgresConnection, any Error>?>(nil)

    public init(configuration: PostgresStoreConfiguration, logger: Logger = Logger(label: "backupctl.postgres")) {
        self.configuration = configuration
        self.logger = logger
        client = PostgresClient(configuration: configuration.clientConfiguration, backgroundLogger: logger)
    }

    /// Checks that the server answers, then runs the pool in a task of its own.
    ///
    /// The check opens one connection outside the pool: the pool retries a refused connection
    /// for a minute before failing a request, so an unreachable server is reported here, at once.
    /// - Throws: ``ConsoleError`` `database_unavailable` naming `host:port`, `database_auth_failed`,
    ///   or `usage` for TLS settings that cannot be loaded.
    public func start() async throws(ConsoleError) {
        try await checkReachable()
        // A lease before `run()` has begun is served anyway, but the pool warns about it on the
        // operator's terminal ("run() hasn't been called yet"). `run()` marks itself running
        // before its first suspension, and an immediate task runs it on this thread up to that
        // suspension: once `start()` returns, the pool is marked running. (A plain task could
        // start on another core after the first lease: a signal sent from it just before
        // `run()` did not order the two, and a loaded run saw the warning.)
        runner.withLock { task in
            guard task == nil else { return }
            task = Task.immediate { [client] in await client.run() }
        }
    }

    /// Stops the pool started by ``start()`` and waits for its connections to close; safe to
    /// call twice or without ``start()``.
    public func shutdown() async {
        let connection = hot.withLock { task in
            defer { task = nil }
            return task
        }
        try? await connection?.value.close()
        let task = runner.withLock { task in
            defer { task = nil }
            return task
        }
        task?.cancel()
        await task?.value
    }

    /// Runs `body` on one connection kept outside the pool for single-statement reads on the
    /// hot path (lookups): a pool lease costs more than the query itself (about 170 µs against
    /// 100 µs on loopback). Concurrent callers share it; PostgreSQL answers their statements in
    /// order. A closed connection is replaced, and the statement retried once on the new one.
    public func withHotConnection<T: Sendable>(
        _ what: @autoclosure () -> String, _ body: (PostgresConnection) async throws -> T
    ) async throws(ConsoleError) -> T {
        for attempt in 1...2 {
            let task = hot.withLock { task -> Task<PostgresConnection, any Error> in
                if let task { return task }
                let made = Task { [configuration, logger] in
                    try await PostgresConnection.connect(
                        configuration: try configuration.connectionConfiguration(), id: 0, logger: logger)
                }
                task = made
                return made
            }
            do {
                let connection = try await task.value
                guard !connection.isClosed else { throw PostgresErrors.HotConnectionClosed() }
                return try await bounded(connection) { try await body(connection) }
            } catch {
                let closed = (try? await task.value)?.isClosed ?? true
                // A statement that timed out closed the connection: the next lookup opens a
                // new one, but this one is not retried (the database did not answer).
                guard closed, !(error is PostgresErrors.QueryTimedOut) else {
                    if closed { hot.withLock { current in if current == task { current = nil } } }
                    throw mapError(error, while: what())
                }
                hot.withLock { current in if current == task { current = nil } }
                if attempt == 2 { throw mapError(error, while: what()) }
            }
        }
        throw ConsoleError.internalError("The PostgreSQL store failed while \(what()).")
    }

    /// Runs the pool until the calling task is cancelled or the service group shuts down.
    public func run() async throws {
        await client.run()
    }

    /// Opens and closes one connection with the store's settings.
    /// - Throws: ``ConsoleError`` as for ``start()``.
    public func checkReachable() async throws(ConsoleError) {
        let settings = try configuration.connectionConfiguration()
        do {
            let connection = try await PostgresConnection.connect(configuration: settings, id: 0, logger: logger)
            try await connection.close()
        } catch {
            throw mapError(error, while: "connecting")
        }
    }

    /// Runs `body` on a leased connection, outside a transaction.
    public func withConnection<T: Sendable>(
        _ what: @autoclosure () -> String, _ body: (PostgresConnection) async throws -> T
    ) async throws(ConsoleError) -> T {
        do {
            return try await client.withConnection { connection in try await body(connection) }
        } catch {
            throw mapError(error, while: what())
        }
    }

    /// Runs one statement's `body` on `connection` under the store's `query_timeout`: when no
    /// answer came in time the connection is closed, which fails the statement (postgres-nio
    /// cannot cancel one in flight), and the caller gets ``PostgresErrors/QueryTimedOut``.
    /// The pool drops the closed connection; a transaction on it is rolled back by the server.
    @discardableResult
    func bounded<T>(
        _ connection: PostgresConnection, committing: Bool = false, _ body: () async throws -> T
    ) async throws -> T {
        let seconds = configuration.queryTimeoutSeconds
        guard seconds > 0 else { return try await body() }
        let fired = Fired()
        let timer = connection.eventLoop.scheduleTask(in: .seconds(Int64(seconds))) {
            fired.value.store(true, ordering: .releasing)
            let _: EventLoopFuture<Void> = connection.close()
        }
        defer { timer.cancel() }
        do {
            return try await body()
        } catch {
            guard fired.value.load(ordering: .acquiring) else { throw error }
            throw PostgresErrors.QueryTimedOut(seconds: seconds, committing: committing)
        }
    }

    /// A transaction of the shared store rules on a leased connection: `BEGIN`, `body`, then
    /// `COMMIT`, or `ROLLBACK` when `body` throws; the wait for the lease, `BEGIN` and `COMMIT`
    /// are bounded by the store's `query_timeout` as the body's statements are (``PostgresSession``).
    public func withBoundedTransaction<T: Sendable>(
        _ what: @autoclosure () -> String, _ body: (PostgresConnection) async throws -> T
    ) async throws(ConsoleError) -> T {
        do {
            return try await leased { connection in
                try await bounded(connection) { try await connection.query("BEGIN;", logger: logger) }
                let value: T
                do {
                    value = try await body(connection)
                } catch {
                    // A connection our deadline closed is not written to again: postgres-nio may
                    // never answer a statement sent while it closes (the server rolls back).
                    if !(error is PostgresErrors.QueryTimedOut), !connection.isClosed {
                        _ = try? await bounded(connection) { try await connection.query("ROLLBACK;", logger: logger) }
                    }
                    throw error
                }
                try await bounded(connection, committing: true) {
                    try await connection.query("COMMIT;", logger: logger)
                }
                return value
            }
        } catch {
            throw mapError(error, while: what())
        }
    }

    /// Runs `body` on a leased connection outside a transaction, waiting for the lease at most the
    /// store's `query_timeout` (``leased(_:)``).
    public func withBoundedConnection<T: Sendable>(
        _ what: @autoclosure () -> String, _ body: (PostgresConnection) async throws -> T
    ) async throws(ConsoleError) -> T {
        do {
            return try await leased(body)
        } catch {
            throw mapError(error, while: what())
        }
    }

    /// Runs `body` in a transaction on a leased connection: committed when it returns, rolled
    /// back when it throws.
    public func withTransaction<T: Sendable>(
        _ what: @autoclosure () -> String, _ body: (PostgresConnection) async throws -> T
    ) async throws(ConsoleError) -> T {
        do {
            return try await client.withTransaction(logger: logger) { connection in try await body(connection) }
        } catch {
            throw mapError(error, while: what())
        }
    }

    /// The ``ConsoleError`` for anything postgres-nio threw while doing `what`.
    public func mapError(_ error: any Error, while what: String) -> ConsoleError {
        PostgresErrors.map(error, while: what, at: configuration.endpoint)
    }
}

/// Whether a statement's timer closed its connection.
private final class Fired: Sendable {
    let value = Atomic<Bool>(false)
}
