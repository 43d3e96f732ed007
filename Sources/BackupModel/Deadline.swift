/// A time limit on a piece of async work that has no deadline of its own (an HTTP client's
/// deadline covers the wait for an answer's head, not its body).
public enum Deadline {
    /// Runs `body`, and cancels it once `millis` milliseconds have passed.
    /// - Returns: what `body` returned, or `nil` when the time ran out first (`body` was
    ///   cancelled, and has ended, when this returns).
    /// - Throws: what `body` threw.
    public static func run<T: Sendable>(millis: Int64, _ body: @escaping @Sendable () async throws -> T)
        async throws -> T?
    {
        try await withThrowingTaskGroup(of: Outcome<T>.self) { group in
            group.addTask { .done(try await body()) }
            group.addTask {
                try await Task.sleep(nanoseconds: UInt64(max(0, millis)) * 1_000_000)
                return .timedOut
            }
            defer { group.cancelAll() }
            guard case .done(let value) = try await group.next() else { return nil }
            return value
        }
    }

    /// What is left of `millis` milliseconds counted from `start` (negative once past).
    public static func remaining(_ millis: Int64, since start: ContinuousClock.Instant) -> Int64 {
        let (seconds, attoseconds) = (ContinuousClock.now - start).components
        return millis - (seconds * 1000 + attoseconds / 1_000_000_000_000_000)
    }

    private enum Outcome<T: Sendable>: Sendable {
        case done(T)
        case timedOut
    }
}
