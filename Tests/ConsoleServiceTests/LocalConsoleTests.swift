import Access
import BackupCrypto
import BackupModel
import BackupctlTestSupport
import ConsoleService
import ConsoleStore
import Foundation
import Inspect
import Testing

/// The in-process service layer: who the caller is, which tenant they act in, and how long a
/// session read from the store is trusted (by the injected clock, not the process's).
@Suite struct LocalConsoleTests {
    struct Fixture {
        let time = ManualTime(1_800_000_000_000)
        let console: LocalConsole
        let opened: OpenedStore
        var store: any FullConsoleStore { opened.store }
        let admin: SecretBytes

        /// A console over a store of `backend`.
        init(_ backend: TestBackend = .sqlite) async throws {
            let clock = WallClock.manual(time)
            opened = try await backend.open(clock: clock.millis)
            admin = try await AccessService(store: opened.store, clock: clock).bootstrap(
                admin: try OperatorName("root"))
            console = LocalConsole(store: opened.store, path: opened.location, clock: clock)
        }

        /// The store goes with the fixture (``OpenedStore``).
        func cleanUp() {}

        func session(_ token: SecretBytes) async throws -> Session {
            let access = AccessService(store: store, clock: .manual(time))
            return try await access.session(
                operator: try await access.authenticate(token: token), tenant: try TenantName("sandbox"))
        }
    }

    @Test(arguments: TestBackend.available)
    func noTokenAndUnknownTokenAreRefusedAsUnauthenticated(backend: TestBackend) async throws {
        let fixture = try await Fixture(backend)
        defer { fixture.cleanUp() }
        do {
            _ = try await fixture.console.perform(WhoamiOperation(), as: Caller(token: nil, tenant: nil))
            Issue.record("a call without a token was accepted")
        } catch {
            #expect(error.code == "missing_token")
            #expect(Wire.status(for: error.kind, code: error.code) == 401)
        }
        do {
            let stranger = SecretBytes(Array(("bctl_" + String(repeating: "A", count: 43)).utf8))
            _ = try await fixture.console.perform(WhoamiOperation(), as: Caller(token: stranger, tenant: nil))
            Issue.record("an unknown token was accepted")
        } catch {
            #expect(error.code == "invalid_token")
            #expect(Wire.status(for: error.kind, code: error.code) == 401)
        }
    }

    /// A viewer `bob` added by root, his caller, and root's access service to change him with.
    func viewerBob(_ fixture: Fixture) async throws -> (AccessService, Session, Caller) {
        let access = AccessService(store: fixture.store, clock: .manual(fixture.time))
        let rootSession = try await fixture.session(fixture.admin)
        let bob = try await access.addOperator(try OperatorName("bob"), role: .viewer, session: rootSession)
        return (access, rootSession, Caller(token: bob, tenant: "sandbox"))
    }

    @Test(arguments: TestBackend.available)
    func aRevokedRoleStopsWorkingOnTheNextCall(backend: TestBackend) async throws {
        let fixture = try await Fixture(backend)
        defer { fixture.cleanUp() }
        let (access, rootSession, caller) = try await viewerBob(fixture)
        #expect(try await fixture.console.perform(StatsOperation(), as: caller).tenant == "sandbox")
        try await access.revoke(try OperatorName("bob"), session: rootSession)
        // The revocation went around this console (straight to the store): its cached session
        // is retired by the store's access version, with no time passing.
        do {
            _ = try await fixture.console.perform(StatsOperation(), as: caller)
            Issue.record("a revoked grant still worked")
        } catch {
            #expect(error.code == "permission_denied")
            #expect(Wire.status(for: error.kind, code: error.code) == 403)
        }
    }

