internal import COpenSSL

/// Cryptographically secure randomness from OpenSSL's `RAND_bytes` (its DRBG seeded by the OS).
///
/// Used for every key, nonce, challenge and token the console makes outside tests.
public struct SystemRandom: RandomSource {
    public init() {}

    /// Fills `buffer` from `RAND_bytes`.
    ///
    /// Traps if OpenSSL reports failure: that means the OS entropy source is unavailable, and
    /// carrying on with unfilled bytes would silently produce predictable keys.
    public func fill(_ buffer: UnsafeMutableRawBufferPointer) {
        guard let base = buffer.baseAddress else { return }
        var offset = 0
        while offset < buffer.count {
            let chunk = min(buffer.count - offset, Int(Int32.max))
            let rc = RAND_bytes(base.advanced(by: offset).assumingMemoryBound(to: UInt8.self), Int32(chunk))
            precondition(rc == 1, "OpenSSL RAND_bytes failed: no secure randomness is available")
            offset += chunk
        }
    }
}
