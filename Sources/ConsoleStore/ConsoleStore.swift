import BackupModel
import Foundation

/// The console's persistent state, spoken in domain operations rather than SQL.
///
/// Every backup-level operation takes the tenant: no call can read or write across tenants.
/// Every mutation takes an ``AuditDraft`` and appends the chained audit entry in the same
/// transaction, so the log and the data cannot disagree. Every requirement is implemented once,
/// by ``SQLRuleStore`` over a backend's ``SQLDriver`` (SQLite in `SQLiteStore`, PostgreSQL in
/// `PostgresStore`).
///
/// Every requirement is `async` and takes values only: no caller code runs inside a store
/// transaction, so a store whose transactions live on a server (PostgreSQL) implements it as
/// well as SQLite. Long scans are keyset pages (`after:`/`limit:`, one read each): the caller
/// asks for the next page after the last key it saw until a page comes back short.
///
/// All methods throw ``ConsoleError``: `not_found`, `conflict`, or `internal_error` for I/O.
public protocol ConsoleStore: Sendable {
    // MARK: Tenants, operators, grants

    func createTenant(_ tenant: TenantRecord, audit: AuditDraft) async throws(ConsoleError)
    func tenant(_ name: TenantName) async throws(ConsoleError) -> TenantRecord?
    func tenants() async throws(ConsoleError) -> [TenantRecord]

    func operatorCount() async throws(ConsoleError) -> Int
    /// Adds an operator with the hash of its token. Fails with `conflict` if the name exists.
    func addOperator(_ op: OperatorRecord, tokenHash: String, audit: AuditDraft) async throws(ConsoleError)
    /// Runs `init` atomically: fails with `conflict` if any operator exists.
    func bootstrap(
        admin: OperatorRecord, tokenHash: String, tenant: TenantRecord, audit: AuditDraft
    ) async throws(ConsoleError)
    func operatorRecord(tokenHash: String) async throws(ConsoleError) -> OperatorRecord?
    func operatorRecord(named: OperatorName) async throws(ConsoleError) -> OperatorRecord?
    func operators() async throws(ConsoleError) -> [OperatorRecord]
    /// Sets the role (insert or replace).
    func grant(_ grant: GrantRecord, audit: AuditDraft) async throws(ConsoleError)
    /// Removes the grant; returns whether there was one. The audit entry is written only then.
    func revoke(operator: OperatorName, tenant: TenantName, audit: AuditDraft) async throws(ConsoleError) -> Bool
    func grants(operator: OperatorName) async throws(ConsoleError) -> [GrantRecord]
    func grants(tenant: TenantName) async throws(ConsoleError) -> [GrantRecord]
    /// Replaces the operator's token hash (the old token stops working at once); `false` if
    /// there is no such operator.
    func replaceOperatorToken(_ name: OperatorName, tokenHash: String, audit: AuditDraft) async throws(ConsoleError)
        -> Bool
    /// Gives or takes the global right to create tenants (`tenants:create`); `false` if there
    /// is no such operator.
    func setCanCreateTenants(_ name: OperatorName, _ allowed: Bool, audit: AuditDraft) async throws(ConsoleError)
        -> Bool
    /// Removes the operator and its grants; `false` if there is no such operator.
    func removeOperator(_ name: OperatorName, audit: AuditDraft) async throws(ConsoleError) -> Bool
    /// Deletes the tenant and everything in it (backups, index, grants, journal, challenges) in
    /// one transaction; the audit keeps its entries. Returns how many backups went, `nil` when
    /// there is no such tenant. The audit entry is `audit` with that count in its details
    /// under ``CountedAuditDraft/countKey``.
    func deleteTenant(_ name: TenantName, audit: CountedAuditDraft) async throws(ConsoleError) -> Int?

    // MARK: Backups and the FactorLookup index

