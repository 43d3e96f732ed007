import BackupCrypto
import BackupModel
import BackupctlTestSupport
import Foundation
import SQLiteStore
import Testing

@testable import ConsoleStore

@Suite("Sandbox seeding")
struct SeederTests {
    func seeder(_ store: SQLiteConsoleStore) -> SandboxSeeder {
        var seeder = SandboxSeeder(store: store) { 1_780_000_000 }
        seeder.batchSize = 64
        return seeder
    }

    func allBackupIds(_ store: SQLiteConsoleStore, _ tenant: TenantName) async throws -> [String] {
        var ids: [String] = []
        try await store.forEachBackup(tenant: tenant, batchSize: 500) { ids += $0.map(\.backupId) }
        return ids
    }

    @Test func sameSeedSameBackups() async throws {
        let first = try await withStore { store, _ in
            let sandbox = try #require(try await store.tenant(beta))
            let report = try await seeder(store).run(
                tenant: sandbox, backups: 40, orphans: 3, seed: 7, operatorName: "tester")
            #expect(report.backups == 40 && report.orphanSubOrgs == 3)
            return try await allBackupIds(store, beta)
        }
        let second = try await withStore { store, _ in
            let sandbox = try #require(try await store.tenant(beta))
            _ = try await seeder(store).run(tenant: sandbox, backups: 40, orphans: 3, seed: 7, operatorName: "tester")
            return try await allBackupIds(store, beta)
        }
        let other = try await withStore { store, _ in
            let sandbox = try #require(try await store.tenant(beta))
            _ = try await seeder(store).run(tenant: sandbox, backups: 40, orphans: 0, seed: 8, operatorName: "tester")
            return try await allBackupIds(store, beta)
        }
        // In batches of 7, each built while the one before is written: the same backups.
        let batched = try await withStore { store, _ in
            let sandbox = try #require(try await store.tenant(beta))
            var small = seeder(store)
            small.batchSize = 7
            var ends: [Int] = []
            _ = try await small.run(tenant: sandbox, backups: 40, orphans: 3, seed: 7, operatorName: "tester") {
                ends.append($0)
            }
            #expect(ends == [7, 14, 21, 28, 35, 40])
            return try await allBackupIds(store, beta)
        }
        #expect(first.count == 40 && first == second && first == batched)
        #expect(Set(first).isDisjoint(with: other))
    }

    @Test func reRunAddsAndAuditsOnlyNewBackups() async throws {
        try await withStore { store, _ in
            let sandbox = try #require(try await store.tenant(beta))
            let first = try await seeder(store).run(
                tenant: sandbox, backups: 40, orphans: 0, seed: 7, operatorName: "tester")
            #expect(first.backups == 40 && first.existing == 0)
            let before = try await store.auditEntries(tenant: beta, afterSeq: 0, limit: 1000).count
            let again = try await seeder(store).run(
                tenant: sandbox, backups: 40, orphans: 0, seed: 7, operatorName: "tester")
            #expect(again.backups == 0 && again.existing == 40 && again.lookupRows == 0)
            let added = try await store.auditEntries(tenant: beta, afterSeq: 0, limit: 1000).dropFirst(before)
            #expect(added.map(\.action) == ["seed"])
            #expect(added.first?.details["backups"] == "0" && added.first?.details["existing"] == "40")
            // Growing the same seed adds only the backups past the first run's.
            let grown = try await seeder(store).run(
                tenant: sandbox, backups: 100, orphans: 0, seed: 7, operatorName: "tester")
            #expect(grown.backups == 60 && grown.existing == 40)
            let counts = try await store.auditEntries(tenant: beta, afterSeq: 0, limit: 1000).filter {
                $0.action == "seed.backups"
            }.map { $0.details["count"] }
            #expect(counts == ["40", "24", "36"])
            #expect(try await store.backupCount(tenant: beta) == 100)
        }
    }

