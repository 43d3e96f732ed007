import BackupModel
import Foundation

/// The request limits of `backupctl serve`. A valid token is never refused for somebody else's
/// failures: failed sign-ins are counted against the credential that failed, the address it
/// came from (a weaker key: a NAT or bastion holds a whole team) and the server as a whole,
/// and only requests without a valid token are refused once one of those runs out.
public struct RequestLimits: Sendable, Equatable {
    /// Failed sign-ins with one credential (the same unknown token) per window.
    public var failuresPerCredential: Int
    /// Failed sign-ins from one address per window.
    public var failuresPerAddress: Int
    /// Failed sign-ins across the server per window (many addresses guessing together).
    public var failuresOverall: Int
    /// Requests one operator may make per second, with bursts of twice that; 0 for no limit
    /// (`--operator-rate`).
    public var operatorRate: Int
    /// Refused requests (`access.denied`) one operator may cause per window; each is an audit
    /// entry, so past this the operator is answered 429 until the window allows another.
    public var operatorDenials: Int
    public var windowMillis: Int64

    public init(
        failuresPerCredential: Int = 5, failuresPerAddress: Int = 30, failuresOverall: Int = 300,
        operatorRate: Int = 1000, operatorDenials: Int = 30, windowMillis: Int64 = 60_000
    ) {
        self.failuresPerCredential = failuresPerCredential
        self.failuresPerAddress = failuresPerAddress
        self.failuresOverall = failuresOverall
        self.operatorRate = operatorRate
        self.operatorDenials = operatorDenials
        self.windowMillis = windowMillis
    }

    func validate() throws(ConsoleError) {
        guard (0...1_000_000).contains(operatorRate) else {
            throw .usage("--operator-rate must be 0 (no limit) … 1000000 requests a second, got \(operatorRate).")
        }
        guard (1...1_000_000).contains(operatorDenials) else {
            throw .usage("--operator-denials must be 1…1000000 a minute, got \(operatorDenials).")
        }
        let failures = [failuresPerCredential, failuresPerAddress, failuresOverall]
        guard failures.allSatisfy({ (1...1_000_000).contains($0) }) else {
            throw .usage("Failed sign-in limits must be 1…1000000 a window.")
        }
        guard (1000...86_400_000).contains(windowMillis) else {
            throw .usage("--limit-window must be 1…86400 seconds.")
        }
    }
}

/// Keeps ``RequestLimits``: the failed sign-ins and each operator's requests and refusals.
final class RequestLimiter: Sendable {
    let limits: RequestLimits
    private let perCredential: TokenBuckets
    private let perAddress: TokenBuckets
    private let overall: TokenBuckets
    private let operatorRequests: TokenBuckets?
    private let operatorDenials: TokenBuckets

    /// Why a request is refused with 429, and how long to wait.
    struct Refusal: Equatable {
        /// The key that ran out (`credential`, `address`, `server`, `operator_rate`, `operator_denials`).
        var scope: String
        var key: String
        var retryAfterMillis: Int64

        /// Whole seconds for `Retry-After` (at least 1).
        var retryAfterSeconds: Int { Int(max(1, (retryAfterMillis + 999) / 1000)) }
    }

    init(_ limits: RequestLimits = RequestLimits()) {
        self.limits = limits
        let window = limits.windowMillis
        perCredential = TokenBuckets(capacity: limits.failuresPerCredential, windowMillis: window)
        perAddress = TokenBuckets(capacity: limits.failuresPerAddress, windowMillis: window)
        overall = TokenBuckets(capacity: limits.failuresOverall, windowMillis: window, maxKeys: 1)
        operatorRequests =
            limits.operatorRate > 0 ? TokenBuckets(capacity: 2 * limits.operatorRate, windowMillis: 2000) : nil
        operatorDenials = TokenBuckets(capacity: limits.operatorDenials, windowMillis: window)
    }

    /// A failed sign-in: refused (and not counted) when one of its keys has run out, else
    /// counted against each. `credential` is the failed token's hash (nil without a token).
    func signInFailure(credential: String?, address: String, now: Int64) -> Refusal? {
        var keys: [(String, String, TokenBuckets)] = [("address", address, perAddress), ("server", "*", overall)]
        if let credential { keys.insert(("credential", credential, perCredential), at: 0) }
        for (scope, key, buckets) in keys {
            if let wait = buckets.wait(key, now: now) {
                return Refusal(scope: scope, key: key, retryAfterMillis: wait)
            }
        }
        for (_, key, buckets) in keys { buckets.take(key, now: now) }
        return nil
    }

    /// An authenticated request of `name`: refused while its rate or its refusals ran out.
    func operatorRequest(_ name: String, now: Int64) -> Refusal? {
        if let wait = operatorDenials.wait(name, now: now) {
            return Refusal(scope: "operator_denials", key: name, retryAfterMillis: wait)
        }
        if let operatorRequests, let wait = operatorRequests.take(name, now: now) {
            return Refusal(scope: "operator_rate", key: name, retryAfterMillis: wait)
        }
        return nil
    }

    /// `name` was refused (an `access.denied` entry was written).
    func operatorDenied(_ name: String, now: Int64) {
        operatorDenials.take(name, now: now)
    }

    /// Whether a 429 of this kind should be audited now: once per key per window.
    func shouldAudit(_ refusal: Refusal, now: Int64) -> Bool {
        let buckets: TokenBuckets =
            switch refusal.scope {
            case "credential": perCredential
            case "address": perAddress
            case "server": overall
            case "operator_denials": operatorDenials
            default: operatorRequests ?? operatorDenials
            }
        return buckets.shouldAuditRefusal(refusal.key, now: now)
    }
}
