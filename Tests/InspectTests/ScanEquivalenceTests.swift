import Access
import BackupCrypto
import BackupModel
import BackupctlTestSupport
import ConsoleStore
import Foundation
import Testing

@testable import Inspect

/// A tenant-wide `check` reads what the store derived at write time; `show` and
/// `check BACKUP_ID` read the full metadata. Both must give the same results.
@Suite struct ScanEquivalenceTests {
    /// The tenant checked the old way: every backup's full metadata and its index rows.
    func checkViaMetadata(_ t: TempStore, limit: Int) async throws -> CheckReport {
        let inspector = BackupInspector(store: t.store)
        var tally = CheckTally(limit: limit)
        try await t.store.forEachBackup(tenant: t.tenant, batchSize: 100) { page throws(ConsoleError) in
            for record in page {
                await tally.add(
                    backupId: record.backupId, HealthChecks.run(try inspector.healthInput(record, tenant: t.tenant)))
            }
        }
        return tally.report(scope: "tenant", tenant: t.tenant.rawValue)
    }

    /// A seeded tenant plus one backup for each kind of drift and damage the checks look at.
    func driftedTenant(_ backend: TestBackend) async throws -> TempStore {
        let t = try await TempStore(backend)
        _ = try await SandboxSeeder(store: t.store).run(
            tenant: t.session.tenant, backups: 250, orphans: 0, seed: 11, operatorName: "root")
        // Unauthorized rows (two) and a missing row.
        var a = try t.healthyMetadata(id: try t.backupId())
        a.factors.append(t.google("501"))
        try await t.write(a, rows: [a.lookupKeys[0].rawValue, "MAIN#PK|c3RhbGU", "MAIN#PK|b2xk"])
        // A factor another backup owns, and the same passkey twice in the metadata.
        var b = try t.healthyMetadata(id: try t.backupId())
        b.factors = [b.factors[0], b.factors[0], a.factors[0]]
        try await t.write(b, rows: [b.lookupKeys[3].rawValue])
        // Exported OIDC factor without sub, a bad and an off-kind sync factor, bad hash, no blob.
        var c = try t.healthyMetadata(id: try t.backupId())
        c.factors.append(
            t.factor(
                .oidcAccount(
                    OIDCAccountFactor(
                        account: OIDCAccount(provider: .apple, sub: nil, maskedEmail: nil), turnkeyProviderId: nil))))
        c.syncFactors.append(t.factor(.ecKeypair(publicKey: Base64.encode(try t.p256().compressed))))
        c.syncFactors.append(t.passkey(t.rng.bytes(16)))
        c.manifestHash = "xyz"
        c.keys.append(.icloud(encryptedKey: "ff"))
        try await t.write(c, blob: nil)
        // A dangling row (its backup does not exist) must not count against any backup.
        try await t.writeRows([LookupRow(pk: "MAIN#PK|Z2hvc3Q", backupId: try t.backupId())])
        return t
    }

    @Test(arguments: TestBackend.available) func tenantScanEqualsCheckingEveryBackupsMetadata(backend: TestBackend)
        async throws
    {
        let t = try await driftedTenant(backend)
        for limit in [5, 10_000] {
            let expected = try await checkViaMetadata(t, limit: limit)
            #expect(expected.backups == 253)
            #expect(expected.findingsTotal > 10, "the crafted tenant must have findings")
            for (batch, workers) in [(1000, 2), (7, 3), (1, 1)] {
                let scan = HealthScan(store: t.store, batchSize: batch, findingLimit: limit, workers: workers)
                await #expect(try scan.scan(tenant: t.tenant) == expected, "batch \(batch)")
            }
        }
    }

    @Test(arguments: TestBackend.available) func everyBackupsInputIsTheSameEitherWay(backend: TestBackend) async throws
    {
        let t = try await driftedTenant(backend)
        let inspector = BackupInspector(store: t.store)
        var seen = 0
        try await t.store.forEachBackupHealth(tenant: t.tenant, batchSize: 13) { page throws(ConsoleError) in
            for row in page {
                seen += 1
                guard let record = try await t.store.backup(tenant: t.tenant, id: row.summary.backupId) else {
                    Issue.record("missing \(row.summary.backupId)")
                    continue
                }
                let viaMetadata = try await inspector.healthInput(record, tenant: t.tenant)
                #expect(HealthInput(row) == viaMetadata)
                #expect(HealthChecks.run(HealthInput(row)) == HealthChecks.run(viaMetadata))
            }
        }
        #expect(seen == 253)
    }

    @Test(arguments: TestBackend.available) func statsFromSummariesMatchTheMetadata(backend: TestBackend) async throws {
        let t = try await driftedTenant(backend)
        let stats = try await StatsService(store: t.store).stats(session: t.session)
        var mixes: [String: Int] = [:]
        var withSubOrg = 0
        try await t.store.forEachBackup(tenant: t.tenant, batchSize: 100) { page throws(ConsoleError) in
            for record in page {
                let kinds = Set(
                    record.metadata.factors.map { factor -> String in
                        switch factor.kind {
                        case .passkey: "passkey"
                        case .oidcAccount: "oidc"
                        case .ecKeypair: "keychain"
                        }
                    })
                mixes[kinds.isEmpty ? "none" : kinds.sorted().joined(separator: "+"), default: 0] += 1
                if !record.metadata.turnkeySubOrgIds.isEmpty { withSubOrg += 1 }
            }
        }
        #expect(Dictionary(uniqueKeysWithValues: stats.factorMix.map { ($0.label, $0.backups) }) == mixes)
        #expect(stats.backupsWithSubOrg == withSubOrg)
    }
}
