import BackupCrypto
import BackupModel
import Foundation
import Synchronization

/// `seed --backups N [--orphans M] [--seed S]`: fills a sandbox tenant with realistic,
/// deterministic synthetic backups and Turnkey sub-orgs.
///
/// Backup `i` of seed `S` comes from its own seeded stream, so the same seed gives the same
/// backups and they can be built on every core. Writes go in batches of ``batchSize`` (one
/// transaction and one audit entry each). Every sub-org a TURNKEY key references, and `M`
/// orphans nothing references, go to the sandbox sub-org table that the Turnkey sandbox lists.
public struct SandboxSeeder: Sendable {
    public let store: any SandboxStore
    /// Unix seconds.
    public let clock: @Sendable () -> Int64
    public var batchSize = 1000
    /// What one synthetic backup takes in the store, rounded up (blob, metadata, index rows,
    /// sub-org, audit share: 21.5 KB measured on SQLite).
    static let bytesPerBackup: Int64 = 24 * 1024
    /// What one orphan sub-org takes (its row and index entry), rounded up.
    static let bytesPerOrphan: Int64 = 512
    /// Orphan sub-orgs per transaction.
    static let orphanBatch = 10_000
    /// Disk left free after a seed: a full disk fails every write of every tenant, audit
    /// appends (so every read) included.
    var spareBytes: Int64 = 1_000_000_000

    public init(
        store: any SandboxStore, clock: @escaping @Sendable () -> Int64 = { Int64(Date().timeIntervalSince1970) }
    ) {
        self.store = store
        self.clock = clock
    }

    /// Seeds `tenant`.
    /// - Parameter progress: called after each batch with the number of backups written so far.
    /// - Throws: ``ConsoleError`` `not_sandbox` for a production tenant, `invalid_input` for
    ///   negative counts, `insufficient_space`, `seed_running` (another seed of this process is
    ///   writing to the store: ``SeedClaims``), or the store's errors.
    public func run(
        tenant: TenantRecord, backups: Int, orphans: Int, seed: UInt64, operatorName: String,
        progress: ((Int) throws(ConsoleError) -> Void)? = nil
    ) async throws(ConsoleError) -> SeedReport {
        guard tenant.isSandbox else {
            throw ConsoleError(
                .invalidInput, code: "not_sandbox",
                "Tenant \(tenant.name) is not a sandbox tenant; seed only writes synthetic data into sandboxes.")
        }
        guard (0...10_000_000).contains(backups), (0...10_000_000).contains(orphans) else {
            throw .invalid("invalid_count", "--backups and --orphans must be between 0 and 10000000.")
        }
        if backups + orphans > 0, let free = store.availableBytes() {
            let needed = Int64(backups) * Self.bytesPerBackup + Int64(orphans) * Self.bytesPerOrphan
            if needed > free - spareBytes {
                let what = "\(backups) backups" + (orphans > 0 ? " and \(orphans) orphans" : "")
                throw ConsoleError(
                    .conflict, code: "insufficient_space",
                    "Seeding \(what) needs about \(Self.size(needed)) on the store's disk, which has \(Self.size(free)) free and keeps \(Self.size(spareBytes)) spare; nothing was written. Seed fewer or free space."
                )
            }
        }
        let name = tenant.name
        let now = clock()
        let claim = try SeedClaims.shared.claim(
            store, SeedClaims.Running(tenant: name.rawValue, operatorName: operatorName, since: now))
        defer { SeedClaims.shared.release(claim) }
        var report = SeedReport(tenant: name.rawValue, seed: seed)
        // Each batch is built (on every core) while the one before is written: on PostgreSQL the
        // server does the writing, and in SQLite the writer's thread.
        func building(from start: Int) -> PendingSeedBatch? {
            guard start < backups else { return nil }
            return PendingSeedBatch(seed: seed, range: start..<min(backups, start + batchSize), now: now)
        }
        var next = building(from: 0)
        var start = 0
        while start < backups, let pending = next {
            let count = min(batchSize, backups - start)
            let batch = try await pending.value()
            next = building(from: start + count)
            // A re-run with the same seed makes the same backups: write and audit only the new ones.
            let existing = try await store.existingBackupIds(tenant: name, among: batch.map(\.write.record.backupId))
            let made = batch.filter { !existing.contains($0.write.record.backupId) }
            report.existing += batch.count - made.count
            let writes = made.map(\.write)
            if !writes.isEmpty {
                try await store.writeBackups(
                    tenant: name, writes,
                    audit: AuditDraft(
                        operatorName: operatorName, tenant: name.rawValue, action: "seed.backups",
                        details: ["seed": "\(seed)", "from": "\(start)", "count": "\(writes.count)"]))
            }
            let subOrgs = writes.flatMap(\.record.metadata.turnkeySubOrgIds)
            report.referencedSubOrgs += try await store.addSandboxSubOrgs(
                tenant: name, subOrgs, createdAt: now, audit: nil)
            report.backups += writes.count
            report.lookupRows += writes.reduce(0) { $0 + $1.lookupRows.count }
            report.driftedBackups += made.filter(\.drifted).count
            report.blobBytes += writes.reduce(0) { $0 + ($1.blob?.count ?? 0) }
            start += count
            try progress?(start)
        }
        // In batches too: ten million ids at once would be a gigabyte in memory and one transaction.
        let rng = SeededRandom(seed: SyntheticBackup.streamSeed(seed, UInt64.max))
        for from in stride(from: 0, to: orphans, by: Self.orphanBatch) {
            let ids = (from..<min(orphans, from + Self.orphanBatch)).map { _ in rng.uuid() }
            report.orphanSubOrgs += try await store.addSandboxSubOrgs(
                tenant: name, ids, createdAt: now,
                audit: AuditDraft(
                    operatorName: operatorName, tenant: name.rawValue, action: "seed.orphans",
                    details: ["seed": "\(seed)", "from": "\(from)", "count": "\(ids.count)"]))
        }
        try await store.appendAudit(
            AuditDraft(
                operatorName: operatorName, tenant: name.rawValue, action: "seed",
                details: [
                    "seed": "\(seed)", "backups": "\(report.backups)", "existing": "\(report.existing)",
                    "orphans": "\(report.orphanSubOrgs)", "drifted": "\(report.driftedBackups)",
                ]))
        return report
    }

