import BackupModel
import NIOCore
import PostgresNIO
import Synchronization

extension PostgresStoreDatabase {
    /// Runs `body` on a connection leased from the pool, waiting for the lease at most the
    /// store's `query_timeout` (``PostgresErrors/LeaseTimedOut``): when the database stops
    /// answering, the pool cannot open a connection (each attempt waits its connect timeout, and
    /// the pool gives up only after a minute of them), and without a bound every request behind it
    /// would wait that long.
    ///
    /// postgres-nio leases only for a closure's lifetime, and cancelling the task that waits is
    /// the only way to stop a wait; so a task of its own holds the lease and hands its connection
    /// over, and is cancelled when the time runs out first. That task is not a child: a pool that
    /// answers the cancellation late (a loaded run saw a minute and more) must not hold the
    /// caller past its deadline, as a task group that waits for its children would. A lease that
    /// comes after the caller gave up is released as soon as it comes.
    func leased<T: Sendable>(_ body: (PostgresConnection) async throws -> T) async throws -> T {
        let seconds = configuration.queryTimeoutSeconds
        guard seconds > 0 else { return try await client.withConnection { connection in try await body(connection) } }
        let lease = LeaseHandoff()
        let holder = Task.detached { [client] in
            do {
                try await client.withConnection { connection in await lease.handOver(connection) }
            } catch {
                lease.fail(error)
            }
        }
        let timer = PostgresClient.defaultEventLoopGroup.any().scheduleTask(in: .seconds(Int64(seconds))) {
            lease.fail(PostgresErrors.LeaseTimedOut(seconds: seconds))
        }
        let connection: PostgresConnection
        do {
            // The caller's cancellation stops the holder's wait, which fails the lease.
            connection = try await withTaskCancellationHandler {
                try await lease.connection()
            } onCancel: {
                holder.cancel()
            }
            timer.cancel()
        } catch {
            timer.cancel()
            // Stops the holder's wait for a lease (or ends a lease that came too late).
            holder.cancel()
            throw error
        }
        // Once used, the connection is back in the pool before this returns (a next lease must
        // not find it still out, or take it before the pool saw that a deadline closed it).
        do {
            let value = try await body(connection)
            lease.release()
            await holder.value
            return value
        } catch {
            // A connection our deadline closed goes back only once closed: the pool, told of the
            // close first, then drops it instead of leasing it to the next caller.
            if error is PostgresErrors.QueryTimedOut { try? await connection.closeFuture.get() }
            lease.release()
            await holder.value
            throw error
        }
    }
}

/// A connection handed from the task that holds its lease to the one that uses it, and the
/// release handed back; whichever of the lease, a failure and the deadline comes first decides.
private final class LeaseHandoff: Sendable {
    private enum State {
        case waiting
        /// The user waits for the connection.
        case asked(CheckedContinuation<PostgresConnection, any Error>)
        /// The lease came before the user asked; its holder waits for the release.
        case offered(PostgresConnection, CheckedContinuation<Void, Never>)
        /// The user has the connection; the holder waits for the release.
        case handed(CheckedContinuation<Void, Never>)
        case failed(any Error)
        case released
    }

    private let state = Mutex<State>(.waiting)

    /// The holder's side, inside the lease: hands `connection` over and returns once the user
    /// released it (at once when the user has given up).
    func handOver(_ connection: PostgresConnection) async {
        await withCheckedContinuation { (release: CheckedContinuation<Void, Never>) in
            let user = state.withLock { state -> CheckedContinuation<PostgresConnection, any Error>? in
                switch state {
                case .waiting:
                    state = .offered(connection, release)
                    return nil
                case .asked(let user):
                    state = .handed(release)
                    return user
                case .offered, .handed, .failed, .released:
                    release.resume()
                    return nil
                }
            }
            user?.resume(returning: connection)
        }
    }

    /// The user's side: the connection once leased, or the failure or deadline that came first.
    func connection() async throws -> PostgresConnection {
        try await withCheckedThrowingContinuation { (user: CheckedContinuation<PostgresConnection, any Error>) in
            let result = state.withLock { state -> Result<PostgresConnection, any Error>? in
                switch state {
                case .waiting:
                    state = .asked(user)
                    return nil
                case .offered(let connection, let release):
                    state = .handed(release)
                    return .success(connection)
                case .failed(let error):
                    return .failure(error)
                case .asked, .handed, .released:
                    return .failure(PostgresErrors.LeaseTimedOut(seconds: 0))
                }
            }
            if let result { user.resume(with: result) }
        }
    }

    /// No lease (the pool failed, or the deadline passed): the user's wait ends with `error`; a
    /// lease already handed over is not taken back.
    func fail(_ error: any Error) {
        let (user, release) = state.withLock {
            state -> (CheckedContinuation<PostgresConnection, any Error>?, CheckedContinuation<Void, Never>?) in
            switch state {
            case .waiting:
                state = .failed(error)
                return (nil, nil)
            case .asked(let user):
                state = .failed(error)
                return (user, nil)
            case .offered(_, let release):
                state = .failed(error)
                return (nil, release)
            case .handed, .failed, .released:
                return (nil, nil)
            }
        }
        user?.resume(throwing: error)
        release?.resume()
    }

    /// The user is done with the connection: the holder's closure returns, and the pool takes it back.
    func release() {
        let release = state.withLock { state -> CheckedContinuation<Void, Never>? in
            defer { state = .released }
            if case .handed(let release) = state { return release }
            return nil
        }
        release?.resume()
    }
}
