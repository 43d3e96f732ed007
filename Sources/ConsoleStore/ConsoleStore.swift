import BackupModel
import Foundation

/// The console's persistent state, spoken in domain operations rather than SQL.
///
/// Every backup-level operation takes the tenant: no call can read or write across tenants.
/// Every mutation takes an ``AuditDraft`` and appends the chained audit entry in the same
/// transaction, so the log and the data cannot disagree. The SQLite implementation is
/// ``SQLiteConsoleStore``; a PostgreSQL one can implement the same protocol.
///
/// All methods throw ``ConsoleError``: `not_found`, `conflict`, or `internal_error` for I/O.
public protocol ConsoleStore: Sendable {
    // MARK: Tenants, operators, grants

    func createTenant(_ tenant: TenantRecord, audit: AuditDraft) throws(ConsoleError)
    func tenant(_ name: TenantName) throws(ConsoleError) -> TenantRecord?
    func tenants() throws(ConsoleError) -> [TenantRecord]

    func operatorCount() throws(ConsoleError) -> Int
    /// Adds an operator with the hash of its token. Fails with `conflict` if the name exists.
    func addOperator(_ op: OperatorRecord, tokenHash: String, audit: AuditDraft) throws(ConsoleError)
    /// Runs `init` atomically: fails with `conflict` if any operator exists.
    func bootstrap(
        admin: OperatorRecord, tokenHash: String, tenant: TenantRecord, audit: AuditDraft
    ) throws(ConsoleError)
    func operatorRecord(tokenHash: String) throws(ConsoleError) -> OperatorRecord?
    func operatorRecord(named: OperatorName) throws(ConsoleError) -> OperatorRecord?
    func operators() throws(ConsoleError) -> [OperatorRecord]
    /// Sets the role (insert or replace).
    func grant(_ grant: GrantRecord, audit: AuditDraft) throws(ConsoleError)
    /// Removes the grant; returns whether there was one. The audit entry is written only then.
    func revoke(operator: OperatorName, tenant: TenantName, audit: AuditDraft) throws(ConsoleError) -> Bool
    func grants(operator: OperatorName) throws(ConsoleError) -> [GrantRecord]
    func grants(tenant: TenantName) throws(ConsoleError) -> [GrantRecord]
    /// Replaces the operator's token hash (the old token stops working at once); `false` if
    /// there is no such operator.
    func replaceOperatorToken(_ name: OperatorName, tokenHash: String, audit: AuditDraft) throws(ConsoleError) -> Bool
    /// Removes the operator and its grants; `false` if there is no such operator.
    func removeOperator(_ name: OperatorName, audit: AuditDraft) throws(ConsoleError) -> Bool
    /// Deletes the tenant and everything in it (backups, index, grants, journal, challenges) in
    /// one transaction; the audit keeps its entries. Returns how many backups went, `nil` when
    /// there is no such tenant. `audit` gets that count.
    func deleteTenant(_ name: TenantName, audit: (Int) -> AuditDraft) throws(ConsoleError) -> Int?

    // MARK: Backups and the FactorLookup index

    func backup(tenant: TenantName, id: String) throws(ConsoleError) -> BackupRecord?
    func backupExists(tenant: TenantName, id: String) throws(ConsoleError) -> Bool
    func backupCount(tenant: TenantName) throws(ConsoleError) -> Int
    /// Backup ids starting with `prefix`, in id order, at most `limit` (id prefixes, completion).
    func backupIds(tenant: TenantName, prefix: String, limit: Int) throws(ConsoleError) -> [String]
    /// Streams backups in id order, `batchSize` at a time, without loading them all.
    func forEachBackup(
        tenant: TenantName, batchSize: Int, _ body: ([BackupRecord]) throws(ConsoleError) -> Void
    ) throws(ConsoleError)
    /// The backup a lookup key points at, if any.
    func lookup(tenant: TenantName, pk: String) throws(ConsoleError) -> LookupRow?
    func lookupRows(tenant: TenantName, backupId: String) throws(ConsoleError) -> [LookupRow]
    /// Streams the whole index in pk order.
    func forEachLookupRow(
        tenant: TenantName, batchSize: Int, _ body: ([LookupRow]) throws(ConsoleError) -> Void
    ) throws(ConsoleError)
    /// What the index answers for `pk`, checked in the same statement against the keys the
    /// named backup's metadata implies (derived at write time): `nil` on a miss; otherwise the
    /// backup, whether it exists, and the factor implying the key (`nil`: unauthorized).
    func resolveLookup(tenant: TenantName, pk: String) throws(ConsoleError) -> LookupResolution?
    /// Streams the derived per-backup summaries in id order, no metadata decoded.
    func forEachBackupSummary(
        tenant: TenantName, batchSize: Int, _ body: ([BackupSummary]) throws(ConsoleError) -> Void
    ) throws(ConsoleError)
    /// Streams every backup's summary with its index drift (rows its metadata does not imply,
    /// implied keys the index does not give it), in id order, a page per read transaction.
    func forEachBackupHealth(
        tenant: TenantName, batchSize: Int, _ body: ([BackupHealthRow]) throws(ConsoleError) -> Void
    ) throws(ConsoleError)
    /// Writes one backup (metadata, blob, suborg refs from its TURNKEY keys, its lookup rows,
    /// and what reads derive from its metadata: implied keys and summary) in one transaction.
    /// A lookup row owned by another backup is a `conflict` and nothing is written.
    func writeBackup(tenant: TenantName, _ write: BackupWrite, audit: AuditDraft) throws(ConsoleError)
    /// Writes many backups in one transaction (seeding); same rules as ``writeBackup``.
    func writeBackups(tenant: TenantName, _ writes: [BackupWrite], audit: AuditDraft) throws(ConsoleError)
    func sealedBlob(tenant: TenantName, backupId: String) throws(ConsoleError) -> Data?
    /// Upserts FactorLookup rows exactly as given, whether or not their backups exist: the
    /// import of the service's real index, drift included. Returns how many rows changed.
    @discardableResult
    func writeLookupRows(tenant: TenantName, _ rows: [LookupRow], audit: AuditDraft) throws(ConsoleError) -> Int

