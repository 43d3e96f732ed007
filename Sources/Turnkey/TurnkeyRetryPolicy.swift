import BackupCrypto
import Foundation

/// Bedrock's retry policy, per tenant: full jitter `uniform(0, min(cap, base·2^n))`.
///
/// The delay before retry `n` (0 for the first retry) is drawn uniformly from
/// `[0, min(cap, base·2^n)]`; a `Retry-After` from Turnkey is honoured as a lower bound, and one
/// longer than ``maxRetryAfterMillis`` ends the call instead of parking a worker for minutes.
public struct TurnkeyRetryPolicy: Sendable, Equatable {
    public var baseMillis: Int64
    public var capMillis: Int64
    /// Attempts in all, the first included (Bedrock: 3).
    public var attempts: Int
    /// The longest `Retry-After` the client will wait for.
    public var maxRetryAfterMillis: Int64
    /// Per-request timeout.
    public var timeoutMillis: Int64

    public init(
        baseMillis: Int64 = 250, capMillis: Int64 = 2000, attempts: Int = 3, maxRetryAfterMillis: Int64 = 60_000,
        timeoutMillis: Int64 = 30_000
    ) {
        self.baseMillis = max(1, baseMillis)
        self.capMillis = max(self.baseMillis, capMillis)
        self.attempts = max(1, attempts)
        self.maxRetryAfterMillis = maxRetryAfterMillis
        self.timeoutMillis = max(1, timeoutMillis)
    }

    /// The upper bound of the jitter window before retry `retry` (0-based): `min(cap, base·2^retry)`.
    public func ceilingMillis(retry: Int) -> Int64 {
        let shift = min(max(retry, 0), 40)
        let (product, overflow) = baseMillis.multipliedReportingOverflow(by: Int64(1) << shift)
        return overflow ? capMillis : min(capMillis, product)
    }

    /// A full-jitter delay before retry `retry`, drawn from `random`, at least `retryAfterMillis`.
    public func delayMillis(retry: Int, retryAfterMillis: Int64?, random: any RandomSource) -> Int64 {
        let jitter = Int64(random.uniform(UInt64(ceilingMillis(retry: retry)) + 1))
        return max(jitter, retryAfterMillis ?? 0)
    }

    /// Parses `Retry-After`: delay-seconds (`"3"`) or an HTTP-date (`"Wed, 21 Oct 2015 07:28:00 GMT"`),
    /// as milliseconds from `nowMillis`; `nil` when absent or unreadable, 0 for a date in the past.
    public static func parseRetryAfter(_ value: String?, nowMillis: Int64) -> Int64? {
        guard let text = value?.trimmingCharacters(in: .whitespaces), !text.isEmpty else { return nil }
        if let seconds = Int64(text) {
            // A huge value is a very long wait, never a wrapped-around short one.
            let millis = seconds.multipliedReportingOverflow(by: 1000)
            return seconds >= 0 ? (millis.overflow ? Int64.max : millis.partialValue) : nil
        }
        for format in ["EEE, dd MMM yyyy HH:mm:ss zzz", "EEEE, dd-MMM-yy HH:mm:ss zzz", "EEE MMM d HH:mm:ss yyyy"] {
            let formatter = DateFormatter()
            formatter.locale = Locale(identifier: "en_US_POSIX")
            formatter.timeZone = TimeZone(identifier: "GMT")
            formatter.dateFormat = format
            if let date = formatter.date(from: text) {
                let at = Int64((date.timeIntervalSince1970 * 1000).rounded())
                return max(0, at - nowMillis)
            }
        }
        return nil
    }
}
