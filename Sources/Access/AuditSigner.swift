import BackupCrypto
import BackupModel
import ConsoleStore
import Synchronization

/// The server's audit signer: holds the private key read from the key file and signs
/// checkpoints of the chain every ``everyEntries`` entries (``checkpointAfterAppends(store:)``,
/// called after each request) and, while entries keep arriving, at least every T seconds
/// (``run(store:every:sleep:)``, a long-running service).
///
/// A failure to sign never fails the request that wrote the entries: it is kept in
/// ``lastError`` (for readiness and logs) and the next call tries again.
public final class AuditSigner: Sendable {
    public let publicKey: AuditPublicKey
    /// Sign once this many entries follow the newest checkpoint.
    public let everyEntries: Int64
    private let privateKey: SecretBytes
    private let clock: WallClock
    private let failure = Mutex<ConsoleError?>(nil)

    public init(privateKey: SecretBytes, clock: WallClock, everyEntries: Int64 = 100) throws(ConsoleError) {
        guard everyEntries > 0 else {
            throw .invalid("invalid_checkpoint_interval", "Audit checkpoints need a positive entry interval.")
        }
        publicKey = try AuditPublicKey(bytes: try P256.publicKey(privateKey: privateKey, compressed: true))
        self.privateKey = privateKey
        self.clock = clock
        self.everyEntries = everyEntries
    }

    /// The signer of the key in `keyFile` (mode 0600 or 0400; see ``AuditKeyFile/load(_:)``).
    public convenience init(keyFile: String, clock: WallClock, everyEntries: Int64 = 100) throws(ConsoleError) {
        try self.init(privateKey: try AuditKeyFile.load(keyFile), clock: clock, everyEntries: everyEntries)
    }

    /// The last signing failure, `nil` once a later attempt succeeded.
    public var lastError: ConsoleError? { failure.withLock { $0 } }

    /// After a request appended entries: signs when ``everyEntries`` follow the newest
    /// checkpoint (or there is none yet).
    @discardableResult
    public func checkpointAfterAppends(store: any AuditCheckpointStore) async -> AuditCheckpoint? {
        await attempt { () async throws(ConsoleError) in
            try await AuditLog.checkpointIfDue(
                store: store, privateKey: privateKey, nowMillis: clock.millis(), every: everyEntries,
                maxAgeMillis: .max)
        }
    }

    /// One tick of the periodic signer: signs when any entry follows the newest checkpoint.
    @discardableResult
    public func checkpointIfBehind(store: any AuditCheckpointStore) async -> AuditCheckpoint? {
        await attempt { () async throws(ConsoleError) in
            try await AuditLog.checkpointIfDue(
                store: store, privateKey: privateKey, nowMillis: clock.millis(), every: 1, maxAgeMillis: 0)
        }
    }

    /// Every `seconds`, signs a checkpoint if entries arrived since the newest one, until the
    /// calling task is cancelled (or `sleep` throws); then signs the entries still uncovered,
    /// so a clean shutdown leaves the whole chain signed.
    /// - Parameters:
    ///   - store: the store, asked for on every tick (a failure to open it is kept in ``lastError``).
    ///   - sleep: waits the given milliseconds; tests inject one that moves a manual clock.
    public func run(
        store: () async throws(ConsoleError) -> any AuditCheckpointStore, every seconds: Int,
        sleep: (Int64) async throws -> Void
    ) async {
        let interval = Int64(max(1, seconds)) * 1000
        while !Task.isCancelled {
            do {
                try await sleep(interval)
            } catch {
                break
            }
            await tick(store)
        }
        await tick(store)
    }

    private func tick(_ store: () async throws(ConsoleError) -> any AuditCheckpointStore) async {
        do {
            await checkpointIfBehind(store: try await store())
        } catch {
            failure.withLock { $0 = error }
        }
    }

    private func attempt(_ body: () async throws(ConsoleError) -> AuditCheckpoint?) async -> AuditCheckpoint? {
        do {
            let checkpoint = try await body()
            failure.withLock { $0 = nil }
            return checkpoint
        } catch {
            failure.withLock { $0 = error }
            return nil
        }
    }
}
