import BackupModel
import Foundation

/// What acting on a live tenant needs of the store, beyond ``CleanupJournalStore``: the Backup
/// Service URL, snapshots that know their age, the reset ledger and the one-run-per-tenant
/// cleanup lease.
public protocol LiveTenantStore: CleanupJournalStore, AuditCheckpointStore {
    /// Sets (or clears, with `nil`) the tenant's Backup Service URL.
    func setBackupServiceURL(tenant: TenantName, url: String?, audit: AuditDraft) async throws(ConsoleError)
    /// Applies `change` to the tenant's policy, read and written in one transaction with `audit`
    /// (so a concurrent change of another knob is kept); returns the policy as written.
    /// - Throws: `not_found` for an unknown tenant.
    @discardableResult
    func updateTenantPolicy(
        tenant: TenantName, audit: AuditDraft, _ change: @escaping @Sendable (inout TenantPolicy) -> Void
    ) async throws(ConsoleError) -> TenantPolicy
    /// Replaces a live tenant's Turnkey URL, API key file and cleanup key file (paths on the
    /// console's host; `nil` cleanup key: none).
    func setTurnkeyCredentials(
        tenant: TenantName, url: String, apiKeyFile: String, cleanupKeyFile: String?, audit: AuditDraft
    ) async throws(ConsoleError)

    // MARK: Snapshots

    /// Records one import as a snapshot of the service; returns it with its sequence number.
    @discardableResult
    func recordSnapshot(tenant: TenantName, _ snapshot: SnapshotRecord, audit: AuditDraft?) async throws(ConsoleError)
        -> SnapshotRecord
    /// The snapshot with the newest known `snapshotAt` (complete or not), if any has a known time.
    func newestSnapshot(tenant: TenantName) async throws(ConsoleError) -> SnapshotRecord?
    /// The newest complete snapshot with a known time: the only kind whose silence about a
    /// sub-org proves anything.
    func newestCompleteSnapshot(tenant: TenantName) async throws(ConsoleError) -> SnapshotRecord?
    /// The highest snapshot sequence number of the tenant (0 before the first): what an import
    /// reads when it begins, so ``recordCompleteSnapshot(tenant:_:retiring:newestSeqSeen:audits:)``
    /// can tell whether another import recorded one meanwhile.
    func newestSnapshotSeq(tenant: TenantName) async throws(ConsoleError) -> Int64
    /// Records a complete snapshot and retires, in the same transaction, the backups of
    /// `retiring` it no longer holds — except any written in or after the second of the
    /// snapshot's `snapshotAt` (a copy that began before a backup was written may lack it). `audits` gets the ids really
    /// retired and returns the entries to append (after the writes, in order).
    /// - Throws: `snapshot_raced` (nothing retired or recorded) when another import recorded a
    ///   snapshot of the tenant after `newestSeqSeen`: its view and this one's cannot both hold.
    func recordCompleteSnapshot(
        tenant: TenantName, _ snapshot: SnapshotRecord, retiring ids: [String], newestSeqSeen: Int64,
        audits: @escaping @Sendable (_ retired: [String]) -> [AuditDraft]
    ) async throws(ConsoleError) -> (snapshot: SnapshotRecord, retired: [String])
    /// Every backup id of the tenant, in id order.
    func backupIds(tenant: TenantName) async throws(ConsoleError) -> [String]
    /// The tenant's backups written at `time` (Unix seconds) or later, or found unchanged by an
    /// import of a copy that new (``ConsoleStore/confirmBackups(tenant:ids:seenAt:)``): what a
    /// complete snapshot taken at `time` may lack without proving anything.
    func backupIdsWritten(tenant: TenantName, since time: Int64) async throws(ConsoleError) -> Set<String>
    /// Deletes backups a complete snapshot no longer holds (metadata, blob, lookup rows, sub-org
    /// refs) and queues their sub-orgs with reason `retired`, naming the backup; one transaction.
    func retireBackups(tenant: TenantName, ids: [String], now: Int64, audit: AuditDraft) async throws(ConsoleError)
        -> [ResetWipe]

