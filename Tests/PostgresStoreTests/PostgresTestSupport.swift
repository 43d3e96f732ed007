import BackupModel
import BackupctlTestSupport
import ConsoleStore
import Foundation
import Synchronization
import Testing

@testable import PostgresStore

/// Audit times that advance by `step` milliseconds per reading, or stay where ``set(_:)`` put them.
final class TestClock: Sendable {
    private let next: Mutex<Int64>
    private let step: Int64

    init(start: Int64, step: Int64 = 1) {
        next = Mutex(start)
        self.step = step
    }

    func set(_ millis: Int64) { next.withLock { $0 = millis } }

    var now: @Sendable () -> Int64 {
        { [self] in
            next.withLock { value in
                defer { value += step }
                return value
            }
        }
    }
}

/// A name the test knows is valid.
func valid<Name>(_ make: () throws(ConsoleError) -> Name) -> Name {
    do { return try make() } catch { preconditionFailure("a test's fixed name is valid: \(error.message)") }
}

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

/// The checkpoint a signer would append after `latest` at `head` (a placeholder signature: the
/// store does not verify signatures, `audit verify` does).
func checkpoint(head: AuditEntry, after latest: AuditCheckpoint?, signer: String = "s") -> AuditCheckpoint {
    AuditCheckpoint(
        seq: head.seq, headHash: head.hash, atMillis: head.at,
        prevCheckpointHash: latest?.hash ?? AuditEntry.genesisHash, signature: "\(signer)-\(head.seq)")
}

/// What a signer does: reads the head, signs outside the store, appends if nothing came
/// between (``AuditCheckpointStore/appendAuditCheckpoint(_:ifLatestIs:)``); tries again, at most
/// `attempts` times, when another signer won. Returns the checkpoint, `nil` for an empty log.
func signCheckpoint(_ store: any AuditCheckpointStore, signer: String, attempts: Int = 200) async throws
    -> AuditCheckpoint?
{
    for _ in 0..<attempts {
        let (head, latest) = try await store.auditHead()
        guard let head else { return nil }
        let made = checkpoint(head: head, after: latest, signer: signer)
        if try await store.appendAuditCheckpoint(made, ifLatestIs: latest) { return made }
    }
    Issue.record("\(signer) lost \(attempts) races for a checkpoint")
    return nil
}
