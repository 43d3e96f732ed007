import BackupCrypto
import BackupModel
import ConsoleStore
import Foundation

/// Bringing data into a tenant: `import DIR` of a backup-service export and `seed` of a
/// sandbox tenant. Admin only.
public struct DataAdminService: Sendable {
    let store: any ConsoleStore
    let clock: WallClock

    public init(store: any ConsoleStore, clock: WallClock = .system) {
        self.store = store
        self.clock = clock
    }

    /// Imports a backup-service export directory into the session's tenant.
    public func importExport(
        directory: String, dryRun: Bool, session: Session, progress: ((Int) throws(ConsoleError) -> Void)? = nil
    ) throws(ConsoleError) -> ImportReport {
        try session.require(.importBackups)
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw .invalid("invalid_directory", "Import needs an export directory; \(directory) is not one.")
        }
        let clock = self.clock
        let importer = BackupImporter(store: store, clock: { clock.seconds })
        let report = try importer.run(
            directory: URL(fileURLWithPath: directory), tenant: session.tenantName, dryRun: dryRun,
            operatorName: session.operatorName.rawValue, progress: progress)
        if session.tenant.isSandbox, !dryRun {
            // The sandbox Turnkey lists what its parent org holds: give it the sub-orgs that the
            // imported backups reference, so resets and cleanup can be rehearsed on this data.
            try store.forEachReferencedSubOrg(tenant: session.tenantName, batchSize: 1000) { ids throws(ConsoleError) in
                _ = try store.addSandboxSubOrgs(tenant: session.tenantName, ids, createdAt: clock.seconds, audit: nil)
            }
        }
        return report
    }

    /// Writes realistic synthetic backups (real keys) into a sandbox tenant.
    public func seed(
        backups: Int, orphans: Int, seed: UInt64, session: Session,
        progress: ((Int) throws(ConsoleError) -> Void)? = nil
    ) throws(ConsoleError) -> SeedReport {
        try session.require(.seed)
        let clock = self.clock
        let seeder = SandboxSeeder(store: store, clock: { clock.seconds })
        return try seeder.run(
            tenant: session.tenant, backups: backups, orphans: orphans, seed: seed,
            operatorName: session.operatorName.rawValue, progress: progress)
    }
}
