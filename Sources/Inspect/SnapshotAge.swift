import BackupModel
import ConsoleStore

/// How old the tenant's view of its Backup Service is, for `stats` and `show`.
///
/// A sandbox tenant's store is its service (always current). A live tenant's store is the
/// newest imported export: `snapshotAt` is when that copy started, `null` when no import said.
public struct SnapshotAge: Sendable, Equatable, Codable {
    /// `live` (sandbox: the store is the service), `snapshot`, or `unknown` (no import with a time).
    public var source: String
    /// RFC 3339.
    public var snapshotAt: String?
    public var ageSeconds: Int64?
    public var complete: Bool?

    /// - Parameter now: Unix seconds.
    public static func of(store: any ConsoleStore, tenant: TenantRecord, now: Int64) async throws(ConsoleError)
        -> SnapshotAge
    {
        if tenant.isSandbox { return SnapshotAge(source: "live") }
        guard let live = store as? any LiveTenantStore, let newest = try await live.newestSnapshot(tenant: tenant.name),
            let at = newest.snapshotAt
        else {
            return SnapshotAge(source: "unknown")
        }
        return SnapshotAge(
            source: "snapshot", snapshotAt: Timestamp.format(at), ageSeconds: max(0, now - at),
            complete: newest.complete)
    }

    /// An age in days and hours (`328d 11h`), or hours and minutes under a day (`3h 12m`).
    public static func age(_ seconds: Int64) -> String {
        let age = max(0, seconds)
        return age >= 86_400 ? "\(age / 86_400)d \(age % 86_400 / 3600)h" : "\(age / 3600)h \(age % 3600 / 60)m"
    }

    /// One line for table mode: `2026-11-22T06:00:00Z (3h 12m ago, complete)`.
    public var summary: String {
        switch source {
        case "live": return "live (sandbox: the store is the service)"
        case "snapshot":
            let age = ageSeconds ?? 0
            return "\(snapshotAt ?? "?") (\(Self.age(age)) ago, \(complete == true ? "complete" : "partial"))"
        default: return "unknown: no import gave its snapshot time (import --snapshot-at, or export.json)"
        }
    }
}
