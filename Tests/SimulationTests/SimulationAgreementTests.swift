import Access
import BackupModel
import ConsoleService
import ConsoleStore
import Foundation
import Simulation
import Testing

/// Over a simulated population, `check`, `check --turnkey`, `cleanup ingest-log` and
/// `cleanup scan` agree with the ground truth exactly (precision and recall 1.0), and
/// `cleanup run --execute` deletes exactly the orphans.
@Suite(.timeLimit(.minutes(15))) struct SimulationAgreementTests {
    /// The big run: 10,000 users through 90 days with faults on. Opt in with
    /// `BACKUPCTL_BIG_SIMULATION=1` (it takes minutes in a debug build).
    static let big = ProcessInfo.processInfo.environment["BACKUPCTL_BIG_SIMULATION"] == "1"

    /// Rates high enough that every kind of leftover appears in a small world.
    static func faulty(users: Int, days: Int, seed: UInt64) -> SimulationOptions {
        SimulationOptions(
            users: users, days: days, seed: seed, turnkeyFaults: 0.2, turnkeyOutages: 0.12, serviceFaults: 0.05,
            lostDevices: 0.004, accountDeletions: 0.002, lostEverything: 0.001, factorAdds: 0.01, factorDeletes: 0.008,
            deviceAdds: 0.006, oldClients: 0.3, withoutBreakGlass: 0.3)
    }

    @Test func aFaultyMonthAgreesWithItsGroundTruth() async throws {
        let harness = try await AgreementHarness(Self.faulty(users: 400, days: 45, seed: 12))
        defer { Task { await harness.stop() } }
        try await harness.agree()
        let truth = harness.truth
        print(
            "orphans by step:", Dictionary(grouping: truth.orphans, by: \.step).mapValues(\.count),
            "findings:",
            Dictionary(grouping: truth.findings + truth.turnkeyFindings, by: { "\($0.check)/\($0.status)" }).mapValues(
                \.count),
            "drift:", Dictionary(grouping: truth.drift, by: \.kind).mapValues(\.count), "logged:", truth.logged.count,
            truth.counts.sorted { $0.key < $1.key })
        // Every kind of leftover the flows make shows up in this world.
        let checks = Set((truth.findings + truth.turnkeyFindings).map(\.check))
        for check in [
            "lookup_rows_unauthorized", "orphan_keys", "oidc_without_passkey", "turnkey_suborg", "turnkey_sync_keys",
        ] {
            #expect(checks.contains(check), "no \(check) finding in this world")
        }
        #expect(!truth.logged.isEmpty && truth.orphans.count > truth.logged.count)
        #expect(Set(truth.drift.map(\.kind)) == ["unauthorized_factor", "orphan_row"])
        await harness.stop()
    }

    @Test(.enabled(if: big)) func tenThousandUsersThroughNinetyDaysAgree() async throws {
        var options = SimulationOptions(users: 10_000, days: 90, seed: 2026, turnkeyOutages: 0.05, oldClients: 0.2)
        options.factorDeletes = 0.004
        let started = Date()
        let harness = try await AgreementHarness(options)
        print("simulated \(options.users)×\(options.days) in \(harness.report.elapsedSeconds) s")
        try await harness.agree()
        print("big agreement test: \(Date().timeIntervalSince(started)) s, \(harness.truth.orphans.count) orphans")
        await harness.stop()
    }
}

/// The same agreement when the users talk HTTP to `sandbox backup-service` and `sandbox turnkey`.
@Suite(.timeLimit(.minutes(15))) struct SimulationOverHTTPTests {
    @Test func aWorldMadeOverHTTPAgreesWithItsGroundTruth() async throws {
        let harness = try await AgreementHarness(
            SimulationAgreementTests.faulty(users: 60, days: 20, seed: 21), mode: .overHTTP)
        defer { Task { await harness.stop() } }
        #expect(harness.report.mode == "http" && harness.truth.backups.count > 40)
        try await harness.agree()
        await harness.stop()
    }
}

/// `sandbox simulate --tenant`: the world lands in a sandbox tenant, whose in-process Turnkey
/// answers from the stored sub-org state; the same agreement holds there.
@Suite(.timeLimit(.minutes(15))) struct SandboxTenantSimulationTests {
    @Test func aWorldLandedInASandboxTenantAgreesWithItsGroundTruth() async throws {
        let harness = try await AgreementHarness(
            SimulationAgreementTests.faulty(users: 150, days: 30, seed: 33), mode: .sandboxTenant)
        defer { Task { await harness.stop() } }
        #expect(harness.report.mode == "sandbox-tenant" && harness.report.tenant == "simbox")
        #expect(try await harness.remainingSubOrgs() == Set(harness.truth.subOrgs))
        let audit = try await harness.store.auditEntries(tenant: harness.tenant, afterSeq: 0, limit: 100)
        #expect(audit.contains { $0.action == "sandbox.simulate" && $0.details["users"] == "150" })
        try await harness.agree()
        await harness.stop()
    }

    @Test func onlyAnEmptySandboxTenantTakesAWorld() async throws {
        let harness = try await AgreementHarness(
            SimulationOptions(users: 20, days: 5, seed: 4), mode: .sandboxTenant)
        defer { Task { await harness.stop() } }
        let before = try await harness.store.backupCount(tenant: harness.tenant)
        do {
            _ = try await harness.perform(
                SandboxSimulateOperation(
                    tenant: harness.tenant.rawValue, options: SimulationOptions(users: 20, days: 5, seed: 5),
                    out: harness.out + "-again"))
            Issue.record("a second world landed on the first")
        } catch let error as ConsoleError {
            #expect(error.code == "tenant_not_empty", "\(error)")
        }
        #expect(try await harness.store.backupCount(tenant: harness.tenant) == before)
        // A live tenant is no sandbox.
        let access = AccessService(store: harness.store)
        let op = try await access.authenticate(token: try #require(harness.caller.token))
        try await access.createTenant(
            TenantRecord(
                name: try TenantName("prod"), isSandbox: false, turnkeyURL: "https://api.turnkey.com",
                turnkeyOrgId: "org", turnkeyAPIKeyFile: "/nonexistent/api", cleanupKeyFile: "/nonexistent/cleanup",
                createdAt: 0), by: op)
        do {
            _ = try await harness.perform(
                SandboxSimulateOperation(
                    tenant: "prod", options: SimulationOptions(users: 20, days: 5, seed: 5), out: harness.out + "-prod")
            )
            Issue.record("a world landed in a live tenant")
        } catch let error as ConsoleError {
            #expect(error.code == "not_sandbox", "\(error)")
        }
        await harness.stop()
    }
}
