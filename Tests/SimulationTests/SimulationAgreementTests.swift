import Foundation
import Simulation
import Testing

/// Over a simulated population, `check`, `check --turnkey`, `cleanup ingest-log` and
/// `cleanup scan` agree with the ground truth exactly (precision and recall 1.0), and
/// `cleanup run --execute` deletes exactly the orphans.
@Suite struct SimulationAgreementTests {
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
@Suite struct SimulationOverHTTPTests {
    @Test func aWorldMadeOverHTTPAgreesWithItsGroundTruth() async throws {
        let harness = try await AgreementHarness(
            SimulationAgreementTests.faulty(users: 60, days: 20, seed: 21), overHTTP: true)
        defer { Task { await harness.stop() } }
        #expect(harness.report.mode == "http" && harness.truth.backups.count > 40)
        try await harness.agree()
        await harness.stop()
    }
}
