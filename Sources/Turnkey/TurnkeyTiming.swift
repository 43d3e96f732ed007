import BackupModel
import Foundation

/// The clock and the sleep the client waits with, injected so tests take no real time.
///
/// ``system`` reads the wall clock and sleeps for real. ``virtual(_:onSleep:)`` advances a
/// ``ManualTime`` by the requested delay and returns at once, reporting each delay so tests
/// can check that retries are spaced as the policy says.
public struct TurnkeyTiming: Sendable {
    public let clock: WallClock
    /// Sleeps `millis` milliseconds; throws `CancellationError` when the task is cancelled.
    public let sleep: @Sendable (Int64) async throws -> Void

    public init(clock: WallClock, sleep: @escaping @Sendable (Int64) async throws -> Void) {
        self.clock = clock
        self.sleep = sleep
    }

    public static let system = TurnkeyTiming(clock: .system) { millis in
        guard millis > 0 else { return }
        try await Task.sleep(nanoseconds: UInt64(millis) * 1_000_000)
    }

    /// Time that moves only when someone sleeps: each sleep advances `time` and returns.
    public static func virtual(_ time: ManualTime, onSleep: (@Sendable (Int64) -> Void)? = nil) -> TurnkeyTiming {
        TurnkeyTiming(clock: .manual(time)) { millis in
            try Task.checkCancellation()
            onSleep?(millis)
            if millis > 0 { time.advance(byMillis: millis) }
        }
    }
}
