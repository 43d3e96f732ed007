import BackupModel
import BackupctlTestSupport
import ConsoleStore
import Foundation
import SQLiteStore
import Testing

@testable import PostgresStore

/// The live-tenant half of the PostgreSQL store: what two servers race for is decided once (a
/// reset token, the run lease), and the journal and the reset ledger answer as SQLite's do.
@Suite(.enabled(if: PostgresTestDatabase.enabled, Comment(rawValue: PostgresTestDatabase.skipped)))
struct PostgresLiveStoreTests {
    static let audit = AuditDraft(operatorName: "test", tenant: "sandbox", action: "test.write")

    static func tenant() throws -> TenantName { try TenantName("sandbox") }

    /// The tenant and three synthetic backups, written the same way into `store`.
    static func seed(_ store: any ConsoleStore) async throws -> [BackupWrite] {
        let writes = try SyntheticBackups.writes(seed: 31, indices: 0..<3, now: 1_750_000_000)
        try await store.createTenant(TenantRecord(name: try tenant(), isSandbox: true, createdAt: 1), audit: audit)
        try await store.writeBackups(tenant: try tenant(), writes, audit: audit)
        return writes
    }

    @Test func aSandboxResetTokenRacedOverTwoServersIsUsedOnce() async throws {
        try await withTwoServers { first, second in
            let writes = try await Self.seed(first)
            let id = writes[0].record.backupId
            let token = String(repeating: "ab", count: 32)
            let wins = try await withThrowingTaskGroup(of: Bool.self) { group in
                for index in 0..<8 {
                    let store = index.isMultiple(of: 2) ? first : second
                    group.addTask {
                        try await store.sandboxServiceReset(
                            tenant: try Self.tenant(), tokenHash: token, backupId: id, now: 100)
                    }
                }
                return try await group.reduce(into: 0) { $0 += $1 ? 1 : 0 }
            }
            #expect(wins == 1)
            #expect(try await second.backup(tenant: try Self.tenant(), id: id) == nil)
            #expect(try await second.lookupRows(tenant: try Self.tenant(), backupId: id).isEmpty)
            #expect(try await first.backup(tenant: try Self.tenant(), id: writes[1].record.backupId) != nil)
        }
    }

    @Test func aHandedOverFactorChangesHandsInTheTransactionThatClaimsIt() async throws {
        try await withTwoServers { first, _ in
            let outcome = try await FactorHandoverScenario.run(on: first)
            #expect(outcome == FactorHandoverScenario.expected)
        }
    }

