import Access
import BackupModel
import Foundation
import Inspect
import SQLiteStore

/// The store the console, server and throughput suites measure: a SQLite file in `directory`,
/// an admin (`bench`) and the `sandbox` tenant seeded with `backups` synthetic backups.
struct SeededStore {
    let path: String
    let store: SQLiteConsoleStore
    let token: SecretBytes
    let tenant: TenantName

    init(in directory: URL, backups: Int) async throws {
        path = directory.appendingPathComponent("console.db").path
        store = try SQLiteConsoleStore(path: path)
        let access = AccessService(store: store)
        token = try await access.bootstrap(admin: try OperatorName("bench"))
        tenant = try TenantName("sandbox")
        let session = try await access.session(operator: try await access.authenticate(token: token), tenant: tenant)
        _ = try await DataAdminService(store: store).seed(backups: backups, orphans: 0, seed: 9, session: session)
    }

    /// The token as text (for `BACKUPCTL_TOKEN` or an `Authorization` header).
    var tokenText: String { token.withUnsafeBytes { String(decoding: $0, as: UTF8.self) } }

    /// The credential ids of the seeded passkeys, in key order.
    func passkeys() async throws -> [String] {
        var keys: [String] = []
        var after: String?
        while true {
            let rows = try await store.lookupRows(tenant: tenant, after: after, limit: 5000)
            for row in rows where row.pk.hasPrefix("MAIN#PK|") { keys.append(String(row.pk.dropFirst(8))) }
            guard rows.count == 5000, let last = rows.last else { return keys }
            after = last.pk
        }
    }
}
