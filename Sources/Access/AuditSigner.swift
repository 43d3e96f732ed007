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
    /// The public keys of the keys this one replaced (``trustRetired(_:)``).
    private let retired = Mutex<[AuditPublicKey]>([])
    /// The hash of the newest stored checkpoint already found good (signed by a trusted key,
    /// its entry still in the chain), so it is checked once rather than before every signing.
    private let trustedLatest = Mutex<String?>(nil)
    /// Why this signer must not sign (its start check failed); `nil` once a check passed.
    private let suspended = Mutex<ConsoleError?>(nil)

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

    /// Stops signing until a start check passes: a `--db` console with the key whose store
    /// failed it may still verify, list and export, but signs nothing.
    public func suspend(_ reason: ConsoleError) { suspended.withLock { $0 = reason } }

    /// Trusts checkpoints signed by the keys this one replaced (`serve --audit-retired-key`):
    /// after a rotation the store's newest checkpoint and the carried-over high-water mark are
    /// theirs.
    public func trustRetired(_ keys: [AuditPublicKey]) { retired.withLock { $0 = keys } }

    /// This key and the retired ones, as ``AuditCheckpoint/isSigned(by:)`` takes them.
    private var trustedKeys: [[UInt8]] { [publicKey.bytes] + retired.withLock { $0.map(\.bytes) } }

    private func isTrusted(_ checkpoint: AuditCheckpoint) -> Bool {
        trustedKeys.contains { checkpoint.isSigned(by: $0) }
    }

    private var keyNames: String {
        retired.withLock { $0.isEmpty } ? "the audit key" : "the audit key or a retired one"
    }

    /// The newest checkpoint this signer signed, from its high-water mark file (`nil`: no file,
    /// or an empty one).
    /// - Throws: `invalid_anchor` when the file is unreadable or its checkpoint is not signed
    ///   by a trusted key (the file, not the store, was altered).
    public func highWaterMark() throws(ConsoleError) -> AuditCheckpoint? {
        guard let highWaterMarkPath, FileManager.default.fileExists(atPath: highWaterMarkPath) else { return nil }
        return try newest(inFile: highWaterMarkPath)
    }

    /// The newest checkpoint in an anchor file of this signer's (its last line: a witness is
    /// appended in signing order, and after a rebase its newest line has a lower seq than older
    /// ones), checked against its keys.
    private func newest(inFile path: String) throws(ConsoleError) -> AuditCheckpoint? {
        guard let mark = try AuditAnchor.checkpoints(inFile: path).last else { return nil }
        guard isTrusted(mark) else {
            throw .invalid(
                "invalid_anchor",
                "The audit anchor file \(path) holds a checkpoint of entry \(mark.seq) not signed by \(keyNames): the file was altered; restore it from a copy or from the witness."
            )
        }
        return mark
    }

    /// The checkpoints this signer keeps outside the store, newest of each file: its high-water
    /// mark and its witness's newest line. `audit verify` on a signing console checks them too.
    public func anchors() throws(ConsoleError) -> [AuditCheckpoint] {
        var found: [AuditCheckpoint] = []
        if let mark = try highWaterMark() { found.append(mark) }
        if let witnessPath, FileManager.default.fileExists(atPath: witnessPath),
            let newest = try newest(inFile: witnessPath)
        {
            found.append(newest)
        }
        return found
    }

    /// At start: the store must extend the high-water mark and the witness's newest checkpoint
    /// (the entry at its seq has its head, and the store still holds that checkpoint); a store
    /// that holds checkpoints needs the high-water mark; its newest checkpoint must be signed by
    /// a trusted key and still match its entry. Entries found after the newest checkpoint (a
    /// crash, another server's not yet signed, or entries written past any signer) are recorded
    /// in an `audit.unsigned_tail` entry naming them, then signed with it, so their adoption
    /// stays in the signed chain for good.
    /// - Returns: the unsigned entries adopted (`nil`: none).
    /// - Throws: `audit_chain_diverged` (naming both heads), `audit_anchor_missing`,
    ///   `audit_checkpoint_forged`, `invalid_anchor`.
    @discardableResult
    public func checkStart(store: any AuditCheckpointStore) async throws(ConsoleError) -> ClosedRange<Int64>? {
        let latest = try await store.latestAuditCheckpoint()
        var marks: [(AuditCheckpoint, String)] = []
        if let highWaterMarkPath {
            if let mark = try highWaterMark() {
                marks.append((mark, highWaterMarkPath))
            } else if let latest {
                throw ConsoleError(
                    .verificationFailed, code: "audit_anchor_missing",
                    "The store holds signed audit checkpoints (the newest of entry \(latest.seq)) but \(highWaterMarkPath), the audit key's high-water mark, is missing or empty: a store rolled back past it would be signed unseen. Copy the .hwm of the key or server that signed them to \(highWaterMarkPath) (after a key rotation, the old key's), or start once with --audit-rebase to anchor the store as it is (recorded in the audit log)."
                )
            }
        }
        if let witnessPath, FileManager.default.fileExists(atPath: witnessPath),
            let newest = try newest(inFile: witnessPath)
        {
            marks.append((newest, witnessPath))
        }
        if !marks.isEmpty {
            let stored = Set(try await store.auditCheckpoints().map(\.hash))
            for (mark, path) in marks {
                try await Self.requireExtends(mark, store: store, anchor: path)
                guard stored.contains(mark.hash) else {
                    throw Self.diverged(
                        mark, anchor: path,
                        found: "the store no longer holds that checkpoint (signed checkpoints were removed)")
                }
            }
        }
        guard let latest else {
            suspended.withLock { $0 = nil }
            return nil
        }
        // Everything signing would check, before anything is recorded.
        try await checkBeforeSigning(store: store, latest: latest)
        let head = try await store.auditCheckpointLag().headSeq
        suspended.withLock { $0 = nil }
        guard head > latest.seq else { return nil }
        let adopted = (latest.seq + 1)...head
        _ = try await store.appendAudit(
            AuditDraft(
                operatorName: "-", tenant: nil, action: "audit.unsigned_tail", target: nil,
                details: [
                    "firstSeq": String(adopted.lowerBound), "lastSeq": String(adopted.upperBound),
                    "entries": String(adopted.count), "checkpointSeq": String(latest.seq),
                    "key": publicKey.fingerprint,
                ]))
        if let error = await signNow(store: store) { throw error }
        return adopted
    }

    /// `serve --audit-rebase`: accepts the store as it is now — a restore from an older copy,
    /// a lost high-water mark, a rotation without the old mark — and anchors it: an
    /// `audit.rebased` entry names the anchor given up and the store's head, a checkpoint is
    /// signed over it, and the high-water mark is replaced, even by a lower seq. The store's
    /// newest checkpoint must still be genuine (a rebase accepts a rollback, not a forgery); the
    /// witness keeps its older lines, so `audit verify --anchor` on it still shows what the
    /// rollback removed.
    /// - Returns: the `audit.rebased` entry's details.
    public func rebase(store: any AuditCheckpointStore) async throws(ConsoleError) -> [String: String] {
        let latest = try await store.latestAuditCheckpoint()
        if let latest { try await verifyStored(latest, store: store) }
        let mark = try? highWaterMark()
        let head = try await store.auditCheckpointLag().headSeq
        func refused(_ why: String) -> ConsoleError {
            ConsoleError(
                .verificationFailed, code: "audit_rebase_refused",
                "--audit-rebase accepts a store rolled back behind its anchor, as it was then; \(why)")
        }
        if let mark {
            // A rollback ends before the anchored entry; a store that reaches it either extends
            // the anchor (nothing to rebase) or has another head there (a rewrite).
            if head >= mark.seq {
                let entry = try await store.auditEntries(tenant: nil, afterSeq: mark.seq - 1, limit: 1).first
                throw refused(
                    entry?.hash == mark.headHash
                        ? "this store reaches the anchored entry \(mark.seq) with its head: there is nothing to rebase; start without --audit-rebase (audit verify --anchor names what else is wrong)."
                        : "this store has entry \(mark.seq) with another head than the anchor: that is a rewrite, not a rollback."
                )
            }
            guard latest != nil else {
                throw refused("this store holds no signed checkpoint at all, so nothing in it is proven.")
            }
        }
        // Every checkpoint the copy holds must still be genuine and match its entry.
        let stored = try await store.auditCheckpoints()
        let check = try await AuditLog.verifyCheckpoints(
            store: store, checkpoints: stored, publicKeys: trustedKeys)
        guard check.ok else {
            throw refused(
                "its own checkpoints do not verify (\(check.code ?? "mismatch") at entry \(check.badSeq ?? 0)).")
        }
        let details = [
            "anchorSeq": mark.map { String($0.seq) } ?? "none",
            "anchorHead": mark.map { Self.short($0.headHash) } ?? "none",
            "storeHeadSeq": String(head),
            "checkpointSeq": latest.map { String($0.seq) } ?? "none",
            "key": publicKey.fingerprint,
        ]
        _ = try await store.appendAudit(
            AuditDraft(operatorName: "-", tenant: nil, action: "audit.rebased", target: nil, details: details))
        let checkpoint = try await AuditLog.checkpointIfDue(
            store: store, privateKey: privateKey, nowMillis: clock.millis(), force: true
        ) { last throws(ConsoleError) in
            if let last { try await self.verifyStored(last, store: store) }
        }
        guard let checkpoint else {
            throw ConsoleError(
                .conflict, code: "audit_signing_raced",
                "Another signer stored a checkpoint during the rebase; start again with --audit-rebase.")
        }
        try anchor(checkpoint, replacingNewer: true)
        suspended.withLock { $0 = nil }
        return details
    }

    /// Whether the store's chain still has `mark.headHash` at `mark.seq`.
    /// - Parameter anchor: the file that holds `mark`; `nil`: the store's own newest checkpoint.
    /// - Throws: `audit_chain_diverged` naming the signed head and what the store has there.
    static func requireExtends(
        _ mark: AuditCheckpoint, store: any AuditCheckpointStore, anchor: String?
    ) async throws(ConsoleError) {
        let entry = try await store.auditEntries(tenant: nil, afterSeq: mark.seq - 1, limit: 1).first
        guard let entry, entry.seq == mark.seq else {
            let head = try await store.auditCheckpointLag().headSeq
            throw diverged(mark, anchor: anchor, found: "its chain ends at entry \(head) (entries were removed)")
        }
        guard entry.hash == mark.headHash else {
            throw diverged(mark, anchor: anchor, found: "the store has head \(short(entry.hash)) there")
        }
    }

    static func diverged(_ mark: AuditCheckpoint, anchor: String?, found: String) -> ConsoleError {
        let checkpoint = anchor.map { "anchored in \($0)" } ?? "it stores as its newest"
        let verify = anchor.map { "audit verify --anchor \($0)" } ?? "audit verify --public-key FILE"
        return ConsoleError(
            .verificationFailed, code: "audit_chain_diverged",
            "The audit chain in the store does not extend the checkpoint \(checkpoint): entry \(mark.seq) was signed with head \(short(mark.headHash)), but \(found). Refusing to sign over it; run `\(verify)` and restore the store from a backup (or accept it with serve --audit-rebase)."
        )
    }

    /// The store's newest checkpoint, before anything is chained to it: signed by a trusted key
    /// and its entry still in the chain with the signed head. A forged row (one past the head,
    /// say) would otherwise silence the signer, or have the next checkpoint vouch for it.
    /// - Throws: `audit_checkpoint_forged`, `audit_chain_diverged`.
    private func verifyStored(_ checkpoint: AuditCheckpoint, store: any AuditCheckpointStore) async throws(ConsoleError)
    {
        if trustedLatest.withLock({ $0 }) == checkpoint.hash { return }
        guard isTrusted(checkpoint) else {
            throw ConsoleError(
                .verificationFailed, code: "audit_checkpoint_forged",
                "The store's newest audit checkpoint (of entry \(checkpoint.seq)) is not signed by \(keyNames): it was forged or altered. Refusing to sign after it; run `audit verify --public-key FILE` to find it."
            )
        }
        // A key another replaced never signs again: once this key's own checkpoint is its mark,
        // a newer one by a retired key is a forgery (a leaked old key), as `audit verify` says.
        if !checkpoint.isSigned(by: publicKey.bytes), let mark = try? highWaterMark(),
            mark.isSigned(by: publicKey.bytes)
        {
            throw ConsoleError(
                .verificationFailed, code: "audit_checkpoint_forged",
                "The store's newest audit checkpoint (of entry \(checkpoint.seq)) is signed by a retired key, after this key took over (its mark is of entry \(mark.seq)): a retired key signed after the rotation. Refusing to sign after it; run `audit verify --public-key FILE` to find it."
            )
        }
        try await Self.requireExtends(checkpoint, store: store, anchor: nil)
        trustedLatest.withLock { $0 = checkpoint.hash }
    }

    /// A head hash as an error names it: its first 16 hex digits and `…`, as git abbreviates
    /// commits. A whole 64-digit hash has a key's shape, and the console withholds those from
    /// every message it prints.
    public static func short(_ hash: String) -> String { hash.count > 16 ? String(hash.prefix(16)) + "…" : hash }

    /// Before signing, once one is due: the store extends the high-water mark and still holds
    /// checkpoints up to it, and its newest checkpoint (`latest`) is genuine.
    private func checkBeforeSigning(store: any AuditCheckpointStore, latest: AuditCheckpoint?)
        async throws(ConsoleError)
    {
        if let mark = try highWaterMark(), let highWaterMarkPath {
            try await Self.requireExtends(mark, store: store, anchor: highWaterMarkPath)
            guard let latest, latest.seq >= mark.seq else {
                throw Self.diverged(
                    mark, anchor: highWaterMarkPath,
                    found:
                        "the store's newest checkpoint is \(latest.map { "of entry \($0.seq)" } ?? "none") (signed checkpoints were removed)"
                )
            }
        }
        if let latest { try await verifyStored(latest, store: store) }
    }

    /// After a checkpoint was stored: the high-water mark moves to it, the witness gets its line.
    /// - Parameter replacingNewer: a rebase's, which replaces a newer mark too.
    private func anchor(_ checkpoint: AuditCheckpoint, replacingNewer: Bool = false) throws(ConsoleError) {
        trustedLatest.withLock { $0 = checkpoint.hash }
        let line = AuditAnchor.line(checkpoint)
        if let highWaterMarkPath {
            // Never moves back: another server on the same store may have signed a newer one.
            if replacingNewer || (try? highWaterMark()).map({ $0.seq <= checkpoint.seq }) ?? true {
                try AuditAnchor.replace(highWaterMarkPath, with: line)
            }
        }
        if let witnessPath { try AuditAnchor.append(line, to: witnessPath) }
    }

    /// Signs when due (`sign`, which checks the newest checkpoint first), then anchors what was
    /// signed.
    private func signAnchored(
        store: any AuditCheckpointStore,
        _ sign: (_ check: (AuditCheckpoint?) async throws(ConsoleError) -> Void) async throws(ConsoleError) ->
            AuditCheckpoint?
    ) async throws(ConsoleError) -> AuditCheckpoint? {
        if let reason = suspended.withLock({ $0 }) { throw reason }
        let check = { (latest: AuditCheckpoint?) async throws(ConsoleError) -> Void in
            try await self.checkBeforeSigning(store: store, latest: latest)
        }
        guard let checkpoint = try await sign(check) else { return nil }
        try anchor(checkpoint)
        return checkpoint
    }

    /// Signs whatever follows the newest checkpoint now; the failure, if any.
    private func signNow(store: any AuditCheckpointStore) async -> ConsoleError? {
        await checkpointIfBehind(store: store)
        return lastError
    }

    /// The last signing failure, `nil` once a later attempt succeeded.
    public var lastError: ConsoleError? { failure.withLock { $0 } }

    /// After a request appended entries: signs when ``everyEntries`` follow the newest
    /// checkpoint (or there is none yet).
    @discardableResult
    public func checkpointAfterAppends(store: any AuditCheckpointStore) async -> AuditCheckpoint? {
        await attempt { () async throws(ConsoleError) in
            try await signAnchored(store: store) { check async throws(ConsoleError) in
                try await AuditLog.checkpointIfDue(
                    store: store, privateKey: privateKey, nowMillis: clock.millis(), every: everyEntries,
                    maxAgeMillis: .max, verifyLatest: check)
            }
        }
    }

    /// One tick of the periodic signer: signs when any entry follows the newest checkpoint.
    @discardableResult
    public func checkpointIfBehind(store: any AuditCheckpointStore) async -> AuditCheckpoint? {
        await attempt { () async throws(ConsoleError) in
            try await signAnchored(store: store) { check async throws(ConsoleError) in
                try await AuditLog.checkpointIfDue(
                    store: store, privateKey: privateKey, nowMillis: clock.millis(), every: 1, maxAgeMillis: 0,
                    verifyLatest: check)
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
