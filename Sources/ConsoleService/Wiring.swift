import Access
import BackupModel
import BackupService
import BackupServiceSandbox
import Cleanup
import ConsoleStore
import Foundation
import Inspect
import Recovery
import Synchronization
import Turnkey
import TurnkeySandbox

/// The remote systems of a tenant, built for one call: the tenant's live Backup Service and
/// Turnkey parent org, or for sandbox tenants the in-process emulators over the store. Either
/// way the services talk HTTP to them.
actor Wiring {
    /// One Backup Service emulator per sandbox tenant, started on first use on a loopback port.
    private var sandboxes: [String: BackupServiceSandboxServer] = [:]

    func sandboxBackupService(
        _ tenant: TenantName, store: any FullConsoleStore, clock: WallClock
    ) async throws(ConsoleError) -> String {
        if let running = sandboxes[tenant.rawValue] { return running.baseURL }
        let emulator = BackupServiceEmulator.sandbox(store: store, tenant: tenant, clock: clock)
        let server = try await BackupServiceSandboxServer.start(emulator)
        sandboxes[tenant.rawValue] = server
        return server.baseURL
    }

    /// Stops the sandbox emulators started so far (a later call starts them again).
    func stopAll() async {
        let running = sandboxes.values
        sandboxes = [:]
        for server in running { await server.stop() }
    }
}

extension LocalConsole {
    /// Stops the loopback emulators of sandbox tenants this console started (the end of a
    /// server's life, or of a test).
    public func stopSandboxes() async { await wiring.stopAll() }
}

extension LocalOperationContext {
    /// The session's Backup Service client.
    /// - Throws: `not_configured` for a live tenant without a Backup Service URL.
    public func backupService(_ session: Session) async throws(ConsoleError) -> BackupServiceClient {
        try await console.backupService(session)
    }

    public func resetService(_ session: Session) async throws(ConsoleError) -> ResetService {
        ResetService(
            store: try await store(), service: try await backupService(session), clock: clock,
            checkpoint: CrashHook.checkpoint(environment: console.environment))
    }

    /// The cleanup service for the session's tenant (``LocalConsole/cleanupService(_:)``).
    public func cleanupService(_ session: Session) async throws(ConsoleError) -> CleanupService {
        try await console.cleanupService(session)
    }
}

extension LocalConsole {
    /// The session's Backup Service client: the loopback emulator of a sandbox tenant, else the
    /// tenant's URL.
    /// - Throws: `not_configured` for a live tenant without a Backup Service URL.
    func backupService(_ session: Session) async throws(ConsoleError) -> BackupServiceClient {
        try await backupService(tenant: session.tenant)
    }

    func backupService(tenant: TenantRecord) async throws(ConsoleError) -> BackupServiceClient {
        if tenant.isSandbox {
            return try BackupServiceClient(
                baseURL: try await wiring.sandboxBackupService(tenant.name, store: try await store(), clock: clock))
        }
        guard let url = tenant.backupServiceURL else {
            throw .invalid(
                "not_configured",
                "Tenant \(tenant.name) has no Backup Service URL; an admin sets it with `tenant update \(tenant.name) --backup-service-url URL`."
            )
        }
        // On a server, checked again at each use: a URL saved before the rule, or a name
        // that now resolves to the server's own network, is refused before any call.
        if let policy = serverPolicy {
            _ = try OutboundTarget.check(url, option: "The Backup Service URL", policy: policy)
        }
        return try BackupServiceClient(baseURL: url)
    }

    /// The cleanup service for the session's tenant: the in-process Turnkey sandbox for sandbox
    /// tenants, AsyncHTTPClient and the tenant's key files (read here, on the server) for live ones.
    func cleanupService(_ session: Session) async throws(ConsoleError) -> CleanupService {
        try await cleanupService(tenant: session.tenant)
    }

    func cleanupService(tenant: TenantRecord) async throws(ConsoleError) -> CleanupService {
        let store = try await store()
        let connection: TurnkeyConnection
        if tenant.isSandbox {
            connection = try await SandboxTenant.open(store: store, tenant: tenant.name).connection
        } else {
            if let policy = serverPolicy, let url = tenant.turnkeyURL {
                _ = try OutboundTarget.check(url, option: "The Turnkey URL", policy: policy)
            }
            connection = try TurnkeyConnection.live(
                url: tenant.turnkeyURL, organizationId: tenant.turnkeyOrgId, apiKeyFile: tenant.turnkeyAPIKeyFile,
                cleanupKeyFile: tenant.cleanupKeyFile)
        }
        // The status proof needs the service; a live tenant without one waits for snapshots.
        let backupService =
            tenant.isSandbox || tenant.backupServiceURL != nil ? try await backupService(tenant: tenant) : nil
        var service = CleanupService(
            store: store, connection: connection, backupService: backupService,
            timing: TurnkeyTiming(clock: clock, sleep: TurnkeyTiming.system.sleep), random: random)
        service.checkpoint = CrashHook.cleanupCheckpoint(environment: environment)
        return service
    }
}

/// `BACKUPCTL_CRASH_AT=<checkpoint>` makes a debug build `_exit(137)` at that
/// ``ResetCheckpoint``, for the crash-atomicity test. Release builds compile the no-op, so
/// the variable means nothing there.
public enum CrashHook {
    public static func checkpoint(environment: [String: String]) -> @Sendable (ResetCheckpoint) -> Void {
        #if DEBUG
            guard let name = environment["BACKUPCTL_CRASH_AT"], let target = ResetCheckpoint(rawValue: name) else {
                return { _ in }
            }
            return { point in if point == target { _exit(137) } }
        #else
            return { _ in }
        #endif
    }
}

extension CrashHook {
    /// In debug builds, `BACKUPCTL_PAUSE_AT=cleanup.journaled` makes a deletion stop for good
    /// once its body is journaled, after writing `{"paused":"cleanup.journaled","subOrgId":…}`
    /// on stdout: a crash test then kills the process (`kill -9`) at exactly that point.
    /// `BACKUPCTL_PAUSE_AFTER=N` lets the first N−1 deletions of the process pass the checkpoint
    /// and stops the Nth and every later one.
    public static func cleanupCheckpoint(environment: [String: String]) -> @Sendable (CleanupCheckpoint, String) -> Void
    {
        #if DEBUG
            guard let name = environment["BACKUPCTL_PAUSE_AT"], let target = CleanupCheckpoint(rawValue: name) else {
                return { _, _ in }
            }
            let after = max(1, Int(environment["BACKUPCTL_PAUSE_AFTER"] ?? "") ?? 1)
            let passed = Mutex(0)
            return { point, subOrgId in
                guard point == target else { return }
                let count = passed.withLock { count in
                    count += 1
                    return count
                }
                guard count >= after else { return }
                let encoder = JSONEncoder()
                encoder.outputFormatting = .sortedKeys
                let json = (try? encoder.encode(["paused": point.rawValue, "subOrgId": subOrgId])) ?? Data()
                let line = String(decoding: json, as: UTF8.self) + "\n"
                _ = line.withCString { write(1, $0, strlen($0)) }
                while true { sleep(3600) }
            }
        #else
            return { _, _ in }
        #endif
    }
}
