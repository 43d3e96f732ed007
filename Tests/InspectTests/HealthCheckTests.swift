import BackupCrypto
import BackupModel
import BackupctlTestSupport
import ConsoleStore
import Foundation
import Testing

@testable import Inspect

@Suite struct HealthCheckTests {
    func show(_ t: TempStore, _ id: String) async throws -> BackupReport {
        try await BackupInspector(store: t.store).show(backupId: id, session: t.session)
    }

    func status(_ report: BackupReport, _ check: HealthCheckName) -> HealthStatus? {
        report.health.first { $0.check == check.rawValue }?.status
    }

    /// The checks that are not ok, by name.
    func problems(_ report: BackupReport) -> [String: HealthStatus] {
        Dictionary(uniqueKeysWithValues: report.health.filter { $0.status != .ok }.map { ($0.check, $0.status) })
    }

    @Test(arguments: TestBackend.available) func cleanBackupIsAllOk(backend: TestBackend) async throws {
        let t = try await TempStore(backend)
        let id = try t.backupId()
        var metadata = try t.healthyMetadata(id: id)
        metadata.factors.append(t.google("1045"))
        metadata.keys.append(t.turnkeyKey())
        try await t.write(metadata)
        let report = try await show(t, id)
        #expect(report.health.map(\.check) == HealthCheckName.allCases.map(\.rawValue))
        #expect(problems(report).isEmpty, "\(report.health)")
        #expect(report.overall == .ok)
        #expect(report.health.allSatisfy { !$0.detail.isEmpty && !$0.detail.contains("\n") })
    }

    /// Each case: how to spoil a healthy backup, and the one check (with status) that must catch it.
    @Test(arguments: HealthCheckName.allCases)
    func everyCheckTriggers(_ check: HealthCheckName) async throws {
        let t = try await TempStore()
        let id = try t.backupId()
        var metadata = try t.healthyMetadata(id: id)
        var blob: Data? = Data(repeating: 1, count: 100)
        var rows: [String]? = nil
        var expected: HealthStatus = .fail
        switch check {
        case .lookupRowsMissing:
            // The passkey's row is missing; the device's row is there.
            rows = [metadata.lookupKeys[1].rawValue]
        case .lookupRowsUnauthorized:
            expected = .warn
            rows = metadata.lookupKeys.map(\.rawValue) + ["MAIN#PK|c3RhbGU"]
        case .factorShared:
            // Another backup owns the passkey's row; this one lists the passkey too.
            let other = try t.backupId()
            var first = try t.healthyMetadata(id: other)
            first.factors = metadata.factors
            try await t.write(first)
            rows = Array(metadata.lookupKeys.map(\.rawValue).dropFirst())
        case .factorKeys:
            metadata.factors.append(t.google("77"))
        case .orphanKeys:
            expected = .warn
            metadata.keys.append(.icloud(encryptedKey: "ff"))
        case .oidcWithoutPasskey:
            expected = .warn
            metadata.factors = [t.google("78")]
            metadata.keys = [t.turnkeyKey()]
        case .factorLimits:
            for _ in 0..<10 { metadata.factors.append(t.passkey(t.rng.bytes(16))) }
            metadata.keys += Array(repeating: EncryptionKey.prf(encryptedKey: "aa"), count: 10)
        case .syncFactors:
            // A compressed (33-byte) key where the 65-byte stored form belongs.
            metadata.syncFactors.append(t.factor(.ecKeypair(publicKey: Base64.encode(try t.p256().compressed))))
        case .sealedBlob:
            blob = nil
        case .manifestHash:
            metadata.manifestHash = "not-a-hash"
        }
        try await t.write(metadata, blob: blob, rows: rows)
        let report = try await show(t, id)
        #expect(problems(report) == [check.rawValue: expected], "\(report.health)")
    }

    /// Every OIDC account of a backup opens its one TURNKEY key: two accounts (Google and
    /// Apple, BF-3) are healthy, as the population simulator's worlds showed.
    @Test func oidcAccountsShareTheTurnkeyKey() async throws {
        let t = try await TempStore()
        let id = try t.backupId()
        var metadata = try t.healthyMetadata(id: id)
        metadata.factors += [t.google("79"), t.google("80")]
        metadata.keys.append(t.turnkeyKey())
        try await t.write(metadata, blob: Data(repeating: 1, count: 100), rows: nil)
        #expect(problems(try await show(t, id)).isEmpty)
        metadata.keys.removeAll { $0.tag == "TURNKEY" }
        try await t.write(metadata, blob: Data(repeating: 1, count: 100), rows: nil)
        #expect(problems(try await show(t, id)) == ["factor_keys": .fail])
    }

    @Test func moreSyncFactorProblems() async {
        let good = await HealthChecks.syncKeyProblem(Base64.encode(try! TempStore().p256().uncompressed))
        #expect(good == nil)
        var offCurve = await (try? TempStore().p256().uncompressed) ?? []
        offCurve[64] ^= 1
        #expect(HealthChecks.syncKeyProblem(Base64.encode(offCurve))?.contains("not a point") == true)
        #expect(HealthChecks.syncKeyProblem("***")?.contains("not standard base64") == true)
        let unpadded = await Base64.encode(try! TempStore().p256().uncompressed, padding: false)
        #expect(HealthChecks.syncKeyProblem(unpadded)?.contains("stored form") == true)
    }

    @Test func limitsAndBlobEdges() {
        let big = HealthChecks.sealedBlob(BackupMetadata.maxBlobBytes + 1)
        #expect(big.status == .fail)
        #expect(HealthChecks.sealedBlob(BackupMetadata.maxBlobBytes).status == .ok)
        let metadata = BackupMetadata(
            id: "x", manifestHash: String(repeating: "a", count: 64), factors: [], syncFactors: [], keys: [])
        #expect(HealthChecks.factorLimits(metadata).status == .warn)
        var tooManySync = metadata
        tooManySync.factors = [
            Factor(id: "f", createdAt: Timestamp(seconds: 0), kind: .passkey(PasskeyFactor(credentialId: "AA")))
        ]
        tooManySync.syncFactors = Array(
            repeating: Factor(id: "s", createdAt: Timestamp(seconds: 0), kind: .ecKeypair(publicKey: "x")), count: 26)
        #expect(HealthChecks.factorLimits(tooManySync).status == .fail)
        #expect(HealthChecks.manifestHash(String(repeating: "g", count: 64)).status == .fail)
    }
}
