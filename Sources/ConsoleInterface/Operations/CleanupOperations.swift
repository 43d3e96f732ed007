import Access
import BackupModel
import Cleanup
import ConsoleStore
import Foundation

/// `cleanup scan`: the sub-orgs under the parent org that no backup references (viewer).
public struct CleanupScanOperation: ConsoleOperation {
    public static let name = "cleanup.scan"
    /// Overrides the tenant's grace period (`--grace`), seconds.
    public var graceSeconds: Int?

    public init(graceSeconds: Int?) { self.graceSeconds = graceSeconds }

    public struct Output: Codable, Sendable, Equatable {
        public var tenant: String
        /// Sandbox tenants need no snapshot to prove an orphan.
        public var sandbox: Bool
        public var report: ScanReport

        public init(tenant: String, sandbox: Bool, report: ScanReport) {
            self.tenant = tenant
            self.sandbox = sandbox
            self.report = report
        }
    }

    public func run(_ context: any OperationContext) async throws(ConsoleError) -> Output {
        let session = try await context.session()
        let report = try await context.cleanupService(session).scan(session: session, graceSeconds: graceSeconds)
        return Output(tenant: session.tenantName.rawValue, sandbox: session.tenant.isSandbox, report: report)
    }
}

/// `cleanup run`: deletes the eligible orphans, or only reports them (a dry run).
///
/// A long job: progress is streamed while it executes. When the caller goes (Ctrl-C in the
/// console, a dropped connection to the server) the run starts no new deletion, lets the calls
/// in flight finish and journals them, and answers what it did (`stoppedReason` set).
public struct CleanupRunOperation: ConsoleOperation {
    public static let name = "cleanup.run"
    public static let streams = true
    public var execute: Bool
    public var max: Int
    public var concurrency: Int
    public var graceSeconds: Int?
    /// The operator confirmed the deletion (`--yes`, or the tenant name typed on a terminal);
    /// an executing run refuses without it.
    public var confirmed: Bool
    /// `--queue`: hand the eligible sub-orgs to the cleanup workers instead of deleting them here.
    public var queue: Bool?

    public init(execute: Bool, max: Int, concurrency: Int, graceSeconds: Int?, confirmed: Bool, queue: Bool = false) {
        self.queue = queue
        self.execute = execute
        self.max = max
        self.concurrency = concurrency
        self.graceSeconds = graceSeconds
        self.confirmed = confirmed
    }

    public struct Output: Codable, Sendable, Equatable {
        public var tenant: String
        public var report: RunReport

        public init(tenant: String, report: RunReport) {
            self.tenant = tenant
            self.report = report
        }

        // The report's own JSON is the command's fixed document; what it leaves out travels here.
        enum CodingKeys: String, CodingKey { case tenant, report, pending, stoppedReason }

        public init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            tenant = try c.decode(String.self, forKey: .tenant)
            report = try c.decode(RunReport.self, forKey: .report)
            report.pending = try c.decode(Int.self, forKey: .pending)
            report.stoppedReason = try c.decodeIfPresent(String.self, forKey: .stoppedReason)
        }

        public func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(tenant, forKey: .tenant)
            try c.encode(report, forKey: .report)
            try c.encode(report.pending, forKey: .pending)
            try c.encodeIfPresent(report.stoppedReason, forKey: .stoppedReason)
        }
    }

    public func run(_ context: any OperationContext) async throws(ConsoleError) -> Output {
        let session = try await context.session()
        guard max >= 0, (1...64).contains(concurrency) else {
            throw ConsoleError.usage("--max must be ≥ 0 and --concurrency between 1 and 64.")
        }
        let service = try await context.cleanupService(session)
        if execute && !confirmed {
            throw ConsoleError.usage(
                "Deleting orphaned Turnkey sub-orgs of \(session.tenantName): this is destructive; pass --yes to confirm it in batch mode."
            )
        }
        let options = CleanupRunOptions(
            execute: execute, max: max, concurrency: concurrency, graceSeconds: graceSeconds, queue: queue ?? false)
        // A caller that has gone is answered by `shouldStop` below (the calls in flight finish and
        // are journaled), so the `interrupted` that reporting would throw then is not needed.
        let onProgress: (@Sendable (RunReport, Int) -> Void)? =
            execute
            ? { @Sendable report, total in
                try? context.progress(
                    ProgressEvent(
                        done: report.items.count, total: total,
                        detail:
                            "\(report.deleted) deleted, \(report.alreadyGone) gone, \(report.failed) failed, \(report.needsUser) need user"
                    ))
            } : nil
        // The run is not a child of the calling task: cancelling the caller must not cancel the
        // Turnkey calls in flight (they finish and are journaled); it only stops new ones.
        let job = Task { () async -> Result<RunReport, ConsoleError> in
            do throws(ConsoleError) {
                return .success(
                    try await service.run(
                        session: session, options: options, progress: onProgress,
                        shouldStop: { context.isCancelled || context.isStopping },
                        // A revocation during a long run holds at the next deletion: the session
                        // is read again whenever the access version moved.
                        confirm: { () async throws(ConsoleError) in
                            try await context.session().require(.cleanupRun)
                        }))
            } catch {
                return .failure(error)
            }
        }
        let report = try await job.value.get()
        // Stopped early by the server's own stop, not by its caller: never an answer that reads as
        // done (exit 0). What it did is journaled; the error says how far it got (exit 2, retry).
        if let stopped = report.stoppedReason, context.isStopping, !context.isCancelled {
            throw ConsoleError(
                .remote, code: "server_stopping",
                "The server is stopping, so the run stopped (\(stopped)): \(report.deleted) deleted, \(report.alreadyGone) already gone, \(report.failed) failed, the rest left pending and journaled. Run `cleanup run --execute` again once the server is back."
            )
        }
        return Output(tenant: session.tenantName.rawValue, report: report)
    }
}