    /// A run of reads with one access check around it (a script's read-ahead): the reads take
    /// the version read before them, and a change made between two of them is reported after,
    /// so their answers are dropped and the next call, checked on its own, is refused.
    @Test(arguments: TestBackend.available)
    func oneAccessCheckAroundReadsReportsAChangeAmongThem(backend: TestBackend) async throws {
        let fixture = try await Fixture(backend)
        defer { fixture.cleanUp() }
        let (access, rootSession, caller) = try await viewerBob(fixture)
        let console = fixture.console
        let quiet = await console.withOneAccessCheck {
            (try? await console.perform(StatsOperation(), as: caller).tenant) ?? "refused"
        }
        #expect(quiet.value == "sandbox" && quiet.unchanged)

        let changed = await console.withOneAccessCheck { () -> [String] in
            var tenants = [(try? await console.perform(StatsOperation(), as: caller).tenant) ?? "refused"]
            try? await access.revoke(try OperatorName("bob"), session: rootSession)
            // Still the version read before the run: the check after it is what catches this.
            tenants.append((try? await console.perform(StatsOperation(), as: caller).tenant) ?? "refused")
            return tenants
        }
        #expect(changed.value == ["sandbox", "sandbox"])
        #expect(!changed.unchanged)
        do {
            _ = try await console.perform(StatsOperation(), as: caller)
            Issue.record("a revoked grant still worked after the run")
        } catch {
            #expect(error.code == "permission_denied")
        }
        // A refusal inside a run is reported as such, and a run with no change says so.
        let after = await console.withOneAccessCheck {
            (try? await console.perform(StatsOperation(), as: caller).tenant) ?? "refused"
        }
        #expect(after.value == "refused" && after.unchanged)
    }

    /// The lookups named to a run (a script's read-ahead) are read together, once, at the
    /// first of them: a row changed after it is not seen by the rest of the run; a run that
    /// names none reads each lookup when it is made.
    @Test(arguments: TestBackend.available)
    func theLookupsOfARunAreReadTogether(backend: TestBackend) async throws {
        let fixture = try await Fixture(backend)
        defer { fixture.cleanUp() }
        let console = fixture.console
        let caller = Caller(token: fixture.admin, tenant: "sandbox")
        let session = try await fixture.session(fixture.admin)
        let key = { (sub: String) in "MAIN#OIDC|https://accounts.google.com|\(sub)" }
        func point(_ sub: String, at backup: String) async throws {
            try await fixture.store.writeLookupRows(
                tenant: session.tenantName, [LookupRow(pk: key(sub), backupId: backup)],
                audit: session.audit("test.rows"))
        }
        let lookups = ["1", "2"].map { LookupOperation(.oidc(provider: "google", sub: $0)) }
        func answer(_ operation: LookupOperation) async -> String {
            do {
                return try await console.perform(operation, as: caller).backupId
            } catch {
                // A dangling row's refusal names the backup it points at.
                return ["ghost-a", "ghost-b", "ghost-c"].first { error.message.contains($0) } ?? error.code
            }
        }
        try await point("1", at: "ghost-a")
        try await point("2", at: "ghost-a")
        let together = await console.withOneAccessCheck(reading: lookups) { () -> [String] in
            let first = await answer(lookups[0])
            try? await point("2", at: "ghost-b")
            return [first, await answer(lookups[1])]
        }
        #expect(together.value == ["ghost-a", "ghost-a"])
        let apart = await console.withOneAccessCheck { () -> [String] in
            let first = await answer(lookups[0])
            try? await point("2", at: "ghost-c")
            return [first, await answer(lookups[1])]
        }
        #expect(apart.value == ["ghost-a", "ghost-c"])
    }

    /// Without `--tenant`, an operator whose last grant was revoked is refused as one (403, exit
    /// 77), not told to name a tenant: none would let them in.
    @Test(arguments: TestBackend.available)
    func anOperatorWithNoRoleLeftIsRefusedEvenWithoutATenant(backend: TestBackend) async throws {
        let fixture = try await Fixture(backend)
        defer { fixture.cleanUp() }
        let (access, rootSession, caller) = try await viewerBob(fixture)
        try await access.revoke(try OperatorName("bob"), session: rootSession)
        let anyTenant = Caller(token: caller.token, tenant: nil)
        do {
            _ = try await fixture.console.perform(StatsOperation(), as: anyTenant)
            Issue.record("an operator without a role got a session")
        } catch {
            #expect(error.kind == .permissionDenied && error.code == "permission_denied")
            #expect(Wire.status(for: error.kind, code: error.code) == 403)
            #expect(error.message.contains("no role in any tenant"))
        }
    }

