import Access
import BackupModel
import Cleanup
import ConsoleStore
import Foundation
import Turnkey
import TurnkeySandbox

/// Builds the cleanup service for the session's tenant: the in-process sandbox for sandbox
/// tenants, AsyncHTTPClient and the tenant's key files for live ones.
@MainActor
enum CleanupWiring {
    static func service(_ ctx: CommandContext, _ session: Session) async throws(ConsoleError) -> CleanupService {
        let store = try BackupServiceWiring.liveStore(ctx)
        let tenant = session.tenant
        let connection: TurnkeyConnection
        if tenant.isSandbox {
            connection = try await SandboxTenant.open(store: store, tenant: tenant.name).connection
        } else {
            connection = try TurnkeyConnection.live(
                url: tenant.turnkeyURL, organizationId: tenant.turnkeyOrgId, apiKeyFile: tenant.turnkeyAPIKeyFile,
                cleanupKeyFile: tenant.cleanupKeyFile)
        }
        // The status proof needs the service; a live tenant without one waits for snapshots.
        let backupService =
            tenant.isSandbox || tenant.backupServiceURL != nil
            ? try await BackupServiceWiring.client(ctx, session) : nil
        return CleanupService(
            store: store, connection: connection, backupService: backupService,
            timing: TurnkeyTiming(clock: ctx.clock, sleep: TurnkeyTiming.system.sleep), random: ctx.random)
    }

    /// `0`, `90`, `90s`, `30m`, `24h`, `2d` → seconds.
    static func parseDuration(_ text: String) throws(ConsoleError) -> Int {
        let units: [Character: Int] = ["s": 1, "m": 60, "h": 3600, "d": 86_400]
        var number = Substring(text)
        var scale = 1
        if let last = text.last, let unit = units[last] {
            number = text.dropLast()
            scale = unit
        }
        guard let value = Int(number), value >= 0, value <= 365 * 86_400 / scale else {
            throw .invalid("invalid_duration", "--grace must be a duration like 0, 90s, 30m, 24h or 2d, got \(text).")
        }
        return value * scale
    }
}
