import Synchronization

/// A count shared with `@Sendable` closures: ``next()`` returns 1, 2, 3, …
public final class Counter: Sendable {
    private let count = Mutex(0)

    public init() {}

    /// Counts one more and returns the new count.
    public func next() -> Int {
        count.withLock {
            $0 += 1
            return $0
        }
    }

    /// The count so far.
    public var value: Int { count.withLock { $0 } }
}
