import Access
import BackupModel
import BackupctlTestSupport
import ConsoleStore
import Foundation
import Testing
import Turnkey

@testable import Cleanup
@testable import TurnkeySandbox

@Suite("listing sub-orgs with the run's retry budget", .timeLimit(.minutes(10)))
struct ListingRetryTests {
    @Test(
        "20 consecutive scan + execute runs against 20% 5xx and 10% 429 (Retry-After: 1) all finish, every orphan deleted"
    )
    func twentyFlakyRuns() async throws {
        // 150 orphans and 12 backups' sub-orgs: two pages of list_suborgs per scan. The tenant's
        // policy is the default 3 attempts and the run's default budget; time is virtual.
        let faults = SandboxFaults(serverErrorRate: 0.2, rateLimitErrorRate: 0.1, retryAfterSeconds: 1)
        var resumedPages = 0
        for run in 0..<20 {
            let fixture = try await CleanupFixture(orphanCount: 150, faults: faults, sandboxSeed: UInt64(100 + run))
            defer { Task { await fixture.stop() } }
            let listCalls = ListCalls()
            let service = fixture.service(
                transport: HookTransport(inner: HTTPClientTransport()) { request throws(TurnkeyError) in
                    if request.path == TurnkeyWire.listSubOrgsPath { listCalls.add(request.body) }
                })
            let scan = try await service.scan(session: fixture.session, graceSeconds: 0)
            #expect(scan.listed == fixture.orphans.count + fixture.referenced.count, "run \(run)")
            let report = try await service.run(
                session: fixture.session,
                options: CleanupRunOptions(execute: true, max: 1000, concurrency: 4, graceSeconds: 0))
            #expect(report.failed == 0 && report.needsUser == 0, "run \(run)")
            #expect(report.deleted + report.alreadyGone == fixture.orphans.count, "run \(run)")
            #expect(try await fixture.listed() == Set(fixture.referenced), "run \(run)")
            resumedPages += listCalls.resumed
        }
        // The draws are seeded: the point of the test is that some pages did fail their three
        // attempts and were resumed rather than ending the run.
        #expect(resumedPages > 0)
        print("listing pages resumed across the 20 runs: \(resumedPages)")
    }

    @Test(
        "a page that fails all its attempts is asked for again from the last good cursor",
        arguments: TestBackend.available)
    func resumesFromCursor(backend: TestBackend) async throws {
        let fixture = try await CleanupFixture(orphanCount: 150, backend: backend)
        defer { Task { await fixture.stop() } }
        let listCalls = ListCalls()
        let service = fixture.service(
            transport: HookTransport(inner: HTTPClientTransport()) { request throws(TurnkeyError) in
                guard request.path == TurnkeyWire.listSubOrgsPath else { return }
                listCalls.add(request.body)
                // The second page fails its first five attempts: two whole calls of three, and
                // two attempts of the third.
                if listCalls.bodies.filter({ $0 == request.body }).count <= 5, listCalls.bodies.count > 1 {
                    throw TurnkeyError(.serverError, status: 503, message: "flaky")
                }
            })
        let scan = try await service.scan(session: fixture.session, graceSeconds: 0)
        #expect(scan.listed == fixture.orphans.count + fixture.referenced.count)
        // Page one, then page two: five failed attempts (a whole call of three, a resume, two more) and a success.
        #expect(listCalls.bodies.count == 7)
        // Every request for the second page is the same body: the same cursor.
        #expect(Set(listCalls.bodies.dropFirst()).count == 1)
        // Waits follow the policy: full jitter under the cap (no Retry-After here).
        // (The rate limiter may wait too: at least the five back-offs.)
        #expect(fixture.sleeps.all.count >= 5 && fixture.sleeps.all.allSatisfy { (0...2000).contains($0) })
    }

    @Test(
        "a listing that cannot finish says how far it got, exits 2 and deletes nothing",
        arguments: TestBackend.available)
    func listingGivesUp(backend: TestBackend) async throws {
        let fixture = try await CleanupFixture(orphanCount: 150, backend: backend)
        defer { Task { await fixture.stop() } }
        let listCalls = ListCalls()
        let service = fixture.service(
            transport: HookTransport(inner: HTTPClientTransport()) { request throws(TurnkeyError) in
                guard request.path == TurnkeyWire.listSubOrgsPath else { return }
                listCalls.add(request.body)
                if listCalls.bodies.count > 1 { throw TurnkeyError(.serverError, status: 500, message: "down") }
            })
        let before = try await fixture.listed()
        do {
            _ = try await service.run(
                session: fixture.session,
                options: CleanupRunOptions(execute: true, max: 1000, concurrency: 4, graceSeconds: 0))
            Issue.record("the run should have stopped")
        } catch {
            #expect(error.kind == .remote)
            #expect(error.message.contains("having listed 100 sub-orgs in 1 pages (6 resumed)"))
            #expect(error.message.contains("stopped after sub-org"))
            #expect(error.message.contains("nothing was deleted"))
        }
        // Bounded: three attempts a call, resumed at most SubOrgListing.maxResumes times.
        #expect(listCalls.bodies.count == 1 + 3 * (SubOrgListing.maxResumes + 1))
        #expect(try await fixture.listed() == before)
    }
}

/// The bodies of the `list_suborgs` requests, in order.
final class ListCalls: @unchecked Sendable {
    private let lock = NSLock()
    private var values: [[UInt8]] = []
    func add(_ body: [UInt8]) { lock.withLock { values.append(body) } }
    var bodies: [[UInt8]] { lock.withLock { values } }
    /// Pages asked for more often than one call's three attempts: resumed from their cursor.
    var resumed: Int {
        lock.withLock { Dictionary(grouping: values, by: { $0 }).values.filter { $0.count > 3 }.count }
    }
}
