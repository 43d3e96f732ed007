import BackupCrypto
import BackupModel
import Foundation
import Logging

/// The Turnkey API client: stamps, sends, classifies and retries.
///
/// One client serves one tenant's run. The rate limiter and the retry budget are shared by
/// every call it makes, so sixteen workers together still keep to the tenant's RPS and stop
/// retrying together when Turnkey is down. The body of a call is fixed before the retry loop
/// (Bedrock does the same), so a retried activity carries the same fingerprint.
public struct TurnkeyClient: Sendable {
    public let baseURL: String
    public let transport: any TurnkeyTransport
    public let policy: TurnkeyRetryPolicy
    public let budget: TurnkeyRetryBudget
    public let limiter: TurnkeyRateLimiter
    public let timing: TurnkeyTiming
    public let random: any RandomSource
    public let logger: Logger

    public init(
        baseURL: String, transport: any TurnkeyTransport, policy: TurnkeyRetryPolicy = TurnkeyRetryPolicy(),
        rps: Double = 10, budget: TurnkeyRetryBudget = TurnkeyRetryBudget(), timing: TurnkeyTiming = .system,
        random: any RandomSource = SystemRandom(), logger: Logger = Logger(label: "backupctl.turnkey"),
        sharedRate: TurnkeyRateLimiter.SharedReservation? = nil
    ) {
        self.baseURL = baseURL
        self.transport = transport
        self.policy = policy
        self.budget = budget
        self.timing = timing
        self.random = random
        self.logger = logger
        limiter = TurnkeyRateLimiter(rps: rps, timing: timing, shared: sharedRate)
    }

    /// What a successful call returned, and how many attempts it took.
    public struct Answer: Sendable {
        public var body: [UInt8]
        public var attempts: Int
    }

    /// Sends `body` to `path`, stamped by `signer`, retrying transient failures per the policy.
    ///
    /// Every attempt waits for the rate limiter; every retry takes a token from the run-wide
    /// budget and waits `max(full jitter, Retry-After)`. `onAttempt` is told each attempt's
    /// number after its rate slot and right before it is sent; what it throws withdraws the
    /// attempt unsent and is thrown on, with the attempts made before it.
    /// - Throws: ``TurnkeyError``; `attempts` tells how many were made. A transient failure with
    ///   no budget left is `.retryBudgetExhausted`, carrying the last failure's description.
    public func call(
        path: String, body: [UInt8], signer: TurnkeySigner,
        onAttempt: (@Sendable (Int) async throws(TurnkeyError) -> Void)? = nil
    ) async throws(TurnkeyError) -> Answer {
        budget.deposit()
        var attempt = 0
        while true {
            attempt += 1
            do {
                try await limiter.acquire()
            } catch {
                throw TurnkeyError(
                    .cancelled, message: "stopped while waiting for the rate limiter", attempts: attempt - 1)
            }
            let stamp: String
            do {
                stamp = try signer.stamp(body)
            } catch {
                throw TurnkeyError(
                    .badRequest, message: "could not stamp the request: \(error.message)", attempts: attempt)
            }
            if let onAttempt {
                do throws(TurnkeyError) {
                    try await onAttempt(attempt)
                } catch {
                    var withdrawn = error
                    withdrawn.attempts = attempt - 1
                    throw withdrawn
                }
            }
            var failure: TurnkeyError
            do {
                let response = try await transport.send(
                    TurnkeyHTTPRequest(
                        baseURL: baseURL, path: path, body: body, stamp: stamp, timeoutMillis: policy.timeoutMillis))
                if response.isSuccess { return Answer(body: response.body, attempts: attempt) }
                failure = TurnkeyError.classify(
                    status: response.status, body: response.body,
                    retryAfterMillis: TurnkeyRetryPolicy.parseRetryAfter(
                        response.retryAfter, nowMillis: timing.clock.millis()))
            } catch {
                failure = error
            }
            failure.attempts = attempt
            guard failure.isTransient, attempt < policy.attempts else { throw failure }
            if let wait = failure.retryAfterMillis, wait > policy.maxRetryAfterMillis { throw failure }
            guard budget.withdraw() else {
                throw TurnkeyError(
                    .retryBudgetExhausted, status: failure.status, turnkeyErrorCode: failure.turnkeyErrorCode,
                    message: "retry budget spent; last failure \(failure.summary)", attempts: attempt)
            }
            let delay = policy.delayMillis(
                retry: attempt - 1, retryAfterMillis: failure.retryAfterMillis, random: random)
            logger.debug(
                "turnkey retry",
                metadata: [
                    "path": "\(path)", "attempt": "\(attempt)", "delay_ms": "\(delay)",
                    "error": "\(failure.kind.rawValue)",
                ])
            do {
                try await timing.sleep(delay)
            } catch {
                throw TurnkeyError(.cancelled, message: "stopped while backing off", attempts: attempt)
            }
        }
    }

    /// A query whose answer decodes as `T`.
    func query<T: Decodable>(_ type: T.Type, path: String, body: some Encodable, signer: TurnkeySigner)
        async throws(TurnkeyError) -> T
    {
        let answer = try await call(path: path, body: TurnkeyWire.encode(body), signer: signer)
        guard let value = TurnkeyWire.decode(type, answer.body) else {
            throw TurnkeyError(.transport, message: "unreadable answer from \(path)", attempts: answer.attempts)
        }
        return value
    }
}
