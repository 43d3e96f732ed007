import Foundation

/// A deterministic random source for tests and `seed`: the same seed gives the same bytes.
///
/// SplitMix64 (Steele, Lea, Flood 2014). It is **not** cryptographic — anyone who sees a few
/// outputs can predict the rest — so it must never produce a real key, challenge or token.
/// A lock serialises callers, so one instance can be shared across tasks; the sequence then
/// depends on the order the calls take the lock.
public final class SeededRandom: RandomSource, @unchecked Sendable {
    // Guarded by `lock`.
    private var state: UInt64
    private let lock = NSLock()

    public init(seed: UInt64) {
        state = seed
    }

    /// Fills `buffer` with the next bytes of the stream, eight little-endian bytes per step.
    public func fill(_ buffer: UnsafeMutableRawBufferPointer) {
        lock.lock()
        defer { lock.unlock() }
        var index = 0
        while index < buffer.count {
            var word = step()
            for _ in 0..<min(8, buffer.count - index) {
                buffer[index] = UInt8(truncatingIfNeeded: word)
                word >>= 8
                index += 1
            }
        }
    }

    /// One SplitMix64 step; the caller holds the lock.
    private func step() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
