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
        runner.withLock { task in
            guard task == nil else { return }
            task = Task { [client] in await client.run() }
        }
    }

    /// Stops the pool started by ``start()`` and waits for its connections to close; safe to
    /// call twice or without ``start()``.
    public func shutdown() async {
        let task = runner.withLock { task in
            defer { task = nil }
            return task
        }
        task?.cancel()
        await task?.value
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
