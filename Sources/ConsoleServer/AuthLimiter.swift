import Foundation

/// Failed sign-ins per client address, as token buckets: each failure takes a token, tokens
/// come back at `capacity` per `windowMillis`. An address with an empty bucket is refused
/// (429) without its token being looked at.
///
/// Its refusals are audited at most once per address per window, so a client hammering the
/// server cannot flood the audit log.
final class AuthLimiter: @unchecked Sendable {
    let capacity: Double
    let windowMillis: Int64
    /// Addresses tracked at most; past it, full buckets are forgotten first, then the oldest.
    let maxAddresses: Int

    private struct Bucket {
        var tokens: Double
        var updatedAt: Int64
        var refusalAuditedAt: Int64?
    }

    private let lock = NSLock()
    private var buckets: [String: Bucket] = [:]

    init(capacity: Int = 10, windowMillis: Int64 = 60_000, maxAddresses: Int = 10_000) {
        self.capacity = Double(capacity)
        self.windowMillis = windowMillis
        self.maxAddresses = maxAddresses
    }

    /// Whether `address` has used up its failures.
    func isLimited(_ address: String, now: Int64) -> Bool {
        lock.withLock {
            guard var bucket = buckets[address] else { return false }
            refill(&bucket, now: now)
            buckets[address] = bucket
            return bucket.tokens < 1
        }
    }

    /// Counts one failed sign-in from `address`.
    func recordFailure(_ address: String, now: Int64) {
        lock.withLock {
            var bucket = buckets[address] ?? Bucket(tokens: capacity, updatedAt: now)
            refill(&bucket, now: now)
            bucket.tokens = max(0, bucket.tokens - 1)
            buckets[address] = bucket
            if buckets.count > maxAddresses { prune(now: now) }
        }
    }

    /// Whether a refusal of `address` should be audited now: the first one of each window.
    func shouldAuditRefusal(_ address: String, now: Int64) -> Bool {
        lock.withLock {
            guard var bucket = buckets[address] else { return true }
            if let last = bucket.refusalAuditedAt, now >= last, now - last < windowMillis { return false }
            bucket.refusalAuditedAt = now
            buckets[address] = bucket
            return true
        }
    }

    private func refill(_ bucket: inout Bucket, now: Int64) {
        guard now > bucket.updatedAt else { return }
        let earned = Double(now - bucket.updatedAt) * capacity / Double(windowMillis)
        bucket.tokens = min(capacity, bucket.tokens + earned)
        bucket.updatedAt = now
    }

    private func prune(now: Int64) {
        for (address, var bucket) in buckets {
            refill(&bucket, now: now)
            if bucket.tokens >= capacity { buckets[address] = nil }
        }
        while buckets.count > maxAddresses, let oldest = buckets.min(by: { $0.value.updatedAt < $1.value.updatedAt }) {
            buckets[oldest.key] = nil
        }
    }
}
