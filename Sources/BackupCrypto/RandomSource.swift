import BackupModel

/// A source of random bytes, injected wherever the console needs randomness.
///
/// Production code uses ``SystemRandom``; tests and `seed` use ``SeededRandom`` so that their
/// output is reproducible. Everything else (byte arrays, secrets, bounded integers, UUIDs) is
/// built on ``fill(_:)`` in the extension below, so a source only has to provide bytes.
public protocol RandomSource: Sendable {
    /// Overwrites every byte of `buffer` with random bytes.
    func fill(_ buffer: UnsafeMutableRawBufferPointer)
}

extension RandomSource {
    /// `count` random bytes in a plain array; use ``secretBytes(_:)`` for anything secret.
    public func bytes(_ count: Int) -> [UInt8] {
        precondition(count >= 0, "a byte count cannot be negative")
        return [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
            fill(UnsafeMutableRawBufferPointer(buffer))
            initialized = count
        }
    }

    /// `count` random bytes written straight into wiped-on-release storage.
    public func secretBytes(_ count: Int) -> SecretBytes {
        precondition(count >= 0, "a byte count cannot be negative")
        return SecretBytes(count: count) { fill($0) }
    }

    /// A uniformly distributed integer in `0..<upperBound`, without modulo bias.
    ///
    /// Rejection sampling: draws below `2^64 mod upperBound` are discarded so every residue is
    /// equally likely. `upperBound` must be positive.
    public func uniform(_ upperBound: UInt64) -> UInt64 {
        precondition(upperBound > 0, "uniform(_:) needs a positive upper bound")
        // (2^64 - upperBound) mod upperBound == 2^64 mod upperBound.
        let threshold = (0 &- upperBound) % upperBound
        while true {
            let draw = next64()
            if draw >= threshold { return draw % upperBound }
        }
    }

    /// A random lowercase RFC 4122 version 4 UUID, e.g. `"0f8c…-4…-a…-…"`.
    public func uuid() -> String {
        var raw = bytes(16)
        raw[6] = raw[6] & 0x0f | 0x40  // version 4
        raw[8] = raw[8] & 0x3f | 0x80  // variant 10xx
        let hex = Hex.encode(raw)
        var out = ""
        out.reserveCapacity(36)
        for (index, character) in hex.enumerated() {
            if index == 8 || index == 12 || index == 16 || index == 20 { out.append("-") }
            out.append(character)
        }
        return out
    }

    /// Eight random bytes as a little-endian integer.
    func next64() -> UInt64 {
        var value: UInt64 = 0
        withUnsafeMutableBytes(of: &value) { fill($0) }
        return UInt64(littleEndian: value)
    }
}
