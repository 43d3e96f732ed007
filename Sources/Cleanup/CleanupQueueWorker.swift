import Access
import BackupModel
import ConsoleStore
import Foundation
import Turnkey

/// A cleanup worker on one tenant's queue (``CleanupQueueStore``): claims queued items under a
/// lease, renews it while it works, and deletes each with the same per-item steps as
/// `cleanup run` (``CleanupWorker``: re-check the reference, journal the body before the first
/// send, re-send a journaled body unchanged, cleanup key then break-glass), audited in the name
/// of the operator who queued the item. Every Turnkey call waits for a slot of the tenant's
/// rate in the store, which all workers share wherever they run.
///
/// A worker that dies stops renewing; once its lease expires another claims the item and
/// finishes it with the journaled body. A worker that outlived its lease and finds the item
/// changed (`stale_journal_item`) drops it: the other worker's outcome stands.
public struct CleanupQueueWorker: Sendable {
    public let service: CleanupService
    /// This worker's holder name (``ProcessHolder/name(_:)``).
    public let name: String
    /// The session of the operator who queued an item, checked for `cleanup run` again before
    /// each item whenever the store's access version moved.
    public let session: @Sendable (_ queuedBy: String) async throws(ConsoleError) -> Session
    /// How long a claim lasts without a heartbeat, milliseconds.
    public var leaseMillis: Int64 = 60_000
    /// Items claimed at a time.
    public var batch = 4
    /// Journal attempts after which a retryable failure is recorded `failed`.
    public var maxAttempts = 20
    public var maxPolls = 5
    /// The store's access version (``ConsoleStore/accessVersion()``), read before each item;
    /// tests inject one that moves between items.
    public var accessVersion: (@Sendable () async throws(ConsoleError) -> Int64)?

    public init(
        service: CleanupService, name: String,
        session: @escaping @Sendable (_ queuedBy: String) async throws(ConsoleError) -> Session
    ) {
        self.service = service
        self.name = name
        self.session = session
    }

    var store: any CleanupQueueStore {
        get throws(ConsoleError) {
            guard let queue = service.store as? any CleanupQueueStore else {
                throw .invalid("queue_unsupported", "This console store has no queue for cleanup workers.")
            }
            return queue
        }
    }

    /// Claims and processes queued items of `tenant` until none is claimable, `shouldStop`
    /// says so (items in hand finish first) or Turnkey is out; returns the outcomes.
    /// - Throws: store failures only; an item whose queuer may no longer run cleanup is taken
    ///   off the queue.
    public func drain(tenant: TenantName, shouldStop: @escaping @Sendable () -> Bool = { false })
        async throws(ConsoleError)
        -> [RunReport.Item]
    {
        let store = try store
        var outcomes: [RunReport.Item] = []
        // Each queuer's session with the store's access version it was read at: any grant,
        // revocation, rotation or removal (by any process) bumps the version, so a revoked
        // operator's items stop at the next item, not at the end of the drain.
        var sessions: [String: (session: Session, version: Int64)] = [:]
        let flags = RunFlags()
        // Bounded: each round claims at least one item or stops.
        for _ in 0..<100_000 {
            guard !shouldStop(), flags.outageMessage == nil else { break }
            let now = service.timing.clock.millis()
            let claimed = try await store.claimCleanup(
                tenant: tenant, worker: name, limit: batch, now: now, leaseMillis: leaseMillis)
            guard !claimed.isEmpty else { break }
            var renewedAt = now
            for (position, queued) in claimed.enumerated() {
                guard !shouldStop(), flags.outageMessage == nil else {
                    // Asked to stop: the items not begun go back now, for another worker, instead
                    // of when their lease lapses. Turnkey out: they keep the claim, which holds
                    // every worker off them for a lease.
                    if flags.outageMessage == nil {
                        await handBack(claimed[position...], tenant: tenant, store: store)
                    }
                    break
                }
                let clock = service.timing.clock.millis()
                if clock - renewedAt >= leaseMillis / 3 {
                    let held = try await store.renewCleanupClaims(
                        tenant: tenant, worker: name, now: clock, leaseMillis: leaseMillis)
                    renewedAt = clock
                    guard held.contains(queued.item.subOrgId) else { continue }
                }
                let session: Session
                let version = try await currentAccessVersion()
                if let known = sessions[queued.queuedBy], known.version == version {
                    session = known.session
                } else {
                    do throws(ConsoleError) {
                        session = try await self.session(queued.queuedBy)
                        try await session.require(.cleanupRun)
                    } catch  where error.kind != .permissionDenied && error.kind != .notFound {
                        // The store failed, not the queuer's right: the item stays queued (its
                        // claim lapses) and the drain stops, to be tried again.
                        throw error
                    } catch {
                        sessions[queued.queuedBy] = nil
                        try await unqueue(queued, tenant: tenant, store: store, because: error.message)
                        continue
                    }
                    sessions[queued.queuedBy] = (session, version)
                }
                if let item = try await process(
                    queued, session: session, readAt: version, flags: flags, store: store, shouldStop: shouldStop)
                {
                    outcomes.append(item)
                }
            }
        }
        return outcomes
    }

