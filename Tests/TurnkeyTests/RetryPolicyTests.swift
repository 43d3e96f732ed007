import BackupCrypto
import BackupModel
import Foundation
import Testing

@testable import Turnkey

/// A transport that answers from a script and records what it was sent.
final class ScriptedTransport: TurnkeyTransport, @unchecked Sendable {
    private let lock = NSLock()
    private var script: [TurnkeyHTTPResponse]
    private(set) var bodies: [[UInt8]] = []

    init(_ script: [TurnkeyHTTPResponse]) { self.script = script }

    func send(_ request: TurnkeyHTTPRequest) async throws(TurnkeyError) -> TurnkeyHTTPResponse {
        lock.withLock {
            bodies.append(request.body)
            return script.isEmpty ? TurnkeyHTTPResponse(status: 200, body: Array("{}".utf8)) : script.removeFirst()
        }
    }
}

func errorBody(_ code: String?, _ message: String) -> [UInt8] {
    TurnkeyWire.encode(TurnkeyErrorPayload(code: 8, message: message, turnkeyErrorCode: code))
}

@Suite("retry policy, budget and error classification")
struct RetryPolicyTests {
    @Test("full jitter stays within min(cap, base·2^n)", arguments: 0..<8)
    func jitterWindow(retry: Int) {
        let policy = TurnkeyRetryPolicy(baseMillis: 250, capMillis: 2000, attempts: 3)
        let random = SeededRandom(seed: UInt64(retry))
        let ceiling = min(2000, 250 << retry)
        #expect(policy.ceilingMillis(retry: retry) == Int64(ceiling))
        for _ in 0..<200 {
            let delay = policy.delayMillis(retry: retry, retryAfterMillis: nil, random: random)
            #expect((0...Int64(ceiling)).contains(delay))
        }
    }

    @Test("Retry-After in seconds and as an HTTP date")
    func retryAfter() {
        #expect(TurnkeyRetryPolicy.parseRetryAfter("3", nowMillis: 0) == 3000)
        // Past Int64 in milliseconds: the longest wait, not a wrapped-around short one.
        #expect(TurnkeyRetryPolicy.parseRetryAfter("9223372036854775807", nowMillis: 0) == Int64.max)
        let now: Int64 = 1_445_412_470_000  // 2015-10-21 07:27:50 GMT
        #expect(TurnkeyRetryPolicy.parseRetryAfter("Wed, 21 Oct 2015 07:28:00 GMT", nowMillis: now) == 10_000)
        #expect(TurnkeyRetryPolicy.parseRetryAfter("soon", nowMillis: now) == nil)
        #expect(TurnkeyRetryPolicy.parseRetryAfter(nil, nowMillis: now) == nil)
    }

    @Test("classification reads turnkeyErrorCode first, then the message")
    func classify() {
        #expect(
            TurnkeyError.classify(status: 429, body: errorBody("RATE_LIMIT_EXCEEDED", "x"), retryAfterMillis: nil).kind
                == .rateLimited)
        #expect(
            TurnkeyError.classify(status: 429, body: errorBody("QUOTA_EXCEEDED", "x"), retryAfterMillis: nil).kind
                == .quotaExceeded)
        #expect(
            TurnkeyError.classify(status: 429, body: errorBody(nil, "monthly quota reached"), retryAfterMillis: nil)
                .kind == .quotaExceeded)
        #expect(
            TurnkeyError.classify(
                status: 401, body: errorBody(nil, TurnkeyError.publicKeyNotFoundMessage), retryAfterMillis: nil
            ).kind == .publicKeyNotFound)
        #expect(
            TurnkeyError.classify(status: 401, body: errorBody("PUBLIC_KEY_NOT_FOUND", "x"), retryAfterMillis: nil).kind
                == .publicKeyNotFound)
        #expect(TurnkeyError.classify(status: 403, body: [], retryAfterMillis: nil).kind == .forbidden)
        #expect(
            TurnkeyError.classify(status: 404, body: errorBody("ORGANIZATION_NOT_FOUND", "x"), retryAfterMillis: nil)
                .kind == .organizationNotFound)
        #expect(TurnkeyError.classify(status: 503, body: [], retryAfterMillis: nil).kind == .serverError)
        #expect(TurnkeyError.classify(status: 400, body: [], retryAfterMillis: nil).kind == .badRequest)
    }

    @Test("transient errors are retried with the same body, quota and 4xx are not, Retry-After is honoured")
    func retries() async throws {
        let time = ManualTime(1_000_000)
        let sleeps = LockedList()
        let transport = ScriptedTransport([
            TurnkeyHTTPResponse(status: 503, body: errorBody("UNAVAILABLE", "down")),
            TurnkeyHTTPResponse(status: 429, retryAfter: "2", body: errorBody("RATE_LIMIT_EXCEEDED", "slow")),
            TurnkeyHTTPResponse(status: 200, body: Array("{}".utf8)),
            TurnkeyHTTPResponse(status: 429, body: errorBody("QUOTA_EXCEEDED", "quota")),
        ])
        let client = TurnkeyClient(
            baseURL: "http://127.0.0.1:1", transport: transport, policy: TurnkeyRetryPolicy(attempts: 3), rps: 1000,
            timing: .virtual(time) { sleeps.add($0) }, random: SeededRandom(seed: 1))
        let key = P256.generatePrivateKey(using: SeededRandom(seed: 2))
        let answer = try await client.call(path: "/x", body: Array("{\"a\":1}".utf8), signer: .apiKey(key))
        #expect(answer.attempts == 3)
        #expect(Set(transport.bodies.map { String(decoding: $0, as: UTF8.self) }).count == 1)
        #expect(sleeps.all.count == 2)
        #expect(sleeps.all[0] <= 250)
        #expect(sleeps.all[1] >= 2000)  // Retry-After: 2 wins over a ≤ 500 ms jitter
        await #expect(throws: TurnkeyError.self) {
            _ = try await client.call(path: "/x", body: [], signer: .apiKey(key))
        }
        #expect(transport.bodies.count == 4)  // the quota 429 was not retried
    }

    @Test("the retry budget runs dry in an outage")
    func budget() {
        let budget = TurnkeyRetryBudget(capacity: 3, depositPerCall: 1)
        var granted = 0
        for _ in 0..<10 {
            budget.deposit()
            if budget.withdraw() { granted += 1 }
            if budget.withdraw() { granted += 1 }
        }
        #expect(granted == 12)  // 2 + 2, then one a call: the deposit pays for one retry only
        #expect(budget.isExhausted)
    }

    @Test("the rate limiter spaces requests at 1/rps")
    func limiter() async throws {
        let time = ManualTime(0)
        let limiter = TurnkeyRateLimiter(rps: 10, timing: .virtual(time))
        for _ in 0..<11 { try await limiter.acquire() }
        #expect(time.now == 1000)
    }
}

final class LockedList: @unchecked Sendable {
    private let lock = NSLock()
    private var values: [Int64] = []
    func add(_ v: Int64) { lock.withLock { values.append(v) } }
    var all: [Int64] { lock.withLock { values } }
}
