import Access
import BackupCrypto
import BackupModel
import ConsoleStore
import Foundation
import SQLiteStore

/// A real SQLite store in a fresh temporary directory, removed when the fixture goes away.
final class TempStore {
    let directory: URL
    let path: String
    let time = ManualTime(1_790_000_000_000)
    let store: SQLiteConsoleStore

    init() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("access-\(UUID().uuidString)")
        path = directory.appendingPathComponent("console.db").path
        let time = self.time
        store = try SQLiteConsoleStore(path: path, clock: { time.now })
    }

    deinit { try? FileManager.default.removeItem(at: directory) }

    var clock: WallClock { .manual(time) }

    func access(seed: UInt64 = 7) -> AccessService {
        AccessService(store: store, clock: clock, random: SeededRandom(seed: seed))
    }

    /// `init --admin root`; returns the admin's record and session in `sandbox`.
    func bootstrap() async throws -> (OperatorRecord, Session) {
        let access = access()
        let token = try await access.bootstrap(admin: try OperatorName("root"))
        let op = try await access.authenticate(token: token)
        return (op, try await access.session(operator: op, tenant: try TenantName("sandbox")))
    }
}