    @Test func refusesProductionTenants() async throws {
        try await withStore { store, _ in
            let production = try #require(try await store.tenant(alpha))
            let error = await #expect(throws: ConsoleError.self) {
                try await seeder(store).run(tenant: production, backups: 1, orphans: 0, seed: 1, operatorName: "tester")
            }
            #expect(error?.code == "not_sandbox" && error?.kind == .invalidInput)
            #expect(try await store.backupCount(tenant: alpha) == 0)
        }
    }

    @Test("a seed the store's disk cannot hold is refused before anything is written")
    func refusesASeedTheDiskCannotHold() async throws {
        try await withStore { store, _ in
            let sandbox = try #require(try await store.tenant(beta))
            let free = try #require(store.availableBytes())
            #expect(free > 0)
            // All but 100,000 backups' worth of the disk kept spare: ten million do not fit, ten do.
            var tight = seeder(store)
            tight.spareBytes = free - 100_000 * SandboxSeeder.bytesPerBackup
            let auditBefore = try await store.auditEntries(tenant: nil, afterSeq: 0, limit: 1000)
            let error = await #expect(throws: ConsoleError.self) {
                try await tight.run(tenant: sandbox, backups: 10_000_000, orphans: 0, seed: 1, operatorName: "tester")
            }
            #expect(error?.code == "insufficient_space" && error?.kind == .conflict)
            #expect(
                error?.message.hasPrefix("Seeding 10000000 backups needs about 245 GB on the store's disk") == true,
                "\(error?.message ?? "")")
            // Orphans count too: a sub-org row each.
            let orphans = await #expect(throws: ConsoleError.self) {
                try await tight.run(tenant: sandbox, backups: 0, orphans: 10_000_000, seed: 1, operatorName: "tester")
            }
            #expect(orphans?.message.hasPrefix("Seeding 0 backups and 10000000 orphans needs about 5120 MB") == true)
            #expect(try await store.backupCount(tenant: beta) == 0)
            #expect(try await store.auditEntries(tenant: nil, afterSeq: 0, limit: 1000) == auditBefore)
            let report = try await tight.run(tenant: sandbox, backups: 10, orphans: 0, seed: 1, operatorName: "tester")
            #expect(report.backups == 10)
        }
        #expect(SandboxSeeder.size(9_999_999_999) == "9999 MB" && SandboxSeeder.size(-5) == "0 MB")
    }

    @Test("while a seed writes to a store, another is refused before writing; the claim ends with its seed")
    func oneSeedAtATimePerStore() async throws {
        try await withStore { store, _ in
            let sandbox = try #require(try await store.tenant(beta))
            let held = try SeedClaims.shared.claim(
                store, SeedClaims.Running(tenant: "beta", operatorName: "alice", since: 1_780_000_000))
            let auditBefore = try await store.auditEntries(tenant: nil, afterSeq: 0, limit: 1000)
            let error = await #expect(throws: ConsoleError.self) {
                try await seeder(store).run(tenant: sandbox, backups: 5, orphans: 0, seed: 1, operatorName: "tester")
            }
            #expect(error?.code == "seed_running" && error?.kind == .conflict)
            #expect(
                error?.message.contains("(into beta, by alice, since 2026-05-28T") == true, "\(error?.message ?? "")")
            #expect(try await store.backupCount(tenant: beta) == 0)
            #expect(try await store.auditEntries(tenant: nil, afterSeq: 0, limit: 1000) == auditBefore)
            // Another store of the process is its own.
            try await withStore { other, _ in
                let report = try await seeder(other).run(
                    tenant: try #require(try await other.tenant(beta)), backups: 2, orphans: 0, seed: 1,
                    operatorName: "tester")
                #expect(report.backups == 2)
            }
            SeedClaims.shared.release(held)
            // A seed that fails part-way (its progress stops it) lets the next one run.
            let stopped = await #expect(throws: ConsoleError.self) {
                try await seeder(store).run(tenant: sandbox, backups: 200, orphans: 0, seed: 1, operatorName: "tester")
                {
                    _ throws(ConsoleError) in throw ConsoleError.internalError("stopped")
                }
            }
            #expect(stopped?.message == "stopped")
            let report = try await seeder(store).run(
                tenant: sandbox, backups: 200, orphans: 0, seed: 1, operatorName: "tester")
            #expect(report.backups + report.existing == 200)
        }
    }

    @Test("orphans go in batches of 10,000, each audited, and are the stream's ids in order")
    func orphansInBatches() async throws {
        try await withStore { store, _ in
            let sandbox = try #require(try await store.tenant(beta))
            let count = SandboxSeeder.orphanBatch + 1
            let report = try await seeder(store).run(
                tenant: sandbox, backups: 0, orphans: count, seed: 9, operatorName: "tester")
            #expect(report.orphanSubOrgs == count)
            let rng = SeededRandom(seed: SyntheticBackup.streamSeed(9, UInt64.max))
            let expected = Set((0..<count).map { _ in rng.uuid() })
            var listed: Set<String> = []
            try await store.forEachSandboxSubOrg(tenant: beta, batchSize: 5000) { listed.formUnion($0) }
            #expect(listed == expected)
            let entries = try await store.auditEntries(tenant: beta, afterSeq: 0, limit: 100)
                .filter { $0.action == "seed.orphans" }
            #expect(entries.map { [$0.details["from"], $0.details["count"]] } == [["0", "10000"], ["10000", "1"]])
        }
    }

    @Test func dataIsRealisticOrphansUnreferencedAndDriftPresent() async throws {
        try await withStore { store, _ in
            let sandbox = try #require(try await store.tenant(beta))
            let report = try await seeder(store).run(
                tenant: sandbox, backups: 600, orphans: 25, seed: 2026, operatorName: "tester")
            #expect(report.driftedBackups > 0 && report.driftedBackups < 40)

            var referenced: Set<String> = []
            try await store.forEachReferencedSubOrg(tenant: beta, batchSize: 100) { referenced.formUnion($0) }
            var listed: Set<String> = []
            try await store.forEachSandboxSubOrg(tenant: beta, batchSize: 100) { listed.formUnion($0) }
            #expect(referenced.count == report.referencedSubOrgs && !referenced.isEmpty)
            #expect(listed.count == referenced.count + 25)
            let orphans = listed.subtracting(referenced)
            #expect(orphans.count == 25)
            for orphan in orphans { #expect(try await store.subOrgReference(tenant: beta, subOrgId: orphan) == nil) }

            var drift = 0
            var kinds: [String: Int] = [:]
            try await store.forEachBackup(tenant: beta, batchSize: 200) { page throws(ConsoleError) in
                for record in page {
                    // Ids are real Backup Account IDs: a point on secp256k1.
                    try BackupAccountKey.validate(try BackupAccountID(record.backupId))
                    // Only what the service's flows make: one main factor, or a passkey and an
                    // OIDC account added to it; so at most one encryption key of each kind.
                    let main = record.metadata.factors.map(\.kind.tag).sorted()
                    #expect(
                        [["PASSKEY"], ["OIDC_ACCOUNT"], ["EC_KEYPAIR"], ["OIDC_ACCOUNT", "PASSKEY"]].contains(main),
                        "\(main)")
                    let keyKinds = record.metadata.keys.map(\.tag)
                    #expect(Set(keyKinds).count == keyKinds.count && keyKinds.count == main.count, "\(keyKinds)")
                    let implied = Set(record.metadata.lookupKeys.map(\.rawValue))
                    let indexed = Set(try await store.lookupRows(tenant: beta, backupId: record.backupId).map(\.pk))
                    if implied != indexed { drift += 1 }
                    for factor in record.metadata.factors + record.metadata.syncFactors {
                        kinds[factor.kind.tag, default: 0] += 1
                        if case .ecKeypair(let key) = factor.kind {
                            let bytes = Base64.decode(key, alphabet: .standard) ?? []
                            #expect(bytes.count == 65 && P256.isValidPublicKey(bytes))
                        }
                    }
                    let blob = try await store.sealedBlob(tenant: beta, backupId: record.backupId)
                    #expect(blob.map { Hex.encode(SHA256.hash($0)) } == record.blobSHA256)
                    #expect((1024...65536).contains(record.blobSize ?? 0))
                }
            }
            #expect(drift == report.driftedBackups)
            #expect(
                (kinds["PASSKEY"] ?? 0) > 300 && (kinds["OIDC_ACCOUNT"] ?? 0) > 100 && (kinds["EC_KEYPAIR"] ?? 0) > 600)
            // One audit entry per batch, not per backup.
            let actions = try await store.auditEntries(tenant: beta, afterSeq: 0, limit: 1000).map(\.action)
            #expect(actions.filter { $0 == "seed.backups" }.count == 10)
        }
    }
}
