import BackupCrypto
import BackupModel
import ConsoleStore
import Foundation
import Synchronization

/// The server's audit signer: holds the private key read from the key file and signs
/// checkpoints of the chain every ``everyEntries`` entries (``checkpointAfterAppends(store:)``,
/// called after each request) and, while entries keep arriving, at least every T seconds
/// (``run(store:every:sleep:)``, a long-running service).
///
/// A failure to sign never fails the request that wrote the entries: it is kept in
/// ``lastError`` (for readiness and logs) and the next call tries again.
///
/// Anchored outside the store: the signer keeps its high-water mark (the newest checkpoint it
/// signed, ``AuditAnchor``'s line format) in a file beside its key, and refuses to start or to
/// sign over a chain that does not extend it — a store whose chain was rewritten and
/// recomputed, or cut, is never signed again (no laundering). Each checkpoint is also appended
/// to the witness file, if one is given, as it is made.
public final class AuditSigner: Sendable {
    public let publicKey: AuditPublicKey
    /// Sign once this many entries follow the newest checkpoint.
    public let everyEntries: Int64
    /// The high-water mark file (`<key file>.hwm`); `nil`: none (a key held only in memory, tests).
    public let highWaterMarkPath: String?
    /// An append-only JSON-lines file every checkpoint is written to (`serve --audit-witness`).
    public let witnessPath: String?
    private let privateKey: SecretBytes
    private let clock: WallClock
    private let failure = Mutex<ConsoleError?>(nil)

    public init(
        privateKey: SecretBytes, clock: WallClock, everyEntries: Int64 = 100, highWaterMarkPath: String? = nil,
        witnessPath: String? = nil
    ) throws(ConsoleError) {
        guard everyEntries > 0 else {
            throw .invalid("invalid_checkpoint_interval", "Audit checkpoints need a positive entry interval.")
        }
        publicKey = try AuditPublicKey(bytes: try P256.publicKey(privateKey: privateKey, compressed: true))
        self.privateKey = privateKey
        self.clock = clock
        self.everyEntries = everyEntries
        self.highWaterMarkPath = highWaterMarkPath
        self.witnessPath = witnessPath
    }

    /// The signer of the key in `keyFile` (mode 0600 or 0400; see ``AuditKeyFile/load(_:)``),
    /// with its high-water mark in `<keyFile>.hwm`.
    public convenience init(
        keyFile: String, clock: WallClock, everyEntries: Int64 = 100, witnessPath: String? = nil
    ) throws(ConsoleError) {
        try self.init(
            privateKey: try AuditKeyFile.load(keyFile), clock: clock, everyEntries: everyEntries,
            highWaterMarkPath: keyFile + ".hwm", witnessPath: witnessPath)
    }

    /// The newest checkpoint this signer signed, from its high-water mark file (`nil`: none yet).
    public func highWaterMark() throws(ConsoleError) -> AuditCheckpoint? {
        guard let highWaterMarkPath, FileManager.default.fileExists(atPath: highWaterMarkPath) else { return nil }
        return try AuditAnchor.checkpoints(inFile: highWaterMarkPath).max { $0.seq < $1.seq }
    }

    /// At start: the store must extend the high-water mark and the witness's newest checkpoint
    /// (the entry at its seq has its head, and the store still holds that checkpoint).
    /// - Throws: `audit_chain_diverged`, naming both heads.
    public func checkStart(store: any AuditCheckpointStore) async throws(ConsoleError) {
        var marks: [(AuditCheckpoint, String)] = []
        if let mark = try highWaterMark(), let highWaterMarkPath { marks.append((mark, highWaterMarkPath)) }
        if let witnessPath, FileManager.default.fileExists(atPath: witnessPath),
            let newest = try AuditAnchor.checkpoints(inFile: witnessPath).max(by: { $0.seq < $1.seq })
        {
            marks.append((newest, witnessPath))
        }
        guard !marks.isEmpty else { return }
        let stored = Set(try await store.auditCheckpoints().map(\.hash))
        for (mark, path) in marks {
            try await Self.requireExtends(mark, store: store, source: path)
            guard stored.contains(mark.hash) else {
                throw Self.diverged(
                    mark, source: path,
                    found: "the store no longer holds that checkpoint (signed checkpoints were removed)")
            }
        }
    }

