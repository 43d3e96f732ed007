import BackupModel
import Simulation

/// `sandbox simulate --tenant T`: a population lives through the flows with the sandbox tenant's
/// Turnkey identity, and the world lands in the tenant (its backups imported as the complete
/// snapshot taken at the end, its sub-orgs with their users, keys and providers); the ground
/// truth, the export and the service's log go to `out`, on the console's machine (the server's,
/// when there is one, below the tenant's directory of its `--import-root`). A long job: progress per simulated day. An interruption before the world
/// lands leaves the tenant as it was.
public struct SandboxSimulateOperation: ConsoleOperation {
    public static let name = "sandbox.simulate"
    public static let streams = true
    public var tenant: String
    public var options: SimulationOptions
    public var out: String

    public init(tenant: String, options: SimulationOptions, out: String) {
        self.tenant = tenant
        self.options = options
        self.out = out
    }

    public func run(_ context: any OperationContext) async throws(ConsoleError) -> SimulationReport {
        let session = try await context.session(in: tenant)
        // On a server the output stays below the tenant's directory (`--import-root`), checked
        // after the roles so that nobody but the tenant's admin learns anything of the disk.
        let out: String
        if let policy = context.serverPolicy {
            try await session.require(.seed)
            try await session.require(.importBackups)
            out = try policy.outputDirectory(self.out, tenant: session.tenantName)
        } else {
            out = self.out
        }
        let total = options.days
        return try await SandboxTenantSimulation(store: try await context.store(), clock: context.clock).run(
            options, session: session, out: out,
            progress: { done in try? context.progress(ProgressEvent(done: done, total: total)) },
            beforeLanding: { () throws(ConsoleError) in try context.checkCancelled() })
    }
}
