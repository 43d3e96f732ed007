import BackupModel
import ConsoleStore

/// A factor handed over from one backup to another (``BackupWrite/takesOver``), run the same way
/// on any store: the handover and the write that claims the factor are one transaction, so a
/// refused write leaves the factor with its old backup and no lookup row ever names a backup
/// the store does not hold. Each store's suite compares ``run(on:)`` with ``expected``.
public enum FactorHandoverScenario {
    /// Which backup a lookup row names.
    public enum Owner: Sendable, Equatable {
        case old, claimant, other, nobody
    }

    /// What the store did at each step.
    public struct Outcome: Sendable, Equatable {
        /// A batch holding the claimant and a backup with a real conflict: refused as a whole.
        public var refusedBatch: String?
        public var ownerAfterRefusedBatch: Owner
        public var claimantAfterRefusedBatch: Bool
        /// The claimant naming a backup that does not own the factor as its owner.
        public var staleHandover: String?
        public var ownerAfterStaleHandover: Owner
        /// A row taken over that the write does not own afterwards.
        public var invalidHandover: String?
        /// The claimant alone: written, the factor with it, the old backup's other rows kept.
        public var ownerAfterHandover: Owner
        public var claimantStored: Bool
        public var oldKeepsItsOtherRows: Bool
        public var auditEntriesOfTheHandover: Int
    }

    public static let expected = Outcome(
        refusedBatch: "factor_conflict", ownerAfterRefusedBatch: .old, claimantAfterRefusedBatch: false,
        staleHandover: "factor_conflict", ownerAfterStaleHandover: .old, invalidHandover: "invalid_handover",
        ownerAfterHandover: .claimant, claimantStored: true, oldKeepsItsOtherRows: true, auditEntriesOfTheHandover: 1)

    /// Creates tenant `sandbox` in `store` and runs the steps.
    public static func run(on store: any ConsoleStore) async throws -> Outcome {
        let tenant = try TenantName("sandbox")
        let audit = AuditDraft(operatorName: "test", tenant: tenant.rawValue, action: "test.write")
        try await store.createTenant(TenantRecord(name: tenant, isSandbox: true, createdAt: 1), audit: audit)
        let writes = try SyntheticBackups.writes(seed: 77, indices: 0..<4, now: 1_750_000_000)
        let (old, claimant, other, held) = (writes[0], writes[1], writes[2], writes[3])
        try await store.writeBackups(tenant: tenant, [old, other, held], audit: audit)
        guard old.lookupRows.count >= 2, let moving = old.lookupRows.first?.pk, let heldPK = held.lookupRows.first?.pk
        else { throw ConsoleError.internalError("the synthetic backups have too few lookup rows") }
        func owner() async throws -> Owner {
            switch try await store.lookup(tenant: tenant, pk: moving)?.backupId {
            case old.record.backupId: .old
            case claimant.record.backupId: .claimant
            case nil: .nobody
            default: .other
            }
        }
        func code(_ body: () async throws -> Void) async throws -> String? {
            do {
                try await body()
                return nil
            } catch let error as ConsoleError {
                return error.code
            }
        }
        var claiming = claimant
        claiming.lookupRows.append(LookupRow(pk: moving, backupId: claimant.record.backupId))
        claiming.takesOver = [LookupRow(pk: moving, backupId: old.record.backupId)]
        var conflicting = other
        conflicting.lookupRows.append(LookupRow(pk: heldPK, backupId: other.record.backupId))

        var outcome = expected
        outcome.refusedBatch = try await code {
            try await store.writeBackups(tenant: tenant, [claiming, conflicting], audit: audit)
        }
        outcome.ownerAfterRefusedBatch = try await owner()
        outcome.claimantAfterRefusedBatch = try await store.backup(tenant: tenant, id: claimant.record.backupId) != nil

        var stale = claiming
        stale.takesOver = [LookupRow(pk: moving, backupId: other.record.backupId)]
        outcome.staleHandover = try await code { try await store.writeBackup(tenant: tenant, stale, audit: audit) }
        outcome.ownerAfterStaleHandover = try await owner()

        var invalid = claimant
        invalid.takesOver = [LookupRow(pk: moving, backupId: old.record.backupId)]
        outcome.invalidHandover = try await code {
            try await store.writeBackup(tenant: tenant, invalid, audit: audit)
        }

        let before = try await store.auditEntries(tenant: nil, afterSeq: 0, limit: 10_000).count
        try await store.writeBackups(tenant: tenant, [claiming], audit: audit)
        outcome.auditEntriesOfTheHandover =
            try await store.auditEntries(tenant: nil, afterSeq: 0, limit: 10_000).count - before
        outcome.ownerAfterHandover = try await owner()
        outcome.claimantStored = try await store.backup(tenant: tenant, id: claimant.record.backupId) != nil
        let oldRows = Set(try await store.lookupRows(tenant: tenant, backupId: old.record.backupId).map(\.pk))
        outcome.oldKeepsItsOtherRows = oldRows == Set(old.lookupRows.map(\.pk)).subtracting([moving])
        return outcome
    }
}
