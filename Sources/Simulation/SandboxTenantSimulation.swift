import Access
import BackupModel
import ConsoleStore
import Foundation
import TurnkeySandbox

/// `sandbox simulate --tenant T`: the population lives through the flows against the sandbox
/// tenant's own Turnkey identity (its parent org and keys, derived from its name), and the world
/// lands in the tenant — the service's storage imported as the complete snapshot taken at the
/// end, and every sub-org left in Turnkey recorded with its users, keys, providers and policies —
/// so the tenant's in-process Turnkey answers `check --turnkey` and cleanup as the simulated one
/// would. The ground truth describes the whole tenant, so the tenant must be empty.
public struct SandboxTenantSimulation: Sendable {
    let store: any CleanupJournalStore & SandboxStore
    let clock: WallClock

    public init(store: any CleanupJournalStore & SandboxStore, clock: WallClock = .system) {
        self.store = store
        self.clock = clock
    }

    /// Simulates into `out` (`export/`, `ground-truth.json`, `service.log`) and lands the world
    /// in the session's tenant. Admin only (it imports).
    /// - Parameter beforeLanding: a last chance to stop (the caller has gone) before the tenant
    ///   changes.
    /// - Throws: `not_sandbox`, `tenant_not_empty`, `invalid_simulation`, and the import's errors.
    public func run(
        _ options: SimulationOptions, session: Session, out: String, progress: (@Sendable (Int) -> Void)? = nil,
        beforeLanding: () throws(ConsoleError) -> Void = {}
    ) async throws(ConsoleError) -> SimulationReport {
        try await session.require(.seed)
        try await session.require(.importBackups)
        let tenant = session.tenantName
        guard session.tenant.isSandbox else {
            throw ConsoleError(
                .invalidInput, code: "not_sandbox",
                "Tenant \(tenant) is not a sandbox tenant; simulate only lands a simulated world in sandboxes.")
        }
        try options.validate()
        let backups = try await store.backupCount(tenant: tenant)
        let subOrgs = try await store.sandboxSubOrgCount(tenant: tenant)
        guard backups == 0, subOrgs == 0 else {
            throw ConsoleError(
                .conflict, code: "tenant_not_empty",
                "Sandbox tenant \(tenant) already holds \(backups) backups and \(subOrgs) sub-orgs; simulate into an empty sandbox tenant (the ground truth describes the whole tenant)."
            )
        }
        let keys = SandboxTenant.keys(tenant)
        let world = try await Simulator.simulate(
            options,
            as: Simulator.Identity(
                parentOrgId: SandboxTenant.parentOrgId(tenant), apiKey: keys.apiKey, cleanupKey: keys.cleanupKey),
            now: clock.seconds, progress: progress)
        try world.writeExport(out)
        var report = try Simulator.finish(
            world.engine, truth: world.truth, out: out, mode: "sandbox-tenant", started: world.started,
            requests: world.requests)
        report.tenant = tenant.rawValue
        try beforeLanding()

        let export = (out as NSString).appendingPathComponent(Simulator.exportDirectory)
        let imported = try await DataAdminService(store: store, clock: clock).importExport(
            directory: export, dryRun: false, session: session)
        guard imported.failed == 0, imported.problems.isEmpty else {
            throw .internalError(
                "The simulated export did not import cleanly (\(imported.failed) backups and \(imported.problems.count) rows refused)."
            )
        }
        try await landTurnkey(world, session: session, report: report)
        return report
    }

    /// Records the sub-orgs Turnkey holds at the end with their state. The import recorded every
    /// sub-org an imported backup references; one the world deleted (a backup left behind by a
    /// failed deletion) goes again, so the tenant's Turnkey is the simulated one.
    func landTurnkey(_ world: Simulator.World, session: Session, report: SimulationReport) async throws(ConsoleError) {
        let tenant = session.tenantName
        let ids = world.directory.all()
        let held = Set(ids)
        let details = await world.sandbox.details
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        var states: [String: String] = [:]
        var bare: [String] = []
        for id in ids {
            guard let sub = details[id] else {
                bare.append(id)
                continue
            }
            do {
                states[id] = String(decoding: try encoder.encode(sub), as: UTF8.self)
            } catch {
                throw .internalError("Encoding the state of sandbox sub-org \(id) failed: \(error)")
            }
        }
        var after = ""
        while true {
            let page = try await store.sandboxSubOrgPage(tenant: tenant, after: after, limit: 1000)
            for id in page where !held.contains(id) {
                _ = try await store.removeSandboxSubOrg(tenant: tenant, subOrgId: id, audit: nil)
            }
            guard page.count == 1000, let last = page.last else { break }
            after = last
        }
        let now = clock.seconds
        if !bare.isEmpty { _ = try await store.addSandboxSubOrgs(tenant: tenant, bare, createdAt: now, audit: nil) }
        _ = try await store.putSandboxSubOrgStates(
            tenant: tenant, states, createdAt: now,
            audit: session.audit(
                "sandbox.simulate",
                details: [
                    "users": "\(report.users)", "days": "\(report.days)", "seed": "\(report.seed)",
                    "backups": "\(report.backups)", "subOrgs": "\(report.subOrgs)", "orphans": "\(report.orphans)",
                ]))
    }
}
