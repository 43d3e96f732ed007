import Access
import BackupCrypto
import BackupModel
import BackupctlTestSupport
import ConsoleStore
import Foundation

/// A real store of a fresh backend (a SQLite file in a temporary directory, or a PostgreSQL
/// database of its own), removed when the fixture goes away.
final class TempStore {
    let time = ManualTime(1_790_000_000_000)
    let opened: OpenedStore
    var store: any FullConsoleStore { opened.store }
    /// The SQLite file (SQLite fixtures only: the tests that read or tamper with the file).
    var path: String { opened.location }
    var directory: URL { URL(fileURLWithPath: path).deletingLastPathComponent() }

    /// A SQLite store.
    init() throws {
        let time = self.time
        opened = try TestBackend.openSQLite(clock: { time.now })
    }

    /// A store of `backend`.
    init(_ backend: TestBackend) async throws {
        let time = self.time
        opened = try await backend.open(clock: { time.now })
    }

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
