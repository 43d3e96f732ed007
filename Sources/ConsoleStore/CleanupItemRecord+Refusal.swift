import BackupModel

extension CleanupItemRecord {
    /// Why a compare-and-set update of a journal item wrote nothing: the item is not there
    /// (`not_found`), or another writer changed it since it was read (`stale_journal_item`).
    public static func refusedUpdate(_ subOrgId: String, tenant: TenantName, exists: Bool) -> ConsoleError {
        guard exists else { return .notFound("Sub-org \(subOrgId) is not in the cleanup journal of \(tenant).") }
        return ConsoleError(
            .conflict, code: "stale_journal_item",
            "Cleanup item \(subOrgId) of \(tenant) was changed by another writer since it was read; nothing was overwritten."
        )
    }
}