    /// Whether the store's chain still has `mark.headHash` at `mark.seq`.
    /// - Throws: `audit_chain_diverged` naming the signed head and what the store has there.
    static func requireExtends(
        _ mark: AuditCheckpoint, store: any AuditCheckpointStore, source: String
    ) async throws(ConsoleError) {
        let entry = try await store.auditEntries(tenant: nil, afterSeq: mark.seq - 1, limit: 1).first
        guard let entry, entry.seq == mark.seq else {
            let head = try await store.auditCheckpointLag().headSeq
            throw diverged(mark, source: source, found: "its chain ends at entry \(head) (entries were removed)")
        }
        guard entry.hash == mark.headHash else {
            throw diverged(mark, source: source, found: "the store has head \(short(entry.hash)) there")
        }
    }

    static func diverged(_ mark: AuditCheckpoint, source: String, found: String) -> ConsoleError {
        ConsoleError(
            .verificationFailed, code: "audit_chain_diverged",
            "The audit chain in the store does not extend the checkpoint anchored in \(source): entry \(mark.seq) was signed with head \(short(mark.headHash)), but \(found). Refusing to sign over it; run `audit verify --anchor \(source)` and restore the store from a backup."
        )
    }

    /// A head hash as an error names it: its first 16 hex digits and `…`, as git abbreviates
    /// commits. A whole 64-digit hash has a key's shape, and the console withholds those from
    /// every message it prints.
    public static func short(_ hash: String) -> String { hash.count > 16 ? String(hash.prefix(16)) + "…" : hash }

    /// Before signing: the store extends the high-water mark and still holds checkpoints up to it.
    private func checkBeforeSigning(store: any AuditCheckpointStore) async throws(ConsoleError) {
        guard let mark = try highWaterMark(), let highWaterMarkPath else { return }
        try await Self.requireExtends(mark, store: store, source: highWaterMarkPath)
        let latest = try await store.latestAuditCheckpoint()
        guard let latest, latest.seq >= mark.seq else {
            throw Self.diverged(
                mark, source: highWaterMarkPath,
                found:
                    "the store's newest checkpoint is \(latest.map { "at entry \($0.seq)" } ?? "none") (signed checkpoints were removed)"
            )
        }
    }

    /// After a checkpoint was stored: the high-water mark moves to it, the witness gets its line.
    private func anchor(_ checkpoint: AuditCheckpoint) throws(ConsoleError) {
        let line = AuditAnchor.line(checkpoint)
        if let highWaterMarkPath {
            // Never moves back: another server on the same store may have signed a newer one.
            if try highWaterMark().map({ $0.seq <= checkpoint.seq }) ?? true {
                try AuditAnchor.replace(highWaterMarkPath, with: line)
            }
        }
        if let witnessPath { try AuditAnchor.append(line, to: witnessPath) }
    }

    /// Checks, signs when due (`sign`), then anchors what was signed.
    private func signAnchored(
        store: any AuditCheckpointStore, _ sign: () async throws(ConsoleError) -> AuditCheckpoint?
    ) async throws(ConsoleError) -> AuditCheckpoint? {
        try await checkBeforeSigning(store: store)
        guard let checkpoint = try await sign() else { return nil }
        try anchor(checkpoint)
        return checkpoint
    }

    /// The last signing failure, `nil` once a later attempt succeeded.
    public var lastError: ConsoleError? { failure.withLock { $0 } }

    /// After a request appended entries: signs when ``everyEntries`` follow the newest
    /// checkpoint (or there is none yet).
    @discardableResult
    public func checkpointAfterAppends(store: any AuditCheckpointStore) async -> AuditCheckpoint? {
        await attempt { () async throws(ConsoleError) in
            try await signAnchored(store: store) { () async throws(ConsoleError) in
                try await AuditLog.checkpointIfDue(
                    store: store, privateKey: privateKey, nowMillis: clock.millis(), every: everyEntries,
                    maxAgeMillis: .max)
            }
        }
    }

    /// One tick of the periodic signer: signs when any entry follows the newest checkpoint.
    @discardableResult
    public func checkpointIfBehind(store: any AuditCheckpointStore) async -> AuditCheckpoint? {
        await attempt { () async throws(ConsoleError) in
            try await signAnchored(store: store) { () async throws(ConsoleError) in
                try await AuditLog.checkpointIfDue(
                    store: store, privateKey: privateKey, nowMillis: clock.millis(), every: 1, maxAgeMillis: 0)
            }
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
