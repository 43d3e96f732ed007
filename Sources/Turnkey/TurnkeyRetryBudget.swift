import Foundation

/// A run-wide retry budget: a token bucket that stops an outage from becoming a retry storm.
///
/// The bucket starts with `capacity` tokens; every first attempt deposits `depositPerCall`
/// (up to the capacity) and every retry withdraws one. When traffic is mostly healthy the
/// deposits pay for the retries (at 40% transient faults a call needs ~0.56 retries on average);
/// in an outage every call costs more than it deposits and the bucket empties after about
/// `capacity / (attempts - 1 - depositPerCall)` calls, which ends the run with a clear error.
public final class TurnkeyRetryBudget: @unchecked Sendable {
    private let lock = NSLock()
    // Guarded by `lock`.
    private var tokens: Double
    private var spentTotal = 0
    public let capacity: Double
    public let depositPerCall: Double

    public init(capacity: Double = 20, depositPerCall: Double = 1) {
        self.capacity = max(0, capacity)
        self.depositPerCall = max(0, depositPerCall)
        tokens = self.capacity
    }

    /// Records a first attempt.
    public func deposit() {
        lock.withLock { tokens = min(capacity, tokens + depositPerCall) }
    }

    /// Takes one token for a retry; `false` when the budget is spent.
    public func withdraw() -> Bool {
        lock.withLock {
            guard tokens >= 1 else { return false }
            tokens -= 1
            spentTotal += 1
            return true
        }
    }

    /// Whether no retry is left (an outage is under way).
    public var isExhausted: Bool { lock.withLock { tokens < 1 } }

    /// Retries paid for so far.
    public var retriesSpent: Int { lock.withLock { spentTotal } }
}
