import BackupModel
import BackupctlTestSupport
import ConsoleStore
import Foundation
import Synchronization
import Testing

@testable import PostgresStore

/// Runs `body` with a store opened (migrated) on a database of its own.
func withStore<T: Sendable>(
    clock: @escaping @Sendable () -> Int64 = { 1_780_000_000_000 }, _ body: (PostgresConsoleStore) async throws -> T
) async throws -> T {
    try await PostgresTestDatabase.make { testDatabase in
        try await withDatabase(testDatabase) { database in
            try await body(try await PostgresConsoleStore.open(database, clock: clock))
        }
    }
}

func draft(_ action: String, target: String? = nil) -> AuditDraft {
    AuditDraft(operatorName: "tester", tenant: "alpha", action: action, target: target)
}
