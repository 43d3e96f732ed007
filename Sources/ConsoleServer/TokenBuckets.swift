import Foundation

/// Token buckets by key: each bucket holds at most `capacity` tokens and earns them back at
/// `capacity` per `windowMillis`. A key with an empty bucket is limited. At most `maxKeys`
/// buckets are kept: past that, full ones are forgotten first, then the least recently used,
/// so a client inventing keys cannot grow the server's memory.
final class TokenBuckets: @unchecked Sendable {
    let capacity: Double
    let windowMillis: Int64
    let maxKeys: Int

    private struct Bucket {
        var tokens: Double
        var updatedAt: Int64
        /// When a refusal of this key was last audited (one entry per window).
        var refusalAuditedAt: Int64?
    }

    private let lock = NSLock()
    private var buckets: [String: Bucket] = [:]

    init(capacity: Int, windowMillis: Int64, maxKeys: Int = 10_000) {
        self.capacity = Double(max(1, capacity))
        self.windowMillis = max(1, windowMillis)
        self.maxKeys = maxKeys
    }

    /// Milliseconds until `key` has a token again; `nil` when it has one now.
    func wait(_ key: String, now: Int64) -> Int64? {
        lock.withLock {
            guard var bucket = buckets[key] else { return nil }
            refill(&bucket, now: now)
            buckets[key] = bucket
            return bucket.tokens >= 1 ? nil : millisUntilToken(bucket)
        }
    }

    /// Takes one token from `key` (a new key starts full); the wait when there was none.
    @discardableResult
    func take(_ key: String, now: Int64) -> Int64? {
        lock.withLock {
            var bucket = buckets[key] ?? Bucket(tokens: capacity, updatedAt: now)
            refill(&bucket, now: now)
            guard bucket.tokens >= 1 else {
                buckets[key] = bucket
                return millisUntilToken(bucket)
            }
            bucket.tokens -= 1
            buckets[key] = bucket
            if buckets.count > maxKeys { prune(now: now) }
            return nil
        }
    }

    /// Whether a refusal of `key` should be audited now: the first one of each window.
    func shouldAuditRefusal(_ key: String, now: Int64) -> Bool {
        lock.withLock {
            guard var bucket = buckets[key] else { return true }
            if let last = bucket.refusalAuditedAt, now >= last, now - last < windowMillis { return false }
            bucket.refusalAuditedAt = now
            buckets[key] = bucket
            return true
        }
    }

    private func millisUntilToken(_ bucket: Bucket) -> Int64 {
        let missing = 1 - bucket.tokens
        return max(1, Int64((missing * Double(windowMillis) / capacity).rounded(.up)))
    }

    private func refill(_ bucket: inout Bucket, now: Int64) {
        guard now > bucket.updatedAt else { return }
        // Subtraction of two clock readings cannot overflow; an absurd gap just fills the bucket.
        let elapsed = Double(now.subtractingReportingOverflow(bucket.updatedAt).partialValue)
        bucket.tokens = min(capacity, bucket.tokens + elapsed * capacity / Double(windowMillis))
        bucket.updatedAt = now
    }

    private func prune(now: Int64) {
        for (key, var bucket) in buckets {
            refill(&bucket, now: now)
            if bucket.tokens >= capacity { buckets[key] = nil }
        }
        while buckets.count > maxKeys, let oldest = buckets.min(by: { $0.value.updatedAt < $1.value.updatedAt }) {
            buckets[oldest.key] = nil
        }
    }
}
