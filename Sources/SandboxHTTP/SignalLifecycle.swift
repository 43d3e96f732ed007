import Foundation
import Logging
import ServiceLifecycle

/// How a long-running `backupctl sandbox …` process waits for its end: ServiceLifecycle's
/// signal handling (SIGINT and SIGTERM start a graceful shutdown), not a handler of our own.
public enum SignalLifecycle {
    /// Calls `tick` every `interval` until SIGINT or SIGTERM, then returns (the caller stops
    /// its servers and saves what it must).
    public static func runUntilSignalled(
        every interval: Duration, logger: Logger, tick: @escaping @Sendable () async throws -> Void
    ) async throws {
        var quiet = logger
        quiet.logLevel = .critical
        let group = ServiceGroup(
            configuration: .init(
                services: [Ticker(interval: interval, tick: tick)], gracefulShutdownSignals: [.sigterm, .sigint],
                cancellationSignals: [], logger: quiet))
        try await group.run()
    }

    /// Waits for SIGINT or SIGTERM, then returns.
    public static func runUntilSignalled(logger: Logger) async throws {
        var quiet = logger
        quiet.logLevel = .critical
        let group = ServiceGroup(
            configuration: .init(
                services: [Waiter()], gracefulShutdownSignals: [.sigterm, .sigint], cancellationSignals: [],
                logger: quiet))
        try await group.run()
    }

    /// Returns once the graceful shutdown begins.
    struct Waiter: Service {
        func run() async throws {
            try await gracefulShutdown()
        }
    }

    /// Runs `tick` on an interval until the graceful shutdown; the sleep ends early then.
    struct Ticker: Service {
        let interval: Duration
        let tick: @Sendable () async throws -> Void

        func run() async throws {
            while !Task.isShuttingDownGracefully {
                _ = try? await cancelWhenGracefulShutdown { try await Task.sleep(for: interval) }
                if Task.isShuttingDownGracefully { return }
                try await tick()
            }
        }
    }
}
