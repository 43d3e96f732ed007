import Foundation

/// A client-side rate limiter: requests leave at most `rps` per second, evenly spaced.
///
/// Each caller reserves the next free slot (`max(now, next)`, then `next += 1/rps`) under a
/// lock and sleeps until it, so concurrent workers share one pace without a queue. `burst`
/// lets that many requests go at once after an idle spell. Time comes from ``TurnkeyTiming``.
public final class TurnkeyRateLimiter: @unchecked Sendable {
    private let lock = NSLock()
    // Guarded by `lock`; milliseconds as Double so 1000/rps does not round.
    private var nextSlot: Double = 0
    public let rps: Double
    public let burst: Int
    private let timing: TurnkeyTiming

    /// Reserves a slot of a rate shared with other processes: given now (unix microseconds), the
    /// time the call may go. `nil`: this limiter paces its own callers only.
    public typealias SharedReservation = @Sendable (_ nowMicros: Int64) async throws -> Int64
    private let shared: SharedReservation?

    /// - Parameter shared: a rate shared beyond this process (cleanup workers on several
    ///   machines share their tenant's); each call then waits for its slot there instead.
    public init(rps: Double, burst: Int = 1, timing: TurnkeyTiming, shared: SharedReservation? = nil) {
        self.rps = max(0.001, rps)
        self.burst = max(1, burst)
        self.timing = timing
        self.shared = shared
    }

    private var interval: Double { 1000 / rps }

    /// Waits for the next slot.
    /// - Throws: `CancellationError` when the task is cancelled while waiting.
    public func acquire() async throws {
        if let shared {
            let now = timing.clock.millis()
            let slot = try await shared(now * 1000)
            let wait = (slot + 999) / 1000 - now
            if wait >= 1 { try await timing.sleep(wait) }
            return
        }
        let now = Double(timing.clock.millis())
        let wait: Double = lock.withLock {
            // After an idle spell, allow `burst` requests at once, not an unbounded catch-up.
            let earliest = now - interval * Double(burst - 1)
            let slot = max(nextSlot, earliest)
            nextSlot = slot + interval
            return slot - now
        }
        if wait >= 1 { try await timing.sleep(Int64(wait.rounded(.up))) }
    }
}