    @Test func theRunLeaseIsOneHolderAcrossServers() async throws {
        try await withTwoServers { first, second in
            _ = try await Self.seed(first)
            let t = try Self.tenant()
            #expect(
                try await first.acquireCleanupLease(tenant: t, holder: "a", now: 10, expiresAt: 130, takeOver: nil)
                    == nil)
            let held = try await second.acquireCleanupLease(
                tenant: t, holder: "b", now: 20, expiresAt: 140, takeOver: nil)
            #expect(held?.holder == "a" && held?.expiresAt == 130)
            #expect(
                try await second.acquireCleanupLease(tenant: t, holder: "b", now: 20, expiresAt: 140, takeOver: "a")
                    == nil)
            #expect(try await !first.renewCleanupLease(tenant: t, holder: "a", expiresAt: 200))
            #expect(try await second.renewCleanupLease(tenant: t, holder: "b", expiresAt: 200))
            try await first.releaseCleanupLease(tenant: t, holder: "a")  // not the holder: no effect
            #expect(
                try await first.acquireCleanupLease(tenant: t, holder: "a", now: 30, expiresAt: 150, takeOver: nil)?
                    .holder == "b")
            // An expired lease goes to whoever asks.
            #expect(
                try await first.acquireCleanupLease(tenant: t, holder: "a", now: 201, expiresAt: 321, takeOver: nil)
                    == nil)
        }
    }

    /// The same calls on SQLite and PostgreSQL: the journal's merge rules, the compare-and-set
    /// refusal, the reset ledger and the reset's audit entry come out equal.
    @Test func theJournalAndTheResetLedgerAnswerAsSQLiteDoes() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("pglive-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let sqlite = try SQLiteConsoleStore(
            path: directory.appendingPathComponent("c.db").path, clock: { 1_780_000_000_000 })
        try await withStore { postgres in
            var results: [[String]] = []
            for store in [sqlite as any CleanupQueueStore, postgres as any CleanupQueueStore] {
                results.append(try await Self.scenario(store))
            }
            #expect(results[0] == results[1])
            let expected = try await sqlite.auditEntries(tenant: nil, afterSeq: 0, limit: 1000)
            let actual = try await postgres.auditEntries(tenant: nil, afterSeq: 0, limit: 1000)
            #expect(actual.map(\.hash) == expected.map(\.hash) && actual.count == expected.count)
        }
    }

    /// `sandbox simulate --tenant`'s sub-org states: the same answers on both stores (new ids
    /// counted, states replaced, a non-JSON document refused, the state gone with its sub-org).
    @Test func sandboxSubOrgStatesAnswerAsSQLiteDoes() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("pgstate-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let sqlite = try SQLiteConsoleStore(path: directory.appendingPathComponent("c.db").path)
        try await withStore { postgres in
            var results: [[String]] = []
            for store in [sqlite as any FullConsoleStore, postgres as any FullConsoleStore] {
                let t = try Self.tenant()
                try await store.createTenant(TenantRecord(name: t, isSandbox: true, createdAt: 1), audit: Self.audit)
                var out: [String] = []
                out.append("\(try await store.addSandboxSubOrgs(tenant: t, ["a"], createdAt: 5, audit: nil))")
                out.append(
                    "\(try await store.putSandboxSubOrgStates(tenant: t, ["a": #"{"v":1}"#, "b": #"{"v":2}"#], createdAt: 6, audit: Self.audit))"
                )
                out.append(
                    "\(try await store.putSandboxSubOrgStates(tenant: t, ["b": #"{"v":3}"#], createdAt: 7, audit: nil))"
                )
                out.append(String(describing: try await store.sandboxSubOrgState(tenant: t, subOrgId: "a")))
                out.append(String(describing: try await store.sandboxSubOrgState(tenant: t, subOrgId: "b")))
                do {
                    try await store.putSandboxSubOrgStates(tenant: t, ["c": "not json"], createdAt: 8, audit: nil)
                    out.append("non-JSON state taken")
                } catch {
                    out.append("refused \(try await store.sandboxSubOrgExists(tenant: t, subOrgId: "c"))")
                }
                out.append("\(try await store.removeSandboxSubOrg(tenant: t, subOrgId: "b", audit: nil))")
                out.append(String(describing: try await store.sandboxSubOrgState(tenant: t, subOrgId: "b")))
                out.append("\(try await store.sandboxSubOrgPage(tenant: t, after: "", limit: 10))")
                results.append(out)
            }
            #expect(results[0] == results[1])
            #expect(
                results[0] == [
                    "1", "1", "0", #"Optional("{\"v\":1}")"#, #"Optional("{\"v\":3}")"#, "refused false", "true", "nil",
                    #"["a"]"#,
                ])
        }
    }

    /// Drives one store through the journal and a reset; returns what it answered, as text.
    static func scenario(_ store: any CleanupQueueStore) async throws -> [String] {
        let writes = try await seed(store)
        let t = try tenant()
        var out: [String] = []
        let items = ["s1", "s2"].map {
            CleanupItemRecord(subOrgId: $0, reason: "unreferenced", firstSeenAt: 50, updatedAt: 50)
        }
        out.append("new \(try await store.enqueueCleanup(tenant: t, items, audit: audit))")
        // An earlier sighting and a reset reason win; a known id is not new.
        let again = [
            CleanupItemRecord(subOrgId: "s1", reason: "reset", firstSeenAt: 40, updatedAt: 60, lastBackupId: "b")
        ]
        out.append("new \(try await store.enqueueCleanup(tenant: t, again, audit: nil))")
        var item = try #require(try await store.cleanupItem(tenant: t, subOrgId: "s1"))
        out.append("\(item.reason) \(item.firstSeenAt) \(item.lastBackupId ?? "-") v\(item.version)")
        // A worker's claim survives a journal update (the body before the first send).
        _ = try await store.queueCleanup(tenant: t, subOrgIds: ["s1"], queuedBy: "test", now: 1, audit: audit)
        out.append(
            "claimed \(try await store.claimCleanup(tenant: t, worker: "w", limit: 5, now: 1, leaseMillis: 1000).map(\.item.subOrgId))"
        )
        item.body = #"{"type":"ACTIVITY_TYPE_DELETE_SUB_ORGANIZATION"}"#
        let written = try await store.updateCleanupItem(tenant: t, item, audit: nil)
        out.append("v\(written.version)")
        out.append(
            "held \(try await store.renewCleanupClaims(tenant: t, worker: "w", now: 2, leaseMillis: 1000).sorted())")
        do {
            _ = try await store.updateCleanupItem(tenant: t, item, audit: nil)
            out.append("stale write accepted")
        } catch {
            out.append("\(error.code): \(error.message)")
        }
        var missing = item
        missing.subOrgId = "nowhere"
        do {
            _ = try await store.updateCleanupItem(tenant: t, missing, audit: nil)
        } catch {
            out.append("\(error.code): \(error.message)")
        }
        out.append(
            "counts \(try await store.cleanupCounts(tenant: t).map { "\($0.key.rawValue)=\($0.value)" }.sorted())")
        // The reset ledger: a claimed send, then the confirmed reset with its audit entry.
        let id = writes[0].record.backupId
        let token = String(repeating: "cd", count: 32)
        try await store.insertResetChallenge(
            ResetChallengeRecord(
                tokenHash: token, tenant: t, backupId: id, context: "reset", challenge: [1, 2, 3], createdAt: 100,
                expiresAt: 400),
            audit: audit)
        out.append(
            "\(try await store.claimResetSend(tokenHash: token, subOrgIds: ["sent"], holder: "h", now: 110, until: 230, takeOver: nil))"
        )
        out.append(
            "\(try await store.claimResetSend(tokenHash: token, subOrgIds: [], holder: "k", now: 111, until: 231, takeOver: nil))"
        )
        let wipe = try await store.recordServiceReset(
            tenant: t, tokenHash: token, backupId: id, subOrgIds: [], now: 120,
            audit: ResetAuditDraft(
                AuditDraft(operatorName: "test", tenant: "sandbox", action: "reset.complete"), lookupRowsAtLeast: 0))
        out.append("wiped \(wipe.lookupRowsRemoved) \(wipe.turnkeySubOrgIds)")
        let ledger = try #require(try await store.resetChallenge(tokenHash: token))
        out.append("used \(ledger.usedAt ?? -1) sent \(ledger.sentAt ?? -1) challenge \(ledger.challenge)")
        out.append(
            "queued \(try await store.cleanupItems(tenant: t, states: [.pending]).map { "\($0.subOrgId):\($0.reason)" })"
        )
        return out
    }
}