    func backup(tenant: TenantName, id: String) async throws(ConsoleError) -> BackupRecord?
    func backupExists(tenant: TenantName, id: String) async throws(ConsoleError) -> Bool
    /// Which of `ids` the tenant holds: one read per 500 ids (a batch of a seed or an import).
    func existingBackupIds(tenant: TenantName, among ids: [String]) async throws(ConsoleError) -> Set<String>
    /// Records that an import found these backups as stored, in a copy of `seenAt` (unix
    /// seconds): their `updated_at` moves up to it, never down. A complete snapshot taken before
    /// that moment cannot then retire them (``LiveTenantStore/backupIdsWritten(tenant:since:)``).
    func confirmBackups(tenant: TenantName, ids: [String], seenAt: Int64) async throws(ConsoleError)
    func backupCount(tenant: TenantName) async throws(ConsoleError) -> Int
    /// Backup ids starting with `prefix`, in id order, at most `limit` (id prefixes, completion).
    func backupIds(tenant: TenantName, prefix: String, limit: Int) async throws(ConsoleError) -> [String]
    /// Up to `limit` backups with ids greater than `after` (`nil`: from the first), in id order.
    func backups(tenant: TenantName, after: String?, limit: Int) async throws(ConsoleError) -> [BackupRecord]
    /// The backup a lookup key points at, if any.
    func lookup(tenant: TenantName, pk: String) async throws(ConsoleError) -> LookupRow?
    func lookupRows(tenant: TenantName, backupId: String) async throws(ConsoleError) -> [LookupRow]
    /// Up to `limit` index rows with keys greater than `after` (`nil`: from the first), in pk order.
    func lookupRows(tenant: TenantName, after: String?, limit: Int) async throws(ConsoleError) -> [LookupRow]
    /// What the index answers for `pk`, checked in the same statement against the keys the
    /// named backup's metadata implies (derived at write time): `nil` on a miss; otherwise the
    /// backup, whether it exists, and the factor implying the key (`nil`: unauthorized).
    func resolveLookup(tenant: TenantName, pk: String) async throws(ConsoleError) -> LookupResolution?
    /// ``resolveLookup(tenant:pk:)`` for many keys in one read of one state of the store (a
    /// script's run of lookups): each key the index holds, with its answer. A key left out is
    /// a miss at that moment.
    func resolveLookups(tenant: TenantName, pks: [String]) async throws(ConsoleError) -> [String: LookupResolution]
    /// Up to `limit` derived per-backup summaries after backup id `after`, in id order, no
    /// metadata decoded.
    func backupSummaries(tenant: TenantName, after: String?, limit: Int) async throws(ConsoleError) -> [BackupSummary]
    /// Up to `limit` backups after id `after`, each summary with its index drift (rows its
    /// metadata does not imply, implied keys the index does not give it), in id order; one read.
    func backupHealth(tenant: TenantName, after: String?, limit: Int) async throws(ConsoleError) -> [BackupHealthRow]
    /// Writes one backup (metadata, blob, suborg refs from its TURNKEY keys, its lookup rows,
    /// and what reads derive from its metadata: implied keys and summary) in one transaction.
    /// A lookup row owned by another backup is a `conflict` and nothing is written.
    func writeBackup(tenant: TenantName, _ write: BackupWrite, audit: AuditDraft) async throws(ConsoleError)
    /// Writes many backups in one transaction (seeding); same rules as ``writeBackup``.
    func writeBackups(tenant: TenantName, _ writes: [BackupWrite], audit: AuditDraft) async throws(ConsoleError)
    func sealedBlob(tenant: TenantName, backupId: String) async throws(ConsoleError) -> Data?
    /// Upserts FactorLookup rows exactly as given, whether or not their backups exist: the
    /// import of the service's real index, drift included. Returns how many rows changed.
    @discardableResult
    func writeLookupRows(tenant: TenantName, _ rows: [LookupRow], audit: AuditDraft) async throws(ConsoleError) -> Int

    // MARK: Bulk loads

