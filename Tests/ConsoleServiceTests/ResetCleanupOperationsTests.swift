import Access
import BackupCrypto
import BackupModel
import BackupctlTestSupport
import Cleanup
import ConsoleService
import ConsoleStore
import Foundation
import Recovery
import Synchronization
import Testing

/// The reset and cleanup operations of the service layer: every answer survives the wire
/// unchanged, and a cancelled `cleanup.run` stops cleanly with its journal consistent.
@Suite struct ResetCleanupOperationsTests {
    /// Encodes with the wire's encoder, decodes, encodes again: the two documents must be equal.
    @discardableResult
    func roundTrip<T: Codable>(_ value: T, sourceLocation: SourceLocation = #_sourceLocation) throws -> T {
        let first = try Wire.encoder().encode(value)
        let decoded = try JSONDecoder().decode(T.self, from: first)
        let second = try Wire.encoder().encode(decoded)
        #expect(
            String(decoding: first, as: UTF8.self) == String(decoding: second, as: UTF8.self),
            sourceLocation: sourceLocation)
        return decoded
    }

    static let subOrg = "7d3e0a52-2f7e-4c1e-9a36-0c4f6f0b8a99"

    @Test func cleanupOutputsRoundTrip() throws {
        var scan = ScanReport(
            listed: 12, referenced: 9,
            orphans: [
                ScanReport.Orphan(
                    subOrgId: Self.subOrg, reason: "unreferenced", firstSeenAt: 1_790_000_000, eligible: true,
                    provenBy: "snapshot"),
                ScanReport.Orphan(
                    subOrgId: "0d3e0a52-2f7e-4c1e-9a36-0c4f6f0b8a99", reason: "reset", firstSeenAt: 1_790_000_100,
                    eligible: false, waitingFor: "grace"),
            ])
        scan.snapshotAt = "2026-11-22T10:00:00Z"
        scan.snapshotAgeSeconds = 3600
        scan.waitingForSnapshot = 1
        #expect(try roundTrip(scan) == scan)
        let scanned = CleanupScanOperation.Output(tenant: "drill", sandbox: false, report: scan)
        #expect(try roundTrip(scanned) == scanned)
        try roundTrip(ScanReport())

        var run = RunReport(dryRun: false)
        run.items = [
            RunReport.Item(subOrgId: Self.subOrg, outcome: "deleted", attempts: 1, error: nil),
            RunReport.Item(
                subOrgId: "0d3e0a52-2f7e-4c1e-9a36-0c4f6f0b8a99", outcome: "failed", attempts: 3,
                error: "503"),
        ]
        run.deleted = 1
        run.failed = 1
        run.waitingForSnapshot = 2
        #expect(try roundTrip(run) == run)
        // What the report's fixed JSON leaves out still crosses the wire in the operation's answer.
        run.pending = 4
        run.stoppedReason = "interrupted after 2 of 6"
        let ran = CleanupRunOperation.Output(tenant: "drill", report: run)
        let back = try roundTrip(ran)
        #expect(back == ran)
        #expect(back.report.stoppedReason == "interrupted after 2 of 6" && back.report.pending == 4)
        try roundTrip(CleanupRunOperation.Output(tenant: "drill", report: RunReport(dryRun: true)))
        try roundTrip(run.items[0])

        let status = StatusReport(
            pending: 1, deleted: 2, alreadyGone: 3, failed: 4, needsUser: 5, skipped: 6, stamped: 1,
            oldestPendingFirstSeenAt: 1_790_000_000, matching: 2,
            items: [
                StatusReport.Item(
                    subOrgId: Self.subOrg, state: "pending", reason: "reset", firstSeenAt: 1_790_000_000, attempts: 0,
                    lastError: nil, lastBackupId: "backup_account_02ab"),
                StatusReport.Item(
                    subOrgId: "0d3e0a52-2f7e-4c1e-9a36-0c4f6f0b8a99", state: "failed", reason: "unreferenced",
                    firstSeenAt: 1_790_000_001, attempts: 3, lastError: "503", lastBackupId: nil),
            ])
        #expect(try roundTrip(status) == status)
        // Times are RFC 3339 in JSON, as the README says (never the unix seconds they hold).
        for encoded in [
            String(decoding: try JSONEncoder().encode(status.items[0]), as: UTF8.self),
            String(decoding: try JSONEncoder().encode(scan.orphans[0]), as: UTF8.self),
        ] {
            #expect(encoded.contains(#""firstSeenAt":"20"#), "\(encoded)")
        }
        let empty = StatusReport(
            pending: 0, deleted: 0, alreadyGone: 0, failed: 0, needsUser: 0, skipped: 0, stamped: 0,
            oldestPendingFirstSeenAt: nil, matching: 0, items: [])
        #expect(try roundTrip(empty) == empty)

        let ingest = IngestReport(lines: 10, found: 3, new: 2)
        #expect(try roundTrip(ingest) == ingest)
        let request = CleanupTeardownRequestOperation.Output(subOrgId: Self.subOrg, body: #"{"type":"x"}"#)
        #expect(try roundTrip(request) == request)
    }

    @Test func resetOutputsRoundTrip() throws {
        let result = ResetResult(
            backupId: "backup_account_02ab", wiped: true, lookupRowsRemoved: 3, turnkeySubOrgIds: [Self.subOrg])
        #expect(try roundTrip(result) == result)
        var resolved = result
        resolved.resolvedBy = "status"
        #expect(try roundTrip(resolved) == resolved)

        let key = try Secp256k1.publicKey(secretKey: SecretBytes(SeededRandom(seed: 4).bytes(32)))
        let id = BackupAccountID(compressedPublicKey: key)
        let challenge = ResetChallenge(
            backupId: id, challenge: Array(0..<32), token: SecretBytes(Array("sbx.token-value".utf8)),
            expiresAt: 1_790_000_900,
            factors: [
                .init(kind: "PASSKEY", accountKind: nil), .init(kind: "OIDC_ACCOUNT", accountKind: "GOOGLE"),
            ])
        let begun = ResetBeginOperation.Output(challenge)
        #expect(try roundTrip(begun) == begun)
        // The walkthrough gets the challenge back intact, token included.
        let again = try begun.resetChallenge()
        #expect(again.backupId == id && again.challenge == challenge.challenge && again.expiresAt == 1_790_000_900)
        #expect(again.token.withUnsafeBytes { Array($0) } == Array("sbx.token-value".utf8))
        #expect(!begun.description.contains("sbx.token-value"))

        let plan = ResetPlanOperation.Output(
            tenant: "drill", backupId: id.rawValue, fromLedger: true, sentBefore: false)
        #expect(try roundTrip(plan) == plan)
        let review = WalkthroughReview(
            backupId: id.rawValue, factors: [#"PASSKEY "iCloud" (enrolled 2026-05-01)"#], devices: [],
            turnkeySubOrgIds: [Self.subOrg], lookupRows: 3, sealedBlobBytes: nil, notWiped: ["the Root Key"])
        #expect(try roundTrip(review) == review)
        var withBlob = review
        withBlob.sealedBlobBytes = 1024
        #expect(try roundTrip(withBlob) == withBlob)
        let who = ResetWalkthroughOperation.Output(tenant: "drill", operator: "sam")
        #expect(try roundTrip(who) == who)
        let teardown = ResetTeardownOperation.Output(
            permitted: true,
            outcomes: [
                .init(subOrgId: Self.subOrg, outcome: "deleted", notSent: nil),
                .init(subOrgId: "0d3e0a52-2f7e-4c1e-9a36-0c4f6f0b8a99", outcome: nil, notSent: "invalid_stamp"),
            ])
        #expect(try roundTrip(teardown) == teardown)
        #expect(try roundTrip(ResetTeardownOperation.Output(permitted: false, outcomes: [])).permitted == false)
    }

    @Test func secretsStayOutOfOperationDescriptions() {
        let token = SecretBytes(Array("sbx.secret-token".utf8))
        let plan = ResetPlanOperation(token: token, backupAccountId: nil)
        let complete = ResetCompleteOperation(token: token, signature: "MEUCIQsignature==", backupAccountId: nil)
        for text in [String(describing: plan), String(describing: complete), "\(plan) \(complete)"] {
            #expect(!text.contains("sbx.secret-token") && !text.contains("MEUCIQsignature"))
        }
    }

    @Test func everyOperationIsRegistered() {
        let names: [any ConsoleOperation.Type] = [
            ResetBeginOperation.self, ResetPlanOperation.self, ResetCompleteOperation.self,
            ResetWalkthroughOperation.self, ResetReviewOperation.self, ResetTeardownOperation.self,
            CleanupScanOperation.self, CleanupRunOperation.self, CleanupStatusOperation.self,
            CleanupIngestLogOperation.self, CleanupTeardownRequestOperation.self, CleanupSubmitOperation.self,
        ]
        for op in names { #expect(ConsoleOperations.byName[op.name] == op, "\(op.name)") }
        #expect(CleanupRunOperation.streams)
    }

    /// The server decodes each operation from its request body: every one survives the wire.
    @Test func operationBodiesRoundTrip() throws {
        let token = SecretBytes(Array("sbx.token".utf8))
        try roundTrip(ResetBeginOperation(backupAccountId: "backup_account_02ab"))
        try roundTrip(ResetPlanOperation(token: token, backupAccountId: nil))
        try roundTrip(ResetCompleteOperation(token: token, signature: "MEUC", backupAccountId: "backup_account_02ab"))
        try roundTrip(ResetWalkthroughOperation())
        try roundTrip(ResetReviewOperation(query: "passkey abc"))
        try roundTrip(ResetTeardownOperation(items: [.init(subOrgId: Self.subOrg, body: "{}", stamp: "s")]))
        try roundTrip(CleanupScanOperation(graceSeconds: nil))
        try roundTrip(CleanupScanOperation(graceSeconds: 0))
        try roundTrip(CleanupRunOperation(execute: true, max: 5, concurrency: 2, graceSeconds: 60, confirmed: true))
        try roundTrip(CleanupStatusOperation(states: ["failed", "pending"], reason: "reset", limit: 20))
        try roundTrip(CleanupIngestLogOperation(text: "line one\nline two\n"))
        try roundTrip(CleanupTeardownRequestOperation(subOrgId: Self.subOrg))
        // A body that is not UTF-8 still arrives byte for byte (the stamp covers the exact bytes).
        let raw = Data([0x7B, 0xFF, 0x00, 0x7D])
        #expect(try roundTrip(CleanupSubmitOperation(body: raw, stamp: "s")).body == raw)
    }

    // MARK: - In-process operations on a sandbox tenant

    /// A store in a temporary directory with an admin, a sandbox tenant of seeded backups and
    /// `orphans` sub-orgs nothing references, and an in-process console over it.
    struct SandboxConsole {
        let opened: OpenedStore
        var store: any FullConsoleStore { opened.store }
        let console: LocalConsole
        let caller: Caller
        let tenant: TenantName
        let access: AccessService

        init(orphans: Int, backend: TestBackend) async throws {
            opened = try await backend.open(clock: WallClock.system.millis)
            let store = opened.store
            access = AccessService(store: store)
            let token = try await access.bootstrap(admin: try OperatorName("root"))
            let op = try await access.authenticate(token: token)
            tenant = try TenantName("drill")
            let record = TenantRecord(
                name: tenant, isSandbox: true,
                policy: TenantPolicy(cleanupGraceSeconds: 0, retryCapMillis: 50, turnkeyRPS: 10_000),
                createdAt: Int64(Date().timeIntervalSince1970))
            try await access.createTenant(record, by: op)
            _ = try await SandboxSeeder(store: store).run(
                tenant: record, backups: 5, orphans: orphans, seed: 21, operatorName: "root")
            console = LocalConsole(store: store, path: opened.location)
            caller = Caller(token: token, tenant: tenant.rawValue)
        }

        func cleanUp() async { await console.stopSandboxes() }

        /// Another operator of the tenant, with `role`.
        func caller(_ name: String, role: Role) async throws -> Caller {
            let root = try await access.session(
                operator: try await access.authenticate(token: try #require(caller.token)), tenant: tenant)
            let token = try await access.addOperator(try OperatorName(name), role: role, session: root)
            return Caller(token: token, tenant: tenant.rawValue)
        }
    }

    /// Hands the running task its own cancellation from inside a progress callback, even when
    /// the first report comes before the task's handle is stored.
    final class Canceller: Sendable {
        private let state = Mutex<(task: Task<CleanupRunOperation.Output, any Error>?, requested: Bool)>((nil, false))

        func hold(_ task: Task<CleanupRunOperation.Output, any Error>) {
            let cancel = state.withLock { state in
                state.task = task
                return state.requested
            }
            if cancel { task.cancel() }
        }

        func cancel() {
            let task = state.withLock { state in
                state.requested = true
                return state.task
            }
            task?.cancel()
        }
    }

    /// Runs `body` on a fresh sandbox console, then stops its emulators and removes its files.
    func withSandbox(orphans: Int, _ backend: TestBackend, _ body: (SandboxConsole) async throws -> Void)
        async throws
    {
        let f = try await SandboxConsole(orphans: orphans, backend: backend)
        do {
            try await body(f)
        } catch {
            await f.cleanUp()
            throw error
        }
        await f.cleanUp()
    }

    @Test(arguments: TestBackend.available) func cancellingARunStopsItWithEveryItemJournaled(backend: TestBackend)
        async throws
    {
        let orphans = 40
        try await withSandbox(orphans: orphans, backend) { f in
            let scan = try await f.console.perform(CleanupScanOperation(graceSeconds: 0), as: f.caller)
            #expect(scan.sandbox && scan.tenant == "drill")
            #expect(scan.report.orphans.filter(\.eligible).count == orphans)
            try roundTrip(scan)

            let operation = CleanupRunOperation(
                execute: true, max: 100, concurrency: 3, graceSeconds: 0, confirmed: true)
            let canceller = Canceller()
            let events = Mutex(0)
            let console = f.console
            let caller = f.caller
            let task = Task { () async throws -> CleanupRunOperation.Output in
                try await console.perform(operation, as: caller) { _ in
                    events.withLock { $0 += 1 }
                    canceller.cancel()
                }
            }
            canceller.hold(task)
            let stopped = try await task.value
            let report = stopped.report
            #expect(events.withLock { $0 } >= 1)
            #expect(report.items.count < orphans, "the run was not stopped early")
            #expect(report.stoppedReason?.hasPrefix("interrupted") == true)
            // The calls in flight when the caller went finished; those still waiting for their
            // rate slot were not sent (pending, attempts 0): nothing is left half-sent.
            #expect(
                report.items.allSatisfy { ["deleted", "alreadyGone", "pending"].contains($0.outcome) },
                "\(report.items)")
            #expect(report.failed == 0)
            let journal = try await f.store.cleanupItems(tenant: f.tenant, states: nil)
            #expect(journal.count == orphans)
            let outcomes = Dictionary(uniqueKeysWithValues: report.items.map { ($0.subOrgId, $0.outcome) })
            for item in journal {
                if outcomes[item.subOrgId] == "pending" {
                    #expect(item.state == .pending && item.attempts == 0, "\(item.subOrgId): \(item.state)")
                } else if outcomes[item.subOrgId] != nil {
                    #expect(item.state == .deleted || item.state == .alreadyGone, "\(item.subOrgId)")
                    #expect(item.body != nil, "\(item.subOrgId) was sent without a journaled body")
                } else {
                    // Never started: pending, no attempt, no body sent, no cancellation recorded.
                    #expect(item.state == .pending && item.attempts == 0, "\(item.subOrgId): \(item.state)")
                    #expect(item.lastError == nil, "\(item.subOrgId): \(item.lastError ?? "")")
                }
            }
            let wire = try roundTrip(stopped)
            #expect(wire.report.stoppedReason == report.stoppedReason)

            // The next run, not cancelled, finishes the rest.
            let rest = try await f.console.perform(operation, as: f.caller)
            #expect(rest.report.stoppedReason == nil)
            let finished = report.items.filter { $0.outcome != "pending" }.count
            #expect(rest.report.deleted + rest.report.alreadyGone == orphans - finished)
            let status = try await f.console.perform(
                CleanupStatusOperation(states: ["pending"], reason: nil, limit: 10), as: f.caller)
            #expect(status.pending == 0 && status.matching == 0)
            try roundTrip(status)
        }
    }

    @Test(arguments: TestBackend.available) func anExecutingRunNeedsConfirmation(backend: TestBackend) async throws {
        try await withSandbox(orphans: 2, backend) { f in
            let refused = await #expect(throws: ConsoleError.self) {
                try await f.console.perform(
                    CleanupRunOperation(execute: true, max: 10, concurrency: 1, graceSeconds: 0, confirmed: false),
                    as: f.caller)
            }
            #expect(refused?.kind == .usage && refused?.message.contains("drill") == true)
            #expect(try await f.store.cleanupCounts(tenant: f.tenant)[.deleted] == nil)
            let dry = try await f.console.perform(
                CleanupRunOperation(execute: false, max: 10, concurrency: 1, graceSeconds: 0, confirmed: false),
                as: f.caller)
            #expect(dry.report.dryRun && dry.report.items.count == 2)
            let ingest = try await f.console.perform(
                CleanupIngestLogOperation(
                    text: "remove_factor.turnkey_suborg_orphaned suborg_id=\(Self.subOrg)\nother\n"),
                as: f.caller)
            #expect(ingest == IngestReport(lines: 2, found: 1, new: 1))
        }
    }

    static var fixtures: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("runbooks/fixtures")
    }

    /// The walkthrough's state machine over the operations (what the console runs, in-process
    /// here and against `backupctl serve` there): find, proof with the Root Key, wipe, and the
    /// teardown submit that only a cleaner may send.
    @Test(arguments: TestBackend.available) func walkthroughRunsOnTheOperations(backend: TestBackend) async throws {
        try await withSandbox(orphans: 0, backend) { f in
            let imported = try await BackupImporter(store: f.store).run(
                directory: Self.fixtures.appendingPathComponent("export"), tenant: f.tenant, dryRun: false,
                operatorName: "root")
            #expect(imported.imported == 2)
            let backupId = "backup_account_030b2e4ce2de76318c0ef50964d225910b64019d8e43620d6d166b6bd100ad26e8"
            let support = try await f.caller("sam", role: .support)
            let viewer = try await f.caller("vera", role: .viewer)
            let denied = await #expect(throws: ConsoleError.self) {
                try await f.console.perform(ResetWalkthroughOperation(), as: viewer)
            }
            #expect(denied?.code == "permission_denied")
            let reviewDenied = await #expect(throws: ConsoleError.self) {
                try await f.console.perform(ResetReviewOperation(query: backupId), as: viewer)
            }
            #expect(reviewDenied?.code == "permission_denied")

            let who = try await f.console.perform(ResetWalkthroughOperation(), as: support)
            #expect(who == ResetWalkthroughOperation.Output(tenant: "drill", operator: "sam"))
            var walk = ResetWalkthrough(
                backend: ConsoleResetBackend(api: f.console, caller: support), tenant: who.tenant,
                operatorName: who.operator)
            guard case .review(let review) = try await walk.handle(.identify(backupId)) else {
                Issue.record("no review")
                return
            }
            #expect(review.backupId == backupId && review.lookupRows == 3 && review.factors.count == 2)
            guard case .proof = try await walk.handle(.proceed) else {
                Issue.record("no proof step")
                return
            }
            let json = try Data(contentsOf: Self.fixtures.appendingPathComponent("root-key.json"))
            let rootKey = try UserRecovery.rootKey(json: Array(json))
            guard case .confirm(let tenant, _) = try await walk.handle(.presentProof(rootKey)) else {
                Issue.record("no confirmation step")
                return
            }
            #expect(tenant == "drill")
            _ = try await walk.handle(.confirm(tenantName: "drill"))
            guard case .teardown(let result, let items, let needStamps) = try await walk.handle(.wipe) else {
                Issue.record("no teardown step")
                return
            }
            #expect(result.wiped && result.backupId == backupId && !needStamps)
            #expect(try await f.store.backup(tenant: f.tenant, id: backupId) == nil)
            let stamped = items.compactMap { item in
                item.stamp.map { ResetTeardownOperation.Item(subOrgId: item.subOrgId, body: item.body.text, stamp: $0) }
            }
            #expect(stamped.count == 1)

            // Submitting is a cleaner's action: for support nothing is sent and no refusal is audited.
            let before = try await f.store.latestAuditEntries(tenant: f.tenant, limit: 1000)
            let notSent = try await f.console.perform(ResetTeardownOperation(items: stamped), as: support)
            #expect(notSent == ResetTeardownOperation.Output(permitted: false, outcomes: []))
            #expect(try await f.store.latestAuditEntries(tenant: f.tenant, limit: 1000).count == before.count)
            #expect(try await f.store.stampedTeardown(tenant: f.tenant, subOrgId: stamped[0].subOrgId) == nil)
            let sent = try await f.console.perform(ResetTeardownOperation(items: stamped), as: f.caller)
            #expect(sent.permitted && sent.outcomes.count == 1 && sent.outcomes[0].notSent == nil, "\(sent)")
            #expect(["deleted", "alreadyGone"].contains(sent.outcomes[0].outcome ?? ""), "\(sent)")
            try roundTrip(sent)

            let audit = try await f.store.latestAuditEntries(tenant: f.tenant, limit: 1000)
            let actions = Set(audit.filter { $0.operatorName == "sam" }.map(\.action))
            #expect(
                actions.isSuperset(of: ["reset.walkthrough.review", "reset.begin", "reset.complete"]), "\(actions)")
            // The reset token is a bearer credential: the audit keeps a prefix of its hash only.
            #expect(!audit.contains { $0.details.values.contains { $0.hasPrefix("sbx.") } })
        }
    }
}