/// `cleanup status`: journal counts per state and the items matching the filters (viewer).
public struct CleanupStatusOperation: ConsoleOperation {
    public static let name = "cleanup.status"
    /// Only items in these states (empty: every state).
    public var states: [String]
    public var reason: String?
    public var limit: Int

    public init(states: [String], reason: String?, limit: Int) {
        self.states = states
        self.reason = reason
        self.limit = limit
    }

    public func run(_ context: any OperationContext) async throws(ConsoleError) -> StatusReport {
        let session = try await context.session()
        var parsed: Set<CleanupItemRecord.State>?
        if !states.isEmpty {
            parsed = []
            for name in states {
                guard let state = CleanupItemRecord.State(rawValue: name) else {
                    throw ConsoleError.invalid(
                        "invalid_state",
                        "--state must be pending, deleted, alreadyGone, failed, needsUser or skipped, got \(SecretShape.excerpt(name, limit: 32))."
                    )
                }
                parsed?.insert(state)
            }
        }
        guard (0...100_000).contains(limit) else {
            throw ConsoleError.usage("--limit must be between 0 and 100000.")
        }
        return try await context.cleanupService(session).status(
            session: session, states: parsed, reason: reason, limit: limit)
    }
}

/// `cleanup ingest-log FILE`: queues the sub-orgs a backup-service log names. The client reads
/// the file and sends its text.
public struct CleanupIngestLogOperation: ConsoleOperation {
    public static let name = "cleanup.ingestLog"
    public var text: String

    public init(text: String) { self.text = text }

    public func run(_ context: any OperationContext) async throws(ConsoleError) -> IngestReport {
        let session = try await context.session()
        return try await context.cleanupService(session).ingestLog(session: session, text: text)
    }
}

/// `cleanup teardown-request SUBORG_ID`: the journaled deletion body for the user to stamp.
public struct CleanupTeardownRequestOperation: ConsoleOperation {
    public static let name = "cleanup.teardownRequest"
    public var subOrgId: String

    public init(subOrgId: String) { self.subOrgId = subOrgId }

    public struct Output: Codable, Sendable, Equatable {
        /// The sub-org id, lowercased.
        public var subOrgId: String
        /// The exact body to stamp.
        public var body: String

        public init(subOrgId: String, body: String) {
            self.subOrgId = subOrgId
            self.body = body
        }
    }

    public func run(_ context: any OperationContext) async throws(ConsoleError) -> Output {
        let session = try await context.session()
        let body = try await context.cleanupService(session).teardownRequest(session: session, subOrgId: subOrgId)
        return Output(subOrgId: subOrgId.lowercased(), body: body)
    }
}

/// `cleanup submit`: journals and sends a user-stamped (break-glass) deletion. The client reads
/// the body file; its exact bytes travel here (base64 in JSON).
public struct CleanupSubmitOperation: ConsoleOperation {
    public static let name = "cleanup.submit"
    public var body: Data
    public var stamp: String
    /// Overrides the tenant's grace period for this sub-org (`--grace`), seconds.
    public var graceSeconds: Int?

    public init(body: Data, stamp: String, graceSeconds: Int? = nil) {
        self.body = body
        self.stamp = stamp
        self.graceSeconds = graceSeconds
    }

    public func run(_ context: any OperationContext) async throws(ConsoleError) -> RunReport.Item {
        let session = try await context.session()
        return try await context.cleanupService(session).submit(
            session: session, body: Array(body), stamp: stamp.trimmingCharacters(in: .whitespacesAndNewlines),
            graceSeconds: graceSeconds)
    }
}
