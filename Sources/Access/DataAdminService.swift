import BackupCrypto
import BackupModel
import ConsoleStore
import Foundation

/// Bringing data into a tenant: `import DIR` of a backup-service export and `seed` of a
/// sandbox tenant. Admin only.
public struct DataAdminService: Sendable {
    let store: any SandboxStore
    let clock: WallClock
    /// Reached once an import's backups are written, before its snapshot is recorded: a test
    /// records a racing import's snapshot here.
    var beforeRecording: @Sendable () async throws(ConsoleError) -> Void = {}

    public init(store: any SandboxStore, clock: WallClock = .system) {
        self.store = store
        self.clock = clock
    }

    /// Imports a backup-service export directory into the session's tenant, as a snapshot.
    ///
    /// The snapshot's time and completeness come from `snapshotAt`/`complete` (the command's
    /// `--snapshot-at`/`--complete`) or else the export's `export.json`; without either the
    /// snapshot's time is unknown, and such a snapshot never lets cleanup delete anything. A
    /// complete snapshot retires the tenant's backups it no longer holds (their lookup rows and
    /// sub-org references go with them; their sub-orgs are queued, naming the backup).
    ///
    /// Those backups are set aside before the export's backups are judged, so a factor that
    /// moved from one of them to a backup of the snapshot is handed over, not a conflict. A
    /// snapshot that would retire more than the tenant's allowance
    /// (``TenantPolicy/retireAllowance(of:)``) changes nothing unless `retireAtMost` covers the count.
    /// - Throws: `invalid_export_manifest`, `invalid_snapshot_time`, `retire_refused` (a complete
    ///   export that holds no backup at all), `retire_threshold_exceeded`, `snapshot_older`,
    ///   `snapshot_raced` (another import recorded a snapshot meanwhile; these four audited as
    ///   `import.refused`), and the importer's errors.
    public func importExport(
        directory: String, dryRun: Bool, session: Session, snapshotAt: String? = nil, complete: Bool = false,
        retireAtMost: Int? = nil, progress: ((Int) throws(ConsoleError) -> Void)? = nil
    ) async throws(ConsoleError) -> ImportReport {
        try await session.require(.importBackups)
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw .invalid("invalid_directory", "Import needs an export directory; \(directory) is not one.")
        }
        let root = URL(fileURLWithPath: directory)
        let now = clock.seconds
        let manifest = try SnapshotManifest.read(directory: root, now: now)
        let snapshotTime =
            try snapshotAt.map { (text) throws(ConsoleError) in
                try SnapshotManifest.parseTime(text, now: now, what: "--snapshot-at")
            } ?? manifest?.snapshotAt
        let isComplete = complete || (snapshotAt == nil && manifest?.complete == true)
        if complete, let manifest, !manifest.complete {
            throw .usage(
                "--complete contradicts the export's \(SnapshotManifest.fileName), which says its copy is partial; nothing was changed."
            )
        }
        if complete && snapshotTime == nil {
            throw .usage("--complete needs the snapshot's time: pass --snapshot-at T or ship export.json.")
        }
        let held = isComplete ? try SnapshotManifest.backupIds(in: root) : []
        if isComplete && held.isEmpty {
            throw await refused(
                ConsoleError(
                    .conflict, code: "retire_refused",
                    "A complete snapshot with no backup directories would retire every backup of \(session.tenantName); refusing. Check the export."
                ), ["snapshotAt": snapshotTime.map(Timestamp.format) ?? "unknown"], dryRun: dryRun, session: session)
        }
        let live = store as? any LiveTenantStore
        if isComplete, let live, let taken = snapshotTime,
            let newest = try await live.newestCompleteSnapshot(tenant: session.tenantName),
            let newestTaken = newest.snapshotAt, taken < newestTaken
        {
            throw await refused(
                ConsoleError(
                    .conflict, code: "snapshot_older",
                    "This complete snapshot was taken at \(Timestamp.format(taken)), before \(session.tenantName)'s newest complete snapshot (\(Timestamp.format(newestTaken))): it cannot say what exists now, so nothing was changed. Import a newer export; to load this one's data without retiring anything, import it as a partial snapshot (without --complete and export.json)."
                ),
                ["snapshotAt": Timestamp.format(taken), "newestSnapshotAt": Timestamp.format(newestTaken)],
                dryRun: dryRun, session: session)
        }
        // What a racing import would change: read before anything is set aside or written.
        let seqSeen = try await live?.newestSnapshotSeq(tenant: session.tenantName) ?? 0
        let setAside = try await setAsideBackups(
            live: live, held: isComplete ? held : nil, taken: snapshotTime, session: session,
            retireAtMost: retireAtMost, dryRun: dryRun)
        let clock = self.clock
        var report = try await store.importExport(
            directory: root, tenant: session.tenantName, dryRun: dryRun,
            operatorName: session.operatorName.rawValue, setAside: setAside, snapshotAt: snapshotTime,
            clock: { clock.seconds },
            progress: progress)
        report.snapshotAt = snapshotTime.map(Timestamp.format)
        // A backup (or index row) the import refused is not in the console: a "complete"
        // snapshot without it would prove its sub-orgs orphaned. Such a snapshot counts as partial.
        let trusted = isComplete && report.failed == 0 && report.problems.isEmpty
        report.complete = trusted
        // An import that wrote nothing leaves no snapshot behind either.
        let recordsSnapshot =
            (report.failed == 0 && report.problems.isEmpty) || report.imported + report.unchanged > 0
        if let live, recordsSnapshot {
            if trusted {
                // Only what was counted against the allowance: a backup written meanwhile stays.
                report.retired = try await live.backupIds(tenant: session.tenantName).filter {
                    !held.contains($0) && setAside.contains($0)
                }
            }
            if !dryRun {
                let snapshotAt = report.snapshotAt ?? "unknown"
                let seen = report.backupsSeen
                let details = { @Sendable (retired: [String]) -> [String: String] in
                    [
                        "snapshotAt": snapshotAt, "complete": String(trusted), "backups": "\(seen)",
                        "retired": "\(retired.count)",
                    ]
                }
                let record = SnapshotRecord(
                    snapshotAt: snapshotTime, complete: trusted, importedAt: now, backups: report.backupsSeen,
                    retired: report.retired.count)
                try await beforeRecording()
                if trusted {
                    let retireAudit = Self.retireDetails(retireAtMost: retireAtMost, snapshotAt: snapshotAt)
                    let snapshotAudit = session.audit("import.snapshot", details: [:])
                    let retireDraft = session.audit("import.retire", details: [:])
                    do {
                        report.retired = try await live.recordCompleteSnapshot(
                            tenant: session.tenantName, record, retiring: report.retired, newestSeqSeen: seqSeen,
                            audits: { retired in
                                var drafts: [AuditDraft] = []
                                if !retired.isEmpty {
                                    var draft = retireDraft
                                    draft.details = retireAudit(retired)
                                    drafts.append(draft)
                                }
                                var snapshot = snapshotAudit
                                snapshot.details = details(retired)
                                drafts.append(snapshot)
                                return drafts
                            }
                        ).retired
                    } catch  where error.code == "snapshot_raced" {
                        // Its backups are written; what it would have retired is not.
                        throw await refused(
                            error,
                            [
                                "snapshotAt": snapshotAt, "backups": "\(seen)", "imported": "\(report.imported)",
                                "wouldRetire": "\(report.retired.count)",
                            ], dryRun: false, session: session)
                    }
                } else {
                    try await live.recordSnapshot(
                        tenant: session.tenantName, record,
                        audit: session.audit("import.snapshot", details: details([])))
                }
            }
        }
        if session.tenant.isSandbox, !dryRun, report.imported > 0 {
            // The sandbox Turnkey lists what its parent org holds: give it the sub-orgs that the
            // imported backups reference, so resets and cleanup can be rehearsed on this data.
            // An import that wrote nothing new adds nothing: a sub-org the sandbox deleted since
            // (a cleanup, a simulated world's account deletion) stays deleted.
            var after: String?
            while true {
                let ids = try await store.referencedSubOrgs(tenant: session.tenantName, after: after, limit: 1000)
                if !ids.isEmpty {
                    _ = try await store.addSandboxSubOrgs(
                        tenant: session.tenantName, ids, createdAt: clock.seconds, audit: nil)
                }
                guard ids.count == 1000, let last = ids.last else { break }
                after = last
            }
        }
        return report
    }

    /// The details of an `import.retire` entry: how many, which (the first 100 ids), the snapshot,
    /// and the `--retire-at-most` that allowed more than the tenant's allowance, if one did.
    static func retireDetails(retireAtMost: Int?, snapshotAt: String)
        -> @Sendable ([String]) -> [String: String]
    {
        { retired in
            var details = [
                "retired": "\(retired.count)", "snapshotAt": snapshotAt,
                "backupIds": retired.prefix(100).joined(separator: ",") + (retired.count > 100 ? ",…" : ""),
            ]
            if let retireAtMost { details["retireAtMost"] = "\(retireAtMost)" }
            return details
        }
    }

    /// `error`, a complete snapshot's refusal, once it is audited as `import.refused` (its code
    /// and `details`; a dry run, which only asks, writes nothing): a retirement that was stopped
    /// is what a reviewer of the log most needs to see. The refusal stands even when the entry
    /// cannot be written, since it changed nothing.
    private func refused(_ error: ConsoleError, _ details: [String: String], dryRun: Bool, session: Session) async
        -> ConsoleError
    {
        guard !dryRun else { return error }
        var all = details
        all["code"] = error.code
        all["outcome"] = "failure"
        _ = try? await store.appendAudit(session.audit("import.refused", details: all))
        return error
    }

    /// The tenant's backups a complete snapshot (`held`: its backup ids; `nil` for a partial
    /// one) no longer holds, checked against the retire allowance before anything changes.
    /// - Throws: `retire_threshold_exceeded` naming the count and the flag that would allow it
    ///   (audited unless `dryRun`, with the first 100 of the backups it would have retired).
    private func setAsideBackups(
        live: (any LiveTenantStore)?, held: Set<String>?, taken: Int64?, session: Session, retireAtMost: Int?,
        dryRun: Bool
    ) async throws(ConsoleError) -> Set<String> {
        if let retireAtMost, retireAtMost < 0 {
            throw .invalid("invalid_retire_at_most", "--retire-at-most must be 0 or more, got \(retireAtMost).")
        }
        guard let live, let held else { return [] }
        let stored = try await live.backupIds(tenant: session.tenantName)
        // Written since the copy began: the snapshot may lack them and retires none of them, so
        // neither the allowance nor a dry run counts them.
        var recent: Set<String> = []
        if let taken { recent = try await live.backupIdsWritten(tenant: session.tenantName, since: taken) }
        let absent = Set(stored.filter { !held.contains($0) && !recent.contains($0) })
        let allowance = session.tenant.policy.retireAllowance(of: stored.count)
        let limit = retireAtMost ?? allowance
        guard absent.count > limit else { return absent }
        let policy = session.tenant.policy
        let why =
            retireAtMost != nil
            ? "more than --retire-at-most \(limit)"
            : "more than the tenant's allowance of \(allowance) (\(policy.retireMaxPercent)% of its backups, at most \(policy.retireMaxCount))"
        var details = Self.retireDetails(
            retireAtMost: retireAtMost, snapshotAt: taken.map(Timestamp.format) ?? "unknown")(absent.sorted())
        details["wouldRetire"] = details.removeValue(forKey: "retired")
        details["backups"] = "\(stored.count)"
        details["allowance"] = "\(allowance)"
        throw await refused(
            ConsoleError(
                .conflict, code: "retire_threshold_exceeded",
                "This complete snapshot would retire \(absent.count) of the \(stored.count) backups of tenant \(session.tenantName), \(why); nothing was changed. Check that the export is whole; if it is, import again with --retire-at-most \(absent.count)."
            ), details, dryRun: dryRun, session: session)
    }

    /// Writes realistic synthetic backups (real keys) into a sandbox tenant.
    public func seed(
        backups: Int, orphans: Int, seed: UInt64, session: Session,
        progress: ((Int) throws(ConsoleError) -> Void)? = nil
    ) async throws(ConsoleError) -> SeedReport {
        try await session.require(.seed)
        let clock = self.clock
        return try await store.seedSandbox(
            tenant: session.tenant, backups: backups, orphans: orphans, seed: seed,
            operatorName: session.operatorName.rawValue, clock: { clock.seconds }, progress: progress)
    }
}
