import Access
import BackupCrypto
import BackupModel
import BackupctlTestSupport
import ConsoleStore
import Foundation
import Testing

@testable import Inspect

@Suite struct ReportTests {
    @Test(arguments: TestBackend.available) func showListsEverythingButKeyBytes(backend: TestBackend) async throws {
        let t = try await TempStore(backend)
        let id = try t.backupId()
        var metadata = try t.healthyMetadata(id: id)
        metadata.factors.append(t.google("1045"))
        metadata.keys.append(t.turnkeyKey(subOrg: "suborg-1"))
        metadata.keys = metadata.keys.map { key in
            switch key {
            case .prf: .prf(encryptedKey: "5ec7e75ec7e7")
            case .turnkey(var k):
                {
                    k.encryptedKey = "5ec7e75ec7e8"
                    return .turnkey(k)
                }()
            case .icloud: key
            }
        }
        try await t.write(metadata)
        let report = try await BackupInspector(store: t.store).show(backupId: id, session: t.session)
        #expect(report.backupId == id)
        #expect(report.factors.map(\.kind) == ["PASSKEY", "OIDC_ACCOUNT"])
        #expect(report.factors[1].provider == "GOOGLE")
        #expect(report.factors[1].maskedEmail == "j***@gmail.com")
        #expect(report.factors.allSatisfy { $0.indexed && $0.created == "2026-05-28T20:26:40Z" })
        #expect(report.syncFactors.first?.publicKeyFingerprint?.hasPrefix("sha256:") == true)
        #expect(report.keys.map(\.kind) == ["PRF", "TURNKEY"])
        #expect(report.keys[1].turnkeyAccountId == "suborg-1")
        #expect(report.turnkeySubOrgIds == ["suborg-1"])
        #expect(report.sealedBlob.bytes == 2048)
        #expect(report.sealedBlob.sha256 == SHA256.hex(Array(repeating: UInt8(7), count: 2048)))

        let json = report.jsonLine()
        #expect(!json.contains("5ec7e7"))
        #expect(!json.contains("encryptedKey"))
        #expect(!json.contains("1045"), "the OIDC sub stays out of show")
        for field in [
            "backupId", "manifestHash", "factors", "syncFactors", "keys", "turnkeySubOrgIds", "sealedBlob", "health",
        ] {
            #expect(json.contains("\"\(field)\":"))
        }
        #expect(!json.contains("\n"))
        // Sorted keys, so the same report always encodes to the same bytes.
        let decoded = try JSONDecoder().decode(BackupReport.self, from: Data(json.utf8))
        #expect(decoded == report)
        #expect(decoded.jsonLine() == json)
        let object = try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any]
        #expect(Array(object?.keys ?? [:].keys).sorted() == (object?.keys).map { Array($0).sorted() } ?? [])
        #expect(json.hasPrefix("{\"backupId\":"))
    }

    @Test(arguments: TestBackend.available) func showWithoutBlobHasNullBlobFields(backend: TestBackend) async throws {
        let t = try await TempStore(backend)
        let id = try t.backupId()
        try await t.write(try t.healthyMetadata(id: id), blob: nil)
        let report = try await BackupInspector(store: t.store).show(backupId: id, session: t.session)
        #expect(report.jsonLine().contains("\"sealedBlob\":{\"bytes\":null,\"sha256\":null}"))
    }

    @Test(arguments: TestBackend.available) func showIsAuditedAndChecksTheId(backend: TestBackend) async throws {
        let t = try await TempStore(backend)
        let id = try t.backupId()
        try await t.write(try t.healthyMetadata(id: id))
        let inspector = BackupInspector(store: t.store)
        _ = try await inspector.show(backupId: id, session: t.session)
        let entries = try await t.audit("backup.show")
        #expect(entries.count == 1)
        #expect(entries[0].target == id)
        #expect(entries[0].details["health"] == "ok")
        #expect(
            await consoleError { _ = try await inspector.show(backupId: "nope", session: t.session) }?.code
                == "invalid_backup_account_id")
        #expect(
            await consoleError { _ = try await inspector.show(backupId: try t.backupId(), session: t.session) }?.code
                == "not_found"
        )
        await #expect(try t.audit("backup.show").count == 1)
    }

    @Test(arguments: TestBackend.available) func checkOneBackup(backend: TestBackend) async throws {
        let t = try await TempStore(backend)
        let id = try t.backupId()
        var metadata = try t.healthyMetadata(id: id)
        metadata.manifestHash = "short"
        try await t.write(metadata)
        let report = try await HealthScan(store: t.store).check(backupId: id, session: t.session)
        #expect(report.scope == "backup")
        #expect(report.backups == 1)
        #expect(report.backupsFailing == 1)
        #expect(report.findings.map(\.check) == ["manifest_hash"])
        await #expect(try t.audit("backup.check").first?.target == id)
    }

    @Test(arguments: TestBackend.available) func checkSeededTenantStreams(backend: TestBackend) async throws {
        let t = try await TempStore(backend)
        let seeded = try await SandboxSeeder(store: t.store).run(
            tenant: t.session.tenant, backups: 300, orphans: 0, seed: 5, operatorName: "root")
        // Two crafted problems on top of the seeder's ~2% drift.
        let id = try t.backupId()
        try await t.write(try t.healthyMetadata(id: id), blob: nil)
        let scan = HealthScan(store: t.store, batchSize: 7, findingLimit: 5, workers: 3)
        let report = try await scan.check(backupId: nil, session: t.session)
        #expect(report.scope == "tenant")
        #expect(report.backups == 301)
        #expect(report.summary.map(\.check) == HealthCheckName.allCases.map(\.rawValue))
        #expect(report.summary.allSatisfy { $0.ok + $0.warn + $0.fail == 301 })
        let blob = report.summary.first { $0.check == "sealed_blob" }
        #expect(blob?.fail == 1)
        let drift = report.summary.filter { $0.check.hasPrefix("lookup_rows") }.reduce(0) { $0 + $1.warn + $1.fail }
        #expect(drift == seeded.driftedBackups)
        #expect(report.findings.count == min(5, report.findingsTotal))
        #expect(report.findingsOmitted == report.findingsTotal - report.findings.count)
        #expect(report.findings.map(\.backupId) == report.findings.map(\.backupId).sorted())
        // Deterministic whatever the interleaving of workers.
        let again = try await HealthScan(store: t.store, batchSize: 50, findingLimit: 5, workers: 1).scan(
            tenant: t.tenant)
        #expect(again == report)
        await #expect(try t.audit("backup.check").first?.details["backups"] == "301")
    }

    @Test(arguments: TestBackend.available) func statsOverSeededTenant(backend: TestBackend) async throws {
        let t = try await TempStore(backend)
        _ = try await SandboxSeeder(store: t.store).run(
            tenant: t.session.tenant, backups: 200, orphans: 3, seed: 9, operatorName: "root")
        let stats = try await StatsService(store: t.store).stats(session: t.session)
        #expect(stats.backups == 200)
        #expect(stats.factorMix.reduce(0) { $0 + $1.backups } == 200)
        #expect(stats.factorMix.map(\.backups) == stats.factorMix.map(\.backups).sorted(by: >))
        #expect(stats.devices.map(\.label) == TenantStats.deviceLabels)
        #expect(stats.devices.reduce(0) { $0 + $1.backups } == 200)
        #expect(stats.devices[0].backups == 0)
        #expect(stats.blobSizes.reduce(0) { $0 + $1.backups } == 200)
        #expect(stats.subOrgsReferenced > 0)
        #expect(stats.backupsWithSubOrg > 0)
        await #expect(try t.audit("backup.stats").count == 1)
    }
}
