import BackupCrypto
import BackupModel
import Foundation
import Testing
import Turnkey

@testable import TurnkeySandbox

@Suite("sandbox fault injection over loopback HTTP")
struct SandboxFaultTests {
    @Test("latency is added to every answer")
    func latency() async throws {
        let h = try await SandboxHarness(faults: SandboxFaults(latencyMillis: 40), virtualTime: false)
        defer { Task { await h.stop() } }
        for _ in 0..<3 {
            let start = DispatchTime.now().uptimeNanoseconds
            #expect(try await h.whoami(h.subOrgs[1], signer: h.api).status == 200)
            #expect(DispatchTime.now().uptimeNanoseconds - start >= 40_000_000)
        }
    }

    @Test("an error rate answers that fraction 500/503, classified transient")
    func errorRate() async throws {
        let h = try await SandboxHarness(faults: SandboxFaults(serverErrorRate: 0.5))
        defer { Task { await h.stop() } }
        var statuses: [Int: Int] = [:]
        for _ in 0..<200 {
            let answer = try await h.whoami(h.subOrgs[1], signer: h.api)
            statuses[answer.status, default: 0] += 1
            if answer.status >= 500 {
                #expect(answer.classified.kind == .serverError && answer.classified.isTransient)
            }
        }
        let faults = (statuses[500] ?? 0) + (statuses[503] ?? 0)
        #expect((60...140).contains(faults), "\(statuses)")
        #expect(statuses[500] ?? 0 > 0 && statuses[503] ?? 0 > 0)
        #expect(faults + (statuses[200] ?? 0) == 200)
    }

    @Test("an outage window answers 503 UNAVAILABLE inside it and nothing outside")
    func outageWindow() async throws {
        let start = Int64(1_790_000_000_000)
        let h = try await SandboxHarness(
            faults: SandboxFaults(outages: [.init(startMillis: start + 1000, endMillis: start + 2000)]))
        defer { Task { await h.stop() } }
        #expect(try await h.whoami(h.subOrgs[1], signer: h.api).status == 200)
        h.time.advance(byMillis: 1000)
        let during = try await h.whoami(h.subOrgs[1], signer: h.api)
        #expect(during.status == 503 && during.errorCode == "UNAVAILABLE")
        h.time.advance(byMillis: 999)
        #expect(try await h.whoami(h.subOrgs[1], signer: h.api).status == 503)
        h.time.advance(byMillis: 1)
        #expect(try await h.whoami(h.subOrgs[1], signer: h.api).status == 200)
    }

    @Test("a rate limit answers 429 RATE_LIMIT_EXCEEDED with Retry-After, transient; it refills")
    func rateLimit() async throws {
        let h = try await SandboxHarness(faults: SandboxFaults(rateLimitRPS: 5, retryAfterSeconds: 1))
        defer { Task { await h.stop() } }
        for _ in 0..<5 { #expect(try await h.whoami(h.subOrgs[1], signer: h.api).status == 200) }
        let limited = try await h.whoami(h.subOrgs[1], signer: h.api)
        #expect(limited.status == 429)
        #expect(limited.errorCode == "RATE_LIMIT_EXCEEDED")
        #expect(limited.retryAfter == "1")
        #expect(limited.classified.kind == .rateLimited && limited.classified.isTransient)
        h.time.advance(byMillis: 1000)
        #expect(try await h.whoami(h.subOrgs[1], signer: h.api).status == 200)
        #expect(await h.sandbox.stats.rateLimited == 1)
    }

    @Test("a quota 429 is told apart from a rate limit and is not transient")
    func quota() async throws {
        let h = try await SandboxHarness(faults: SandboxFaults(quotaErrorRate: 1))
        defer { Task { await h.stop() } }
        let answer = try await h.whoami(h.subOrgs[1], signer: h.api)
        #expect(answer.status == 429)
        #expect(answer.errorCode == "QUOTA_EXCEEDED")
        #expect(answer.classified.kind == .quotaExceeded && !answer.classified.isTransient)
        // The client gives up at once: one request, no retry.
        let before = await h.sandbox.stats.requests
        await #expect(throws: TurnkeyError.self) {
            _ = try await h.client().whoami(organizationId: SandboxHarness.parent, signer: .apiKey(h.apiKey))
        }
        #expect(await h.sandbox.stats.requests == before + 1)
    }
}
