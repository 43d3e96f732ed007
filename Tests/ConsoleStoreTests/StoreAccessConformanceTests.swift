import BackupModel
import BackupctlTestSupport
import ConsoleStore
import Foundation
import SQLiteStore
import Synchronization
import Testing

/// The store conformance suite, access part: tenants, operators, grants and the audit chain,
/// every requirement with its errors and audit entries, run once per backend
/// (``TestBackend/available``) with the same expectations.
@Suite struct StoreAccessConformanceTests {
    static let alpha = valid({ () throws(ConsoleError) in try TenantName("alpha") })
    static let beta = valid({ () throws(ConsoleError) in try TenantName("beta") })
    static let bob = valid({ () throws(ConsoleError) in try OperatorName("bob") })
    static let carol = valid({ () throws(ConsoleError) in try OperatorName("carol") })

    @Test(arguments: TestBackend.available) func tenantsRoundTripAndADuplicateIsTenantExistsWithNoAudit(
        backend: TestBackend
    ) async throws {
        try await backend.withStore { store in
            var policy = TenantPolicy()
            policy.turnkeyRPS = 3
            let alpha = TenantRecord(
                name: Self.alpha, isSandbox: false, turnkeyURL: "https://api.turnkey.com", turnkeyOrgId: "org-1",
                turnkeyAPIKeyFile: "/keys/tk.json", cleanupKeyFile: "/keys/cleanup.json",
                backupServiceURL: "https://backup.example", policy: policy, createdAt: 1_770_000_000)
            let beta = TenantRecord(name: Self.beta, isSandbox: true, createdAt: 2)
            try await store.createTenant(beta, audit: alphaDraft("tenant.create", target: "beta"))
            try await store.createTenant(alpha, audit: alphaDraft("tenant.create", target: "alpha"))
            #expect(try await store.tenant(Self.alpha) == alpha)
            #expect(try await store.tenant(try TenantName("gamma")) == nil)
            #expect(try await store.tenants() == [alpha, beta])

            let error = try await #require(throws: ConsoleError.self) {
                try await store.createTenant(beta, audit: alphaDraft("tenant.create", target: "beta"))
            }
            #expect(error.code == "tenant_exists" && error.kind == .conflict)
            #expect(error.message == "Tenant beta already exists.")
            let entries = try await store.auditEntries(tenant: nil, afterSeq: 0, limit: 10)
            #expect(entries.map(\.target) == ["beta", "alpha"])
        }
    }

    @Test(arguments: TestBackend.available) func operatorsRoundTripRotateAndRemove(backend: TestBackend) async throws {
        try await backend.withStore { store in
            #expect(try await store.operatorCount() == 0)
            let bob = OperatorRecord(name: Self.bob, canCreateTenants: true, createdAt: 5)
            let carol = OperatorRecord(name: Self.carol, canCreateTenants: false, createdAt: 6)
            try await store.addOperator(
                carol, tokenHash: "carol-hash", audit: alphaDraft("operator.add", target: "carol"))
            try await store.addOperator(bob, tokenHash: "bob-hash", audit: alphaDraft("operator.add", target: "bob"))
            #expect(try await store.operatorCount() == 2)
            #expect(try await store.operators() == [bob, carol])
            #expect(try await store.operatorRecord(tokenHash: "bob-hash") == bob)
            #expect(try await store.operatorRecord(named: Self.carol) == carol)
            #expect(try await store.operatorRecord(tokenHash: "nobody") == nil)

            let error = try await #require(throws: ConsoleError.self) {
                try await store.addOperator(bob, tokenHash: "other", audit: alphaDraft("operator.add", target: "bob"))
            }
            #expect(error.code == "operator_exists" && error.message == "Operator bob already exists.")

            #expect(
                try await store.replaceOperatorToken(
                    Self.bob, tokenHash: "bob-new", audit: alphaDraft("operator.rotate")))
            #expect(try await store.operatorRecord(tokenHash: "bob-hash") == nil)
            #expect(try await store.operatorRecord(tokenHash: "bob-new") == bob)
            let ghost = try OperatorName("ghost")
            #expect(try await !store.replaceOperatorToken(ghost, tokenHash: "x", audit: alphaDraft("operator.rotate")))

            try await store.createTenant(
                TenantRecord(name: Self.alpha, isSandbox: true, createdAt: 1), audit: alphaDraft("tenant.create"))
            try await store.grant(
                GrantRecord(operatorName: Self.carol, tenant: Self.alpha, role: .viewer), audit: alphaDraft("grant"))
            #expect(try await store.removeOperator(Self.carol, audit: alphaDraft("operator.remove", target: "carol")))
            #expect(try await store.operatorRecord(named: Self.carol) == nil)
            #expect(try await store.grants(tenant: Self.alpha).isEmpty)
            #expect(try await !store.removeOperator(ghost, audit: alphaDraft("operator.remove")))

            let actions = try await store.auditEntries(tenant: nil, afterSeq: 0, limit: 100).map(\.action)
            #expect(
                actions == [
                    "operator.add", "operator.add", "operator.rotate", "tenant.create", "grant", "operator.remove",
                ])
        }
    }

    @Test(arguments: TestBackend.available) func bootstrapRunsOnceAndKeepsAnExistingTenant(backend: TestBackend)
        async throws
    {
        try await backend.withStore { store in
            let tenant = TenantRecord(name: Self.alpha, isSandbox: true, createdAt: 1)
            try await store.createTenant(tenant, audit: alphaDraft("tenant.create"))
            let admin = OperatorRecord(name: Self.bob, canCreateTenants: true, createdAt: 2)
            try await store.bootstrap(admin: admin, tokenHash: "h1", tenant: tenant, audit: alphaDraft("init"))
            #expect(try await store.operators() == [admin])
            #expect(
                try await store.grants(operator: Self.bob) == [
                    GrantRecord(operatorName: Self.bob, tenant: Self.alpha, role: .admin)
                ])

            let again = OperatorRecord(name: Self.carol, canCreateTenants: true, createdAt: 3)
            let other = TenantRecord(name: Self.beta, isSandbox: true, createdAt: 3)
            let error = try await #require(throws: ConsoleError.self) {
                try await store.bootstrap(admin: again, tokenHash: "h2", tenant: other, audit: alphaDraft("init"))
            }
            #expect(error.code == "already_initialized" && error.kind == .conflict)
            #expect(try await store.operators() == [admin])
            #expect(try await store.tenant(Self.beta) == nil)
            let actions = try await store.auditEntries(tenant: nil, afterSeq: 0, limit: 10).map(\.action)
            #expect(actions == ["tenant.create", "init"])
        }
    }

    @Test(arguments: TestBackend.available) func bootstrapOnAnEmptyStoreCreatesTheTenant(backend: TestBackend)
        async throws
    {
        try await backend.withStore { store in
            let tenant = TenantRecord(name: Self.alpha, isSandbox: true, createdAt: 1)
            let admin = OperatorRecord(name: Self.bob, canCreateTenants: true, createdAt: 2)
            try await store.bootstrap(admin: admin, tokenHash: "h1", tenant: tenant, audit: alphaDraft("init"))
            #expect(try await store.tenants() == [tenant])
            #expect(try await store.operatorCount() == 1)
        }
    }

    @Test(arguments: TestBackend.available) func grantsReplaceListAndRevokeAuditingOnlyWhatWasThere(
        backend: TestBackend
    ) async throws {
        try await backend.withStore { store in
            try await seedAccess(store)
            try await store.grant(
                GrantRecord(operatorName: Self.bob, tenant: Self.alpha, role: .viewer), audit: alphaDraft("grant"))
            try await store.grant(
                GrantRecord(operatorName: Self.bob, tenant: Self.alpha, role: .cleaner), audit: alphaDraft("grant"))
            try await store.grant(
                GrantRecord(operatorName: Self.bob, tenant: Self.beta, role: .support), audit: alphaDraft("grant"))
            try await store.grant(
                GrantRecord(operatorName: Self.carol, tenant: Self.alpha, role: .admin), audit: alphaDraft("grant"))
            #expect(
                try await store.grants(operator: Self.bob) == [
                    GrantRecord(operatorName: Self.bob, tenant: Self.alpha, role: .cleaner),
                    GrantRecord(operatorName: Self.bob, tenant: Self.beta, role: .support),
                ])
            #expect(try await store.grants(tenant: Self.alpha).map(\.operatorName) == [Self.bob, Self.carol])

            let before = try await store.auditEntries(tenant: nil, afterSeq: 0, limit: 100).count
            #expect(try await store.revoke(operator: Self.bob, tenant: Self.beta, audit: alphaDraft("revoke")))
            #expect(try await !store.revoke(operator: Self.bob, tenant: Self.beta, audit: alphaDraft("revoke")))
            let after = try await store.auditEntries(tenant: nil, afterSeq: 0, limit: 100)
            #expect(after.count == before + 1 && after.last?.action == "revoke")

            let error = try await #require(throws: ConsoleError.self) {
                try await store.grant(
                    GrantRecord(operatorName: try OperatorName("ghost"), tenant: Self.alpha, role: .viewer),
                    audit: alphaDraft("grant"))
            }
            #expect(error.code == "not_found")
            #expect(try await store.auditEntries(tenant: nil, afterSeq: 0, limit: 100).count == before + 1)
        }
    }

    @Test(arguments: TestBackend.available) func theAccessVersionMovesOnTenantOperatorAndGrantChangesOnly(
        backend: TestBackend
    ) async throws {
        try await backend.withStore { store in
            var seen = try await store.accessVersion()
            func moved() async throws -> Bool {
                let now = try await store.accessVersion()
                defer { seen = now }
                return now != seen
            }
            try await store.createTenant(
                TenantRecord(name: Self.alpha, isSandbox: true, createdAt: 1), audit: alphaDraft("t"))
            #expect(try await moved())
            try await store.addOperator(
                OperatorRecord(name: Self.bob, canCreateTenants: false, createdAt: 1), tokenHash: "h",
                audit: alphaDraft("o"))
            #expect(try await moved())
            try await store.grant(
                GrantRecord(operatorName: Self.bob, tenant: Self.alpha, role: .viewer), audit: alphaDraft("g"))
            #expect(try await moved())
            try await store.appendAudit(alphaDraft("backup.show"))
            try await store.appendAudit(alphaDraft("backup.lookup"))
            #expect(try await !moved())
            #expect(try await !store.revoke(operator: Self.bob, tenant: Self.beta, audit: alphaDraft("r")))
            #expect(try await !moved())
            #expect(try await store.replaceOperatorToken(Self.bob, tokenHash: "h2", audit: alphaDraft("rotate")))
            #expect(try await moved())
            #expect(try await store.revoke(operator: Self.bob, tenant: Self.alpha, audit: alphaDraft("r")))
            #expect(try await moved())
            #expect(
                try await store.deleteTenant(
                    Self.alpha, audit: CountedAuditDraft(alphaDraft("tenant.delete"), countKey: "backups")) == 0)
            #expect(try await moved())
        }
    }

    @Test(arguments: TestBackend.available) func deleteTenantRemovesEverythingInItAndAuditsTheBackupCount(
        backend: TestBackend
    ) async throws {
        try await backend.withStore { store in
            try await seedAccess(store)
            try await store.grant(
                GrantRecord(operatorName: Self.bob, tenant: Self.alpha, role: .admin), audit: alphaDraft("grant"))
            for (tenant, id) in [("alpha", "b1"), ("alpha", "b2"), ("beta", "b3")] {
                _ = try await storeSQL(
                    store,
                    """
                    INSERT INTO backups (tenant, backup_id, metadata, manifest_hash, imported_at, updated_at)
                    VALUES (\(tenant), \(id), '{}', 'h', 1, 1)
                    """)
                _ = try await storeSQL(
                    store,
                    "INSERT INTO factor_lookup (tenant, pk, backup_id) VALUES (\(tenant), \("MAIN#" + id), \(id))")
            }
            let audit = CountedAuditDraft(
                AuditDraft(
                    operatorName: "bob", tenant: "alpha", action: "tenant.delete", target: "alpha",
                    details: ["note": "kept"]),
                countKey: "backups")
            #expect(try await store.deleteTenant(Self.alpha, audit: audit) == 2)
            #expect(try await store.tenant(Self.alpha) == nil)
            #expect(try await store.grants(operator: Self.bob).isEmpty)
            let left = try await storeSQL(store, "SELECT backup_id FROM backups ORDER BY backup_id").map {
                try $0.get(0, as: String.self)
            }
            #expect(left == ["b3"])
            let index = try await storeSQL(store, "SELECT backup_id FROM factor_lookup").map {
                try $0.get(0, as: String.self)
            }
            #expect(index == ["b3"])
            let last = try #require(try await store.latestAuditEntries(tenant: Self.alpha, limit: 1).first)
            #expect(last.action == "tenant.delete" && last.details == ["backups": "2", "note": "kept"])

            let count = try await store.auditEntries(tenant: nil, afterSeq: 0, limit: 100).count
            #expect(try await store.deleteTenant(Self.alpha, audit: audit) == nil)
            #expect(try await store.auditEntries(tenant: nil, afterSeq: 0, limit: 100).count == count)
        }
    }

    @Test(arguments: TestBackend.available) func auditReadsFilterByTenantSequenceOperatorActionAndTime(
        backend: TestBackend
    ) async throws {
        let clock = TestClock(start: 1_000)
        try await backend.withStore(clock: clock.now) { store in
            try await store.appendAudit(AuditDraft(operatorName: "bob", tenant: "alpha", action: "backup.show"))
            try await store.appendAudit(AuditDraft(operatorName: "carol", tenant: "alpha", action: "reset.begin"))
            try await store.appendAudit(AuditDraft(operatorName: "bob", tenant: "beta", action: "reset.complete"))
            try await store.appendAudit(AuditDraft(operatorName: "bob", tenant: "alpha", action: "reset.complete"))
            try await store.appendAudit(AuditDraft(operatorName: "bob", tenant: nil, action: "tenant.create"))
            try await store.appendAudit(AuditDraft(operatorName: "bob", tenant: "alpha", action: "resetx"))

            #expect(
                try await store.auditEntries(tenant: nil, afterSeq: 0, limit: 100).map(\.seq) == [1, 2, 3, 4, 5, 6])
            #expect(try await store.auditEntries(tenant: Self.alpha, afterSeq: 1, limit: 2).map(\.seq) == [2, 4])
            #expect(try await store.auditEntries(tenant: nil, afterSeq: 0, limit: -1).isEmpty)
            #expect(try await store.latestAuditEntries(tenant: nil, limit: 2).map(\.seq) == [5, 6])
            #expect(try await store.latestAuditEntries(tenant: Self.beta, limit: 5).map(\.seq) == [3])

            func seqs(_ query: AuditQuery, limit: Int = 100) async throws -> [Int64] {
                try await store.auditEntries(query, limit: limit).map(\.seq)
            }
            #expect(try await seqs(AuditQuery(tenant: Self.alpha)) == [1, 2, 4, 6])
            #expect(try await seqs(AuditQuery(tenant: Self.alpha), limit: 2) == [4, 6])
            #expect(try await seqs(AuditQuery(tenant: Self.alpha, operatorName: "carol")) == [2])
            #expect(try await seqs(AuditQuery(tenant: Self.alpha, action: "reset.complete")) == [4])
            #expect(try await seqs(AuditQuery(tenant: Self.alpha, action: "reset.")) == [2, 4])
            #expect(try await seqs(AuditQuery(tenant: Self.alpha, action: "reset.*")) == [2, 4])
            #expect(try await seqs(AuditQuery(tenant: Self.alpha, sinceMillis: 1_002)) == [4, 6])
            #expect(try await seqs(AuditQuery(tenant: Self.alpha, afterSeq: 2)) == [4, 6])

            let export = try await store.auditEntries(tenant: nil, sinceMillis: 1_002, afterSeq: 3, limit: 10)
            #expect(export.map(\.seq) == [4, 5, 6])
            let alphaExport = try await store.auditEntries(tenant: Self.alpha, sinceMillis: 0, afterSeq: 0, limit: 2)
            #expect(alphaExport.map(\.seq) == [1, 2])
        }
    }

    /// The same drafts at the same times give the same chain in both stores, byte for byte.
    @Test(arguments: TestBackend.available) func theAuditChainIsTheSameAsSQLites(backend: TestBackend) async throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("pgchain-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: dir) }
        // One clock both stores read, set before each pair of calls: SQLite's read audit reads it twice.
        let clock = TestClock(start: 0, step: 0)
        let sqlite = try SQLiteConsoleStore(path: dir.appendingPathComponent("console.db").path, clock: clock.now)
        try await backend.withStore(clock: clock.now) { store in
            let tenant = TenantRecord(name: Self.alpha, isSandbox: true, createdAt: 1)
            let admin = OperatorRecord(name: Self.bob, canCreateTenants: true, createdAt: 2)
            let carol = OperatorRecord(name: Self.carol, canCreateTenants: false, createdAt: 3)
            let grant = GrantRecord(operatorName: Self.carol, tenant: Self.alpha, role: .support)
            let drafts = [
                AuditDraft(operatorName: "bob", tenant: nil, action: "init", details: ["tenant": "alpha"]),
                AuditDraft(operatorName: "bob", tenant: "alpha", action: "operator.add", target: "carol"),
                AuditDraft(
                    operatorName: "bob", tenant: "alpha", action: "operator.grant", target: "carol",
                    details: ["role": "support", "quote": "a \"b\" \\ c/d\n", "ünïcode": "✓ 𝄞"]),
                AuditDraft(operatorName: "carol", tenant: "alpha", action: "backup.show", target: "b1"),
                AuditDraft(operatorName: "bob", tenant: "alpha", action: "operator.revoke", target: "carol"),
                AuditDraft(operatorName: "bob", tenant: "alpha", action: "tenant.delete", target: "alpha"),
            ]
            clock.set(1_780_000_000_000 + 7)
            try await sqlite.bootstrap(admin: admin, tokenHash: "h1", tenant: tenant, audit: drafts[0])
            try await store.bootstrap(admin: admin, tokenHash: "h1", tenant: tenant, audit: drafts[0])
            clock.set(1_780_000_000_000 + 14)
            try await sqlite.addOperator(carol, tokenHash: "h2", audit: drafts[1])
            try await store.addOperator(carol, tokenHash: "h2", audit: drafts[1])
            clock.set(1_780_000_000_000 + 21)
            try await sqlite.grant(grant, audit: drafts[2])
            try await store.grant(grant, audit: drafts[2])
            clock.set(1_780_000_000_000 + 28)
            try await sqlite.appendAudit(drafts[3])
            try await store.appendAudit(drafts[3])
            clock.set(1_780_000_000_000 + 35)
            #expect(try await sqlite.revoke(operator: Self.carol, tenant: Self.alpha, audit: drafts[4]))
            #expect(try await store.revoke(operator: Self.carol, tenant: Self.alpha, audit: drafts[4]))
            clock.set(1_780_000_000_000 + 42)
            var tenantDelete = drafts[5]
            tenantDelete.details["backups"] = nil
            let sqliteRemoved = try await sqlite.deleteTenant(
                Self.alpha, audit: CountedAuditDraft(tenantDelete, countKey: "backups"))
            #expect(
                try await store.deleteTenant(Self.alpha, audit: CountedAuditDraft(tenantDelete, countKey: "backups"))
                    == sqliteRemoved)

            let expected = try await sqlite.auditEntries(tenant: nil, afterSeq: 0, limit: 100)
            let actual = try await store.auditEntries(tenant: nil, afterSeq: 0, limit: 100)
            #expect(expected.count == drafts.count)
            #expect(actual == expected)
            #expect(actual.map(\.hash) == expected.map(\.hash))
            // The stored details text, too, is the canonical one SQLite keeps.
            let details = try await storeSQL(store, "SELECT details FROM audit ORDER BY seq").map {
                try $0.get(0, as: String.self)
            }
            #expect(details == expected.map { CanonicalJSON.objectText($0.details) })
        }
    }

    @Test(arguments: TestBackend.available) func checkpointsAppendListAndMeasureTheLag(backend: TestBackend)
        async throws
    {
        try await backend.withStore { store in
            #expect(try await store.auditCheckpointLag() == (0, nil))
            #expect(try await store.auditHead() == (nil, nil))

            try await store.appendAudit(alphaDraft("a"))
            let head = try await store.appendAudit(alphaDraft("b"))
            #expect(try await store.auditHead() == (head, nil))
            let first = checkpoint(head: head, after: nil)
            #expect(try await store.appendAuditCheckpoint(first, ifLatestIs: nil))
            #expect(first.seq == head.seq && first.headHash == head.hash)
            // A signer that read the head before `first` landed appends nothing.
            #expect(try await !store.appendAuditCheckpoint(checkpoint(head: head, after: nil), ifLatestIs: nil))
            try await store.appendAudit(alphaDraft("c"))
            #expect(try await store.auditCheckpointLag() == (3, first))
            #expect(try await store.auditHead().latest == first)

            let manual = AuditCheckpoint(
                seq: 3, headHash: String(repeating: "a", count: 64), atMillis: 9, prevCheckpointHash: first.hash,
                signature: "00ff")
            try await store.appendAuditCheckpoint(manual)
            #expect(try await store.auditCheckpoints() == [first, manual])
            #expect(try await store.latestAuditCheckpoint() == manual)
            #expect(try await store.auditCheckpointLag() == (3, manual))
        }
    }
}

/// Tenants `alpha` and `beta`, operators `bob` and `carol`.
func seedAccess(_ store: any ConsoleStore) async throws {
    for name in [StoreAccessConformanceTests.alpha, StoreAccessConformanceTests.beta] {
        try await store.createTenant(
            TenantRecord(name: name, isSandbox: true, createdAt: 1), audit: alphaDraft("tenant"))
    }
    for name in [StoreAccessConformanceTests.bob, StoreAccessConformanceTests.carol] {
        try await store.addOperator(
            OperatorRecord(name: name, canCreateTenants: false, createdAt: 1), tokenHash: "\(name)-hash",
            audit: alphaDraft("operator"))
    }
}

/// A draft of tenant `alpha`'s.
func alphaDraft(_ action: String, target: String? = nil) -> AuditDraft {
    AuditDraft(operatorName: "tester", tenant: "alpha", action: action, target: target)
}
