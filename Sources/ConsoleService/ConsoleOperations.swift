/// Every operation of the service layer, by name: what `backupctl serve` routes and what
/// `openapi.json` describes (a test keeps the three in step).
public enum ConsoleOperations {
    public static let all: [any ConsoleOperation.Type] = [
        LookupOperation.self, ShowOperation.self, CheckOperation.self, StatsOperation.self,
        BackupsListOperation.self, WhoamiOperation.self, UseOperation.self, BackupIdsOperation.self,
        ResetBeginOperation.self, ResetPlanOperation.self, ResetCompleteOperation.self,
        ResetWalkthroughOperation.self, ResetReviewOperation.self, ResetTeardownOperation.self,
        CleanupScanOperation.self, CleanupRunOperation.self, CleanupStatusOperation.self,
        CleanupIngestLogOperation.self, CleanupTeardownRequestOperation.self, CleanupSubmitOperation.self,
        TenantCreateOperation.self, TenantUpdateOperation.self, TenantRetireThresholdOperation.self,
        TenantTurnkeyUpdateOperation.self, TenantListOperation.self, TenantDeleteOperation.self,
        OperatorAddOperation.self, OperatorGrantOperation.self, OperatorRightOperation.self, OperatorListOperation.self,
        OperatorRemoveOperation.self, OperatorTokenRotateOperation.self, ImportOperation.self, SeedOperation.self,
        AuditListOperation.self, AuditVerifyOperation.self, AuditExportOperation.self,
    ]

    public static let byName: [String: any ConsoleOperation.Type] = Dictionary(
        uniqueKeysWithValues: all.map { ($0.name, $0) })
}