    /// Builds backups `range` on all cores; results go into their index's slot.
    static func make(seed: UInt64, range: Range<Int>, now: Int64) throws(ConsoleError) -> [SyntheticBackup] {
        let slots = Slots(count: range.count)
        let workers = max(1, min(ProcessInfo.processInfo.activeProcessorCount, range.count))
        let base = range.lowerBound
        DispatchQueue.concurrentPerform(iterations: workers) { worker in
            for i in stride(from: worker, to: range.count, by: workers) {
                do throws(ConsoleError) {
                    slots.set(i, .success(try SyntheticBackup.make(seed: seed, index: UInt64(base + i), now: now)))
                } catch {
                    slots.set(i, .failure(error))
                }
            }
        }
        var made: [SyntheticBackup] = []
        made.reserveCapacity(range.count)
        for result in slots.take() {
            switch result {
            case .success(let backup)?: made.append(backup)
            case .failure(let error)?: throw error
            case nil: throw .internalError("Seeding left a backup unbuilt.")
            }
        }
        return made
    }

    /// Result slots shared by the workers of one batch; a lock guards the array.
    private final class Slots: @unchecked Sendable {
        private let lock = NSLock()
        private var results: [Result<SyntheticBackup, ConsoleError>?]

        init(count: Int) { results = Array(repeating: nil, count: count) }

        func set(_ index: Int, _ result: Result<SyntheticBackup, ConsoleError>) {
            lock.lock()
            defer { lock.unlock() }
            results[index] = result
        }

        func take() -> [Result<SyntheticBackup, ConsoleError>?] {
            lock.lock()
            defer { lock.unlock() }
            return results
        }
    }
}

/// One batch of a seed being built on a Dispatch worker (``SandboxSeeder/make(seed:range:now:)``
/// blocks while every core builds): never on a Swift task, whose thread would be one of the
/// cooperative pool's few (or, in `serve`, an event loop) held for the whole build.
final class PendingSeedBatch: Sendable {
    private struct State: Sendable {
        var result: Result<[SyntheticBackup], ConsoleError>?
        var waiter: CheckedContinuation<Result<[SyntheticBackup], ConsoleError>, Never>?
    }

    private let state = Mutex(State())

    init(seed: UInt64, range: Range<Int>, now: Int64) {
        DispatchQueue.global().async { [self] in
            let result: Result<[SyntheticBackup], ConsoleError>
            do throws(ConsoleError) {
                result = .success(try SandboxSeeder.make(seed: seed, range: range, now: now))
            } catch {
                result = .failure(error)
            }
            let waiter = state.withLock { state in
                state.result = result
                defer { state.waiter = nil }
                return state.waiter
            }
            waiter?.resume(returning: result)
        }
    }

    /// The built batch, once it is built (one caller).
    func value() async throws(ConsoleError) -> [SyntheticBackup] {
        let result = await withCheckedContinuation {
            (waiter: CheckedContinuation<Result<[SyntheticBackup], ConsoleError>, Never>) in
            let built = state.withLock { state in
                if state.result == nil { state.waiter = waiter }
                return state.result
            }
            if let built { waiter.resume(returning: built) }
        }
        return try result.get()
    }
}

extension SandboxSeeder {
    /// `bytes` for a person: whole MB below 10 GB, whole GB from there (decimal units).
    static func size(_ bytes: Int64) -> String {
        bytes < 10_000_000_000 ? "\(max(bytes, 0) / 1_000_000) MB" : "\(bytes / 1_000_000_000) GB"
    }
}

/// The seed running on each store of this process, one at a time: seeds share the store's one
/// writer, and several at once queue every other write, the audit of every read included,
/// behind a batch of each (four seeds through `serve` kept a one-row read waiting 3 to 5 s).
final class SeedClaims: Sendable {
    static let shared = SeedClaims()

    struct Running {
        var tenant: String
        var operatorName: String
        /// Unix seconds.
        var since: Int64
    }

    private let running = Mutex<[ObjectIdentifier: Running]>([:])

    /// Claims `store` for a seed, or throws `seed_running` naming the seed that holds it.
    func claim(_ store: any SandboxStore, _ seed: Running) throws(ConsoleError) -> ObjectIdentifier {
        let key = ObjectIdentifier(store as AnyObject)
        let holder = running.withLock { running -> Running? in
            if let holder = running[key] { return holder }
            running[key] = seed
            return nil
        }
        guard let holder else { return key }
        throw ConsoleError(
            .conflict, code: "seed_running",
            "A seed is already writing to this store (into \(holder.tenant), by \(holder.operatorName), since \(Timestamp.format(holder.since))); seeds share the store's one writer, so this one wrote nothing. Run it once that one has finished."
        )
    }

    func release(_ key: ObjectIdentifier) {
        _ = running.withLock { $0.removeValue(forKey: key) }
    }
}