    @Test(arguments: TestBackend.available)
    func aRemovedOperatorIsRefusedOnTheNextCall(backend: TestBackend) async throws {
        let fixture = try await Fixture(backend)
        defer { fixture.cleanUp() }
        let (access, rootSession, caller) = try await viewerBob(fixture)
        _ = try await fixture.console.perform(StatsOperation(), as: caller)
        try await access.removeOperator(try OperatorName("bob"), session: rootSession)
        // Authentication is never cached: no clock movement needed.
        do {
            _ = try await fixture.console.perform(StatsOperation(), as: caller)
            Issue.record("a removed operator's token still worked")
        } catch {
            #expect(error.code == "invalid_token")
        }
    }

    @Test(arguments: TestBackend.available)
    func theTenantIsTheChosenOneOrTheOnlyOne(backend: TestBackend) async throws {
        let fixture = try await Fixture(backend)
        defer { fixture.cleanUp() }
        let only = try await fixture.console.perform(WhoamiOperation(), as: Caller(token: fixture.admin, tenant: nil))
        #expect(only.tenant == "sandbox")
        do {
            _ = try await fixture.console.perform(
                StatsOperation(), as: Caller(token: fixture.admin, tenant: "sandbx"))
            Issue.record("an unknown tenant was accepted")
        } catch {
            #expect(error.kind == .permissionDenied || error.kind == .notFound)
            #expect(error.message.contains("did you mean 'sandbox'"))
        }
        let chosen = try await fixture.console.perform(
            UseOperation(tenant: "sandbox"), as: Caller(token: fixture.admin, tenant: nil))
        #expect(chosen.role == "admin")
    }

    @Test(arguments: TestBackend.available)
    func cancellingTheCallerStopsALongJobWithInterrupted(backend: TestBackend) async throws {
        let fixture = try await Fixture(backend)
        defer { fixture.cleanUp() }
        let caller = Caller(token: fixture.admin, tenant: "sandbox")
        let session = try await fixture.session(fixture.admin)
        _ = try await DataAdminService(store: fixture.store).seed(backups: 3_000, orphans: 0, seed: 4, session: session)
        // The job's task is cancelled at its first progress report: a checkpoint, not a delay.
        let console = fixture.console
        let handle = CancelAtCheckpoint()
        let job = Task { () async throws -> CheckReport in
            try await console.perform(
                CheckOperation(backupId: nil, filter: FindingFilter(), limit: 10), as: caller,
                progress: { _ in handle.reached() })
        }
        handle.attach(job)
        do {
            _ = try await job.value
            Issue.record("the cancelled check finished")
        } catch let error as ConsoleError {
            #expect(error.code == "interrupted")
        }
    }
}

/// Cancels a task when a job reaches its checkpoint, even if that happens before the task is
/// attached (the cancel then happens on attach).
final class CancelAtCheckpoint: @unchecked Sendable {
    private let lock = NSLock()
    private var cancel: (@Sendable () -> Void)?
    private var wanted = false

    func attach<T>(_ task: Task<T, any Error>) {
        let now = lock.withLock {
            cancel = { task.cancel() }
            return wanted
        }
        if now { task.cancel() }
    }

    func reached() {
        let action = lock.withLock {
            wanted = true
            return cancel
        }
        action?()
    }
}

/// What a server answers is bounded before the console shows it.
@Suite struct WireErrorTests {
    @Test func aHostileServersCodeAndMessageAreBounded() throws {
        let body =
            #"{"error":{"code":"evil\u001b[2J","kind":"remote","message":"\#(String(repeating: "x", count: 5000))"}}"#
        let error = try JSONDecoder().decode(Wire.ErrorDocument.self, from: Data(body.utf8)).error.consoleError
        #expect(error.code == "server_error" && error.kind == .remote)
        #expect(error.message.count == 2001)
        let fine = Wire.ErrorBody(ConsoleError(.notFound, code: "not_found", "No backup.")).consoleError
        #expect(fine == ConsoleError(.notFound, code: "not_found", "No backup."))
    }
}
