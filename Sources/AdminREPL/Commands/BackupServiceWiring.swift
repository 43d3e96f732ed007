import Access
import BackupModel
import BackupService
import BackupServiceSandbox
import ConsoleService
import ConsoleStore
import Inspect
import Recovery

/// The tenant's Backup Service: its live URL, or for sandbox tenants the emulator over the
/// store, started once per process on a loopback port. Either way the console talks HTTP to it.
@MainActor
enum BackupServiceWiring {
    private static var sandboxes: [String: BackupServiceSandboxServer] = [:]

    static func liveStore(_ ctx: CommandContext) throws(ConsoleError) -> any LiveTenantStore {
        guard let store = try ctx.existingStore() as? any LiveTenantStore else {
            throw .internalError("This store does not support live tenants.")
        }
        return store
    }

    static func client(_ ctx: CommandContext, _ session: Session) async throws(ConsoleError) -> BackupServiceClient {
        let tenant = session.tenant
        if tenant.isSandbox {
            let name = tenant.name.rawValue
            if let running = sandboxes[name] { return try BackupServiceClient(baseURL: running.baseURL) }
            let emulator = BackupServiceEmulator.sandbox(
                store: try liveStore(ctx), tenant: tenant.name, clock: ctx.clock)
            let server = try await BackupServiceSandboxServer.start(emulator)
            sandboxes[name] = server
            return try BackupServiceClient(baseURL: server.baseURL)
        }
        guard let url = tenant.backupServiceURL else {
            throw .invalid(
                "not_configured",
                "Tenant \(tenant.name) has no Backup Service URL; an admin sets it with `tenant update \(tenant.name) --backup-service-url URL`."
            )
        }
        return try BackupServiceClient(baseURL: url)
    }

    static func resetService(_ ctx: CommandContext, _ session: Session) async throws(ConsoleError) -> ResetService {
        ResetService(
            store: try liveStore(ctx), service: try await client(ctx, session), clock: ctx.clock,
            checkpoint: CrashHook.checkpoint(environment: ctx.environment))
    }
}