    /// Releases claims on items this worker has not begun; a store that fails leaves them to
    /// their lease.
    private func handBack(
        _ items: ArraySlice<QueuedCleanupItem>, tenant: TenantName, store: any CleanupQueueStore
    ) async {
        for queued in items {
            do {
                try await store.releaseCleanupClaim(tenant: tenant, worker: name, subOrgId: queued.item.subOrgId)
            } catch {
                service.logger.warning(
                    "cleanup item \(queued.item.subOrgId) of \(tenant) stays claimed until its lease lapses: \(error.message)"
                )
                return
            }
        }
    }

    /// Takes an item off the queue because its queuer's word no longer holds; an operator who
    /// may run cleanup decides it again (`cleanup run --execute --queue`).
    private func unqueue(
        _ queued: QueuedCleanupItem, tenant: TenantName, store: any CleanupQueueStore, because reason: String
    ) async throws(ConsoleError) {
        try await store.unqueueCleanup(tenant: tenant, subOrgId: queued.item.subOrgId)
        service.logger.warning(
            "cleanup item \(queued.item.subOrgId) of \(tenant) was taken off the queue: it was queued by \(queued.queuedBy), who may no longer run cleanup (\(reason))"
        )
    }

    /// Throws unless the queuer may still run cleanup: when the access version moved since
    /// `version`, the queuer's session is read again.
    private func confirm(_ queuedBy: String, readAt version: Int64) async throws(ConsoleError) {
        guard try await currentAccessVersion() != version else { return }
        try await session(queuedBy).require(.cleanupRun)
    }

    private func currentAccessVersion() async throws(ConsoleError) -> Int64 {
        if let accessVersion { return try await accessVersion() }
        return try await store.accessVersion()
    }

    /// One claimed item; `nil` when another worker's outcome stands or the queuer's right
    /// lapsed while the item waited for its rate slot (it leaves the queue unsent).
    private func process(
        _ queued: QueuedCleanupItem, session: Session, readAt version: Int64, flags: RunFlags,
        store: any CleanupQueueStore, shouldStop: @escaping @Sendable () -> Bool
    ) async throws(ConsoleError) -> RunReport.Item? {
        let tenant = session.tenantName
        let policy = session.tenant.policy
        let client = service.client(
            session,
            sharedRate: { nowMicros in
                try await store.reserveTurnkeyCall(
                    tenant: tenant, perSecond: Double(max(1, policy.turnkeyRPS)), burst: 1, nowMicros: nowMicros)
            }, stop: shouldStop)
        // The grace period was checked when the item was queued, and any change to its reason or
        // first-seen time since took it off the queue; what is re-checked here is the rest of its
        // proof: the snapshot still fresh enough, a retired backup gone from the service.
        let proof = try await SnapshotProof(service: service, session: session, now: service.nowSeconds, grace: 0)
        var worker = CleanupWorker(
            service: service, session: session, client: client, flags: flags, maxPolls: maxPolls, proof: proof)
        // The right was checked when the item was taken; the rate slot may come much later (at
        // a tenant's RPS, behind every other worker's items), so it is confirmed again then.
        worker.beforeSend = { () async throws(ConsoleError) in try await confirm(queued.queuedBy, readAt: version) }
        worker.shouldStop = shouldStop
        let id = queued.item.subOrgId
        let item: RunReport.Item
        do throws(ConsoleError) {
            item = try await worker.process(id, finalPass: queued.item.attempts >= maxAttempts)
        } catch  where error.code == "stale_journal_item" {
            service.logger.notice("cleanup item \(id) of \(tenant) was finished by another worker")
            return nil
        }
        // A retryable outcome keeps the claim: the item is tried again once the lease expires.
        // One that was not deleted because it is referenced or no longer proven leaves the
        // queue: a later `cleanup run --execute --queue` decides it again.
        if item.outcome == CleanupWorker.withdrawn {
            try await unqueue(queued, tenant: tenant, store: store, because: item.error ?? "refused")
            return nil
        }
        if item.outcome == CleanupWorker.notEligible {
            try await store.unqueueCleanup(tenant: tenant, subOrgId: id)
        } else if item.outcome != CleanupWorker.retryLater && item.outcome != "pending" {
            try await store.releaseCleanupClaim(tenant: tenant, worker: name, subOrgId: id)
        }
        return item
    }
}