    // MARK: Resets through the Backup Service

    /// Claims the sending of a ledger entry's reset for `holder` until `until`, and marks it sent
    /// with the sub-orgs its backup referenced (kept beside those an earlier send knew), in one
    /// transaction. Refused while another holder's claim is alive, unless it is `takeOver` (a
    /// sender known to be dead), so two consoles or servers never send one token at once.
    /// - Returns: `.claimed(sentBefore:)` — whether an earlier send was never confirmed (the
    ///   entry was sent and is not used) — or `.inFlight` with the live claim's holder and expiry.
    func claimResetSend(
        tokenHash: String, subOrgIds: [String], holder: String, now: Int64, until: Int64, takeOver: String?
    ) async throws(ConsoleError) -> ResetSendClaim
    /// Drops `holder`'s claim (its send was answered, and refused, or failed). With `unsent`
    /// (the service refused the send and no earlier send is unanswered) the entry is no longer
    /// marked sent: nothing of it reached the service's data.
    func releaseResetSend(tokenHash: String, holder: String, unsent: Bool) async throws(ConsoleError)
    /// The local part of a reset the service confirmed: in ONE transaction, mark the ledger
    /// entry used (dropping its send claim), delete what the console still holds of the backup, queue `subOrgIds` plus
    /// any the copy still references (reason `reset`, no snapshot needed), append `audit`
    /// completed with the wipe (``ResetAuditDraft/completed(_:)``).
    func recordServiceReset(
        tenant: TenantName, tokenHash: String?, backupId: String, subOrgIds: [String], now: Int64,
        audit: ResetAuditDraft
    ) async throws(ConsoleError) -> ResetWipe

    // MARK: The cleanup run lease

    /// Takes the tenant's run lease for `holder` until `expiresAt`, when it is free, expired, or
    /// held by `takeOver` (a holder known to be dead).
    /// - Returns: `nil` on success, else the current holder and its expiry.
    func acquireCleanupLease(tenant: TenantName, holder: String, now: Int64, expiresAt: Int64, takeOver: String?)
        async throws(ConsoleError) -> (holder: String, expiresAt: Int64)?
    /// Extends the lease; `false` when `holder` no longer holds it.
    func renewCleanupLease(tenant: TenantName, holder: String, expiresAt: Int64) async throws(ConsoleError) -> Bool
    func releaseCleanupLease(tenant: TenantName, holder: String) async throws(ConsoleError)
}

/// One import of a Backup Service export, as a snapshot of the live system.
public struct SnapshotRecord: Sendable, Equatable, Codable {
    public var seq: Int64
    /// When the export's copy started (Unix seconds); `nil` when nobody said.
    public var snapshotAt: Int64?
    /// Whether the export holds every backup of the deployment (so absence means deleted).
    public var complete: Bool
    public var importedAt: Int64
    public var backups: Int
    public var retired: Int

    public init(
        seq: Int64 = 0, snapshotAt: Int64?, complete: Bool, importedAt: Int64, backups: Int, retired: Int = 0
    ) {
        self.seq = seq
        self.snapshotAt = snapshotAt
        self.complete = complete
        self.importedAt = importedAt
        self.backups = backups
        self.retired = retired
    }
}

/// The answer to ``LiveTenantStore/claimResetSend(tokenHash:subOrgIds:holder:now:until:takeOver:)``.
public enum ResetSendClaim: Sendable, Equatable {
    /// The caller may send; `sentBefore` when an earlier send of this entry was never confirmed.
    case claimed(sentBefore: Bool)
    /// Another sender holds the entry until `until` (unix seconds).
    case inFlight(holder: String, until: Int64)
}

extension LiveTenantStore {
    /// Drops `holder`'s claim and keeps the entry marked sent (its outcome may be unknown).
    public func releaseResetSend(tokenHash: String, holder: String) async throws(ConsoleError) {
        try await releaseResetSend(tokenHash: tokenHash, holder: holder, unsent: false)
    }
}
