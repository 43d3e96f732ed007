import Access
import BackupModel
import ConsoleStore
import Turnkey

extension CleanupService {
    /// `cleanup scan`: `list_suborgs(parent)` minus the referenced sub-orgs, plus queued teardowns.
    ///
    /// Streams: one page of ≤ 100 ids is held at a time and checked against the store with one
    /// indexed `IN` query, so a million sub-orgs against a million backups never sit in memory.
    /// New orphans are journaled with their first-seen time (the grace clock starts there).
    /// - Parameter graceSeconds: overrides the tenant's grace period (`--grace`).
    /// - Throws: ``ConsoleError``: permission, store, or `.remote` when listing fails.
    public func scan(session: Session, graceSeconds: Int? = nil) async throws(ConsoleError) -> ScanReport {
        try await session.require(.cleanupScan)
        let proof = try await snapshotProof(session: session, graceSeconds: graceSeconds)
        let report = try await scanCore(session: session, client: client(session), proof: proof)
        try await store.appendAudit(
            session.audit(
                "cleanup.scan",
                details: [
                    "listed": "\(report.listed)", "referenced": "\(report.referenced)",
                    "orphans": "\(report.orphans.count)",
                ]))
        return report
    }

    /// What decides eligibility for one scan or run, with the tenant's grace period or `--grace`.
    func snapshotProof(session: Session, graceSeconds: Int?) async throws(ConsoleError) -> SnapshotProof {
        let grace = Int64(max(0, graceSeconds ?? session.tenant.policy.cleanupGraceSeconds))
        return try await SnapshotProof(service: self, session: session, now: nowSeconds, grace: grace)
    }

    /// The scan shared by `scan` and `run`.
    func scanCore(session: Session, client: TurnkeyClient, proof: SnapshotProof) async throws(ConsoleError)
        -> ScanReport
    {
        let tenant = session.tenantName
        let now = proof.now
        var open: [String: CleanupItemRecord] = [:]
        for item in try await store.cleanupItems(tenant: tenant, states: [.pending, .failed, .needsUser, .skipped]) {
            open[item.subOrgId] = item
        }
        var seen: Set<String> = []
        var report = ScanReport()
        report.snapshotAt = proof.snapshot.flatMap(\.snapshotAt).map(Timestamp.format)
        report.snapshotAgeSeconds = proof.snapshot.flatMap(\.snapshotAt).map { now - $0 }
        func orphan(_ id: String, _ item: CleanupItemRecord) async -> ScanReport.Orphan {
            let verdict = await proof.verdict(item)
            return ScanReport.Orphan(
                subOrgId: id, reason: item.reason, firstSeenAt: item.firstSeenAt, eligible: verdict.waitingFor == nil,
                waitingFor: verdict.waitingFor, provenBy: verdict.provenBy)
        }
        var listing = SubOrgListing(
            client: client, parent: connection.parentOrgId, signer: .apiKey(connection.apiKey), tenant: tenant)
        while let page = try await listing.next() {
            report.listed += page.count
            let referenced = try await store.referencedSubOrgs(tenant: tenant, among: page)
            report.referenced += referenced.count
            var new: [CleanupItemRecord] = []
            for id in page {
                let known = open[id]
                if known != nil { seen.insert(id) }
                guard !referenced.contains(id) else {
                    // Referenced again: whatever made it an orphan is void, and so is its clock.
                    if var item = known, item.state != .skipped,
                        let backup = try await store.subOrgReference(tenant: tenant, subOrgId: id)
                    {
                        item.state = .skipped
                        item.lastError = "referenced by \(backup) at a scan"
                        item.lastBackupId = backup
                        item.updatedAt = now
                        try await store.updateCleanupItem(tenant: tenant, item, audit: nil)
                    }
                    continue
                }
                if var item = known {
                    if item.state == .skipped {
                        // Referenced when last checked, unreferenced again with no reset or
                        // retirement to say why: only a snapshot's word is left (`unreferenced`),
                        // and the grace clock restarts.
                        item.state = .pending
                        item.reason = "unreferenced"
                        item.firstSeenAt = now
                        item.lastError = nil
                        item.updatedAt = now
                        item = try await store.updateCleanupItem(tenant: tenant, item, audit: nil)
                    }
                    report.orphans.append(await orphan(id, item))
                } else {
                    let item = CleanupItemRecord(
                        subOrgId: id, reason: "unreferenced", firstSeenAt: now, updatedAt: now)
                    new.append(item)
                    report.orphans.append(await orphan(id, item))
                }
            }
            if !new.isEmpty { _ = try await store.enqueueCleanup(tenant: tenant, new, audit: nil) }
        }
        // Open journal items Turnkey no longer lists are gone already (facts: a success), unless
        // a deletion was journaled for them: it is in flight (a run or a worker is sending it) or
        // was cut short (a killed run). Its deleter settles it by sending that body again, so the
        // outcome and its audit entry are the deleter's; a scan taking it over mid-send left the
        // deletion recorded as `already_gone` without its activity. It stays an orphan to settle.
        for (id, var item) in open where !seen.contains(id) && item.state != .skipped {
            if item.body != nil {
                report.orphans.append(await orphan(id, item))
                continue
            }
            item.state = .alreadyGone
            item.lastError = "not listed by list_suborgs"
            item.updatedAt = now
            do throws(ConsoleError) {
                try await store.updateCleanupItem(
                    tenant: tenant, item,
                    audit: session.audit("cleanup.already_gone", target: id, details: ["via": "scan"]))
            } catch  where error.code == "stale_journal_item" {
                // A run or a worker wrote it since the listing began (a long listing): its
                // outcome stands, and the scan goes on.
                continue
            }
            report.vanished += 1
        }
        report.orphans.sort { $0.subOrgId < $1.subOrgId }
        report.waitingForSnapshot = report.orphans.filter { $0.waitingFor == "snapshot" }.count
        return report
    }
}
