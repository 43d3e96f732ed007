import BackupModel
import ConsoleStore
import Synchronization

/// Audit times that advance by `step` milliseconds per reading, or stay where ``set(_:)`` put them.
public final class TestClock: Sendable {
    private let next: Mutex<Int64>
    private let step: Int64

    public init(start: Int64, step: Int64 = 1) {
        next = Mutex(start)
        self.step = step
    }

    public func set(_ millis: Int64) { next.withLock { $0 = millis } }

    public var now: @Sendable () -> Int64 {
        { [self] in
            next.withLock { value in
                defer { value += step }
                return value
            }
        }
    }
}

/// A name the test knows is valid.
public func valid<Name>(_ make: () throws(ConsoleError) -> Name) -> Name {
    do { return try make() } catch { preconditionFailure("a test's fixed name is valid: \(error.message)") }
}

/// The checkpoint a signer would append after `latest` at `head` (a placeholder signature: the
/// store does not verify signatures, `audit verify` does).
public func checkpoint(head: AuditEntry, after latest: AuditCheckpoint?, signer: String = "s") -> AuditCheckpoint {
    AuditCheckpoint(
        seq: head.seq, headHash: head.hash, atMillis: head.at,
        prevCheckpointHash: latest?.hash ?? AuditEntry.genesisHash, signature: "\(signer)-\(head.seq)")
}

/// What a signer does: reads the head, signs outside the store, appends if nothing came
/// between (``AuditCheckpointStore/appendAuditCheckpoint(_:ifLatestIs:)``); tries again, at most
/// `attempts` times, when another signer won (then throws). Returns the checkpoint, `nil` for an
/// empty log.
public func signCheckpoint(_ store: any AuditCheckpointStore, signer: String, attempts: Int = 200) async throws
    -> AuditCheckpoint?
{
    for _ in 0..<attempts {
        let (head, latest) = try await store.auditHead()
        guard let head else { return nil }
        let made = checkpoint(head: head, after: latest, signer: signer)
        if try await store.appendAuditCheckpoint(made, ifLatestIs: latest) { return made }
    }
    throw ConsoleError.internalError("\(signer) lost \(attempts) races for a checkpoint")
}
