import Access
import BackupModel
import BackupService
import ConsoleStore

/// Decides whether an orphan's being unreferenced is proven well enough to delete it.
///
/// A sandbox tenant's store is its Backup Service, so the store's word is live. A live
/// tenant's store is a snapshot, which cannot know about backups created after it: a sub-org
/// first seen unreferenced at T may be deleted only when a complete snapshot taken at or after
/// T + grace still does not reference it and is younger than the tenant's maximum snapshot age.
/// Two proofs need no snapshot: the Backup Service's reset of the backup (its 204), and
/// `/v1/backup/status` answering `not_found` for the last backup known to reference it. A
/// sub-org of a backup a snapshot retired needs that second proof whenever the tenant has a
/// Backup Service: a snapshot that left a live backup out must not get its keys destroyed.
struct SnapshotProof: Sendable {
    struct Verdict: Sendable, Equatable {
        var waitingFor: String?
        var provenBy: String?
    }

    let sandbox: Bool
    let snapshot: SnapshotRecord?
    let now: Int64
    let grace: Int64
    let maxAge: Int64
    let statusCache: StatusCache?

    init(service: CleanupService, session: Session, now: Int64, grace: Int64) async throws(ConsoleError) {
        sandbox = session.tenant.isSandbox
        snapshot = await sandbox ? nil : try service.store.newestCompleteSnapshot(tenant: session.tenantName)
        self.now = now
        self.grace = grace
        maxAge = Int64(max(0, session.tenant.policy.maxSnapshotAgeSeconds))
        statusCache = service.backupService.map { StatusCache(client: $0) }
    }

    /// - Parameter at: the time to judge at (unix seconds); the proof's own by default. A check
    ///   right before a send passes the clock's time: a snapshot that aged past the tenant's
    ///   maximum during a long run proves nothing any more.
    func verdict(_ item: CleanupItemRecord, at: Int64? = nil) async -> Verdict {
        let now = at ?? now
        // Saturating: a first-seen time from a damaged journal must not trap.
        let (eligibleAt, overflow) = item.firstSeenAt.addingReportingOverflow(grace)
        guard !overflow, now >= eligibleAt else { return Verdict(waitingFor: "grace") }
        if sandbox { return Verdict(provenBy: "live_store") }
        if item.reason == "reset" { return Verdict(provenBy: "reset") }
        // A backup a complete snapshot retired: never on the snapshot's word alone when the
        // tenant has a Backup Service to ask (a cut-short or hostile export retires live backups).
        if item.reason == "retired", let statusCache {
            guard let backupId = item.lastBackupId, await statusCache.isGone(backupId) else {
                return Verdict(waitingFor: "service_status")
            }
            return Verdict(provenBy: "status")
        }
        if let taken = snapshot?.snapshotAt, taken >= eligibleAt, now - taken <= maxAge {
            return Verdict(provenBy: "snapshot")
        }
        if let backupId = item.lastBackupId, let statusCache, await statusCache.isGone(backupId) {
            return Verdict(provenBy: "status")
        }
        return Verdict(waitingFor: "snapshot")
    }
}

/// `/v1/backup/status` answers for one scan, asked once per backup.
actor StatusCache {
    let client: BackupServiceClient
    private var answers: [String: Bool] = [:]

    init(client: BackupServiceClient) { self.client = client }

    /// True only when the service answers `not_found`; any other answer or failure is "not proven".
    func isGone(_ backupId: String) async -> Bool {
        if let known = answers[backupId] { return known }
        let gone: Bool
        do throws(BackupServiceError) {
            _ = try await client.status(backupId: backupId)
            gone = false
        } catch {
            gone = error.serviceCode == "not_found"
        }
        answers[backupId] = gone
        return gone
    }
}