    /// Loads a Backup Service export into `tenant` by ``BackupImporter``'s rules (each backup
    /// checked on its own, batched writes, one `import` entry per run); a dry run writes nothing.
    /// A store may load it its own way (PostgreSQL: `COPY`) as long as the report is the same.
    /// - Parameters:
    ///   - clock: Unix seconds for the records' `importedAt` / `updatedAt`.
    ///   - progress: called after each backup directory with the number done so far.
    ///   - setAside: backups a complete snapshot no longer holds: their factors are free to claim.
    ///   - snapshotAt: when the copy was taken, if known; the backups it holds unchanged are
    ///     confirmed as of then, else as of `clock` (``confirmBackups(tenant:ids:seenAt:)``).
    func importExport(
        directory: URL, tenant: TenantName, dryRun: Bool, operatorName: String, setAside: Set<String>,
        snapshotAt: Int64?, clock: @escaping @Sendable () -> Int64, progress: ((Int) throws(ConsoleError) -> Void)?
    ) async throws(ConsoleError) -> ImportReport

    // MARK: Turnkey sub-organization references

    /// The backup that references a sub-org, if any.
    func subOrgReference(tenant: TenantName, subOrgId: String) async throws(ConsoleError) -> String?
    /// Up to `limit` distinct referenced sub-org ids greater than `after`, in id order.
    func referencedSubOrgs(tenant: TenantName, after: String?, limit: Int) async throws(ConsoleError) -> [String]

    // MARK: Reset

    func insertResetChallenge(_ challenge: ResetChallengeRecord, audit: AuditDraft) async throws(ConsoleError)
    func resetChallenge(tokenHash: String) async throws(ConsoleError) -> ResetChallengeRecord?
    // The wipe of a reset the Backup Service confirmed is ``LiveTenantStore/recordServiceReset``:
    // the console never wipes a backup on its own word.

    // MARK: Cleanup journal

    func cleanupItem(tenant: TenantName, subOrgId: String) async throws(ConsoleError) -> CleanupItemRecord?
    /// Inserts the items not yet in the journal (first seen keeps its earliest time); returns how many were new.
    func enqueueCleanup(tenant: TenantName, _ items: [CleanupItemRecord], audit: AuditDraft?) async throws(ConsoleError)
        -> Int
    /// Compare-and-set on `item.version`; returns the item as written (its new version).
    @discardableResult
    func updateCleanupItem(tenant: TenantName, _ item: CleanupItemRecord, audit: AuditDraft?) async throws(ConsoleError)
        -> CleanupItemRecord
    func cleanupItems(tenant: TenantName, states: Set<CleanupItemRecord.State>?) async throws(ConsoleError)
        -> [CleanupItemRecord]

    // MARK: Audit

    /// Appends an entry for an action that changed nothing else (a read of a backup, a lookup,
    /// `show`, `check`, `stats`), committed before it returns: a read's output is shown only
    /// after this succeeds.
    @discardableResult
    func appendAudit(_ draft: AuditDraft) async throws(ConsoleError) -> AuditEntry
    /// Appends the entry of a read whose output its caller holds: committed before it returns,
    /// unless the task runs inside an ``AuditDeferral`` (a script's runner), which then holds
    /// the output until ``AuditDeferral/settle()`` says the entry committed.
    func appendReadAudit(_ draft: AuditDraft) async throws(ConsoleError)
    /// A number that changes whenever tenants, operators or grants change, by any process.
    func accessVersion() async throws(ConsoleError) -> Int64
    /// Entries in sequence order; `tenant` filters, `nil` returns all.
    func auditEntries(tenant: TenantName?, afterSeq: Int64, limit: Int) async throws(ConsoleError) -> [AuditEntry]
    /// The most recent entries (for `audit list --limit N`), oldest first.
    func latestAuditEntries(tenant: TenantName?, limit: Int) async throws(ConsoleError) -> [AuditEntry]
    /// The latest `limit` entries matching `query` (`audit list --operator --action --since`), oldest first.
    func auditEntries(_ query: AuditQuery, limit: Int) async throws(ConsoleError) -> [AuditEntry]
}