    // MARK: Turnkey sub-organization references

    /// The backup that references a sub-org, if any.
    func subOrgReference(tenant: TenantName, subOrgId: String) throws(ConsoleError) -> String?
    func forEachReferencedSubOrg(
        tenant: TenantName, batchSize: Int, _ body: ([String]) throws(ConsoleError) -> Void
    ) throws(ConsoleError)

    // MARK: Sandbox Turnkey sub-organizations (sandbox tenants only)

    /// Records sub-orgs the Turnkey sandbox lists under the tenant's parent org; existing ids
    /// keep their first `createdAt`. Returns how many were new.
    @discardableResult
    func addSandboxSubOrgs(tenant: TenantName, _ subOrgIds: [String], createdAt: Int64, audit: AuditDraft?)
        throws(ConsoleError) -> Int
    /// Removes one (the sandbox's `delete_sub_organization`); returns whether it was there.
    func removeSandboxSubOrg(tenant: TenantName, subOrgId: String, audit: AuditDraft?) throws(ConsoleError) -> Bool
    /// Streams the sandbox sub-org ids in id order.
    func forEachSandboxSubOrg(
        tenant: TenantName, batchSize: Int, _ body: ([String]) throws(ConsoleError) -> Void
    ) throws(ConsoleError)

    // MARK: Reset

    func insertResetChallenge(_ challenge: ResetChallengeRecord, audit: AuditDraft) throws(ConsoleError)
    func resetChallenge(tokenHash: String) throws(ConsoleError) -> ResetChallengeRecord?
    // The wipe of a reset the Backup Service confirmed is ``LiveTenantStore/recordServiceReset``:
    // the console never wipes a backup on its own word.

    // MARK: Cleanup journal

    func cleanupItem(tenant: TenantName, subOrgId: String) throws(ConsoleError) -> CleanupItemRecord?
    /// Inserts the items not yet in the journal (first seen keeps its earliest time); returns how many were new.
    func enqueueCleanup(tenant: TenantName, _ items: [CleanupItemRecord], audit: AuditDraft?) throws(ConsoleError)
        -> Int
    /// Compare-and-set on `item.version`; returns the item as written (its new version).
    @discardableResult
    func updateCleanupItem(tenant: TenantName, _ item: CleanupItemRecord, audit: AuditDraft?) throws(ConsoleError)
        -> CleanupItemRecord
    func cleanupItems(tenant: TenantName, states: Set<CleanupItemRecord.State>?) throws(ConsoleError)
        -> [CleanupItemRecord]

    // MARK: Audit

    /// Appends an entry for an action that changed nothing else (a read of a backup).
    @discardableResult
    func appendAudit(_ draft: AuditDraft) throws(ConsoleError) -> AuditEntry
    /// Appends the entry of a read (a lookup, `show`, `check`, `stats`): at once, or — while
    /// ``holdReadAudits(_:)`` is on — held for one transaction shared with the reads after it.
    func appendReadAudit(_ draft: AuditDraft) throws(ConsoleError)
    /// Turns holding read audits on or off. Whoever turns it on must call ``flushAudit()``
    /// and see it succeed before showing anything those reads returned.
    func holdReadAudits(_ hold: Bool)

    /// A number that changes whenever tenants, operators or grants change, by any process.
    func accessVersion() throws(ConsoleError) -> Int64
    /// How many read audits are held.
    var heldAuditCount: Int { get }
    /// Writes the held read audits, in order, in one transaction (any write transaction does
    /// it first, too); a no-op when none are held.
    func flushAudit() throws(ConsoleError)
    /// Entries in sequence order; `tenant` filters, `nil` returns all (held ones written first).
    func auditEntries(tenant: TenantName?, afterSeq: Int64, limit: Int) throws(ConsoleError) -> [AuditEntry]
    /// The most recent entries (for `audit list --limit N`), oldest first.
    func latestAuditEntries(tenant: TenantName?, limit: Int) throws(ConsoleError) -> [AuditEntry]
    /// The latest `limit` entries matching `query` (`audit list --operator --action --since`), oldest first.
    func auditEntries(_ query: AuditQuery, limit: Int) throws(ConsoleError) -> [AuditEntry]
}
