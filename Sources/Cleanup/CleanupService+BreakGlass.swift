import Access
import BackupModel
import ConsoleStore
import Foundation
import Turnkey

extension CleanupService {
    /// `cleanup teardown-request SUBORG_ID`: the exact body for the user to stamp.
    ///
    /// The body is journaled (or the one already journaled is returned), so the stamp the user
    /// makes with `backupctl recovery stamp` matches what the run sends, byte for byte.
    public func teardownRequest(session: Session, subOrgId: String) async throws(ConsoleError) -> String {
        try await session.require(.cleanupTeardown)
        let id = subOrgId.lowercased()
        guard Self.isUUID(id) else {
            throw .invalid(
                "invalid_suborg_id", "SUBORG_ID must be a Turnkey sub-organization id (a UUID), got \(subOrgId).")
        }
        let tenant = session.tenantName
        let now = nowSeconds
        // A stamped delete of a sub-org a backup still uses would destroy that user's keys.
        if let backup = try await store.subOrgReference(tenant: tenant, subOrgId: id) {
            throw ConsoleError(
                .conflict, code: "suborg_referenced",
                "Sub-org \(id) is referenced by backup \(backup) in tenant \(tenant); deleting it would break that backup. Nothing was journaled."
            )
        }
        if try await store.cleanupItem(tenant: tenant, subOrgId: id) == nil {
            _ = try await store.enqueueCleanup(
                tenant: tenant,
                [CleanupItemRecord(subOrgId: id, reason: "break_glass", firstSeenAt: now, updatedAt: now)],
                audit: nil)
        }
        guard var item = try await store.cleanupItem(tenant: tenant, subOrgId: id) else {
            throw .internalError("Sub-org \(id) did not reach the cleanup journal.")
        }
        if let body = item.body { return body }
        let body = try TurnkeyActivityBody.deleteSubOrganization(subOrgId: id, timestampMs: timing.clock.millis()).text
        item.body = body
        item.updatedAt = now
        try await store.updateCleanupItem(
            tenant: tenant, item, audit: session.audit("cleanup.teardown_request", target: id))
        return body
    }

    /// `cleanup submit --body-file P --stamp S [--grace D]`: checks and journals a user-stamped
    /// deletion, and sends it if the sub-org is eligible now (else a later run sends it).
    ///
    /// The stamp must verify over the exact body bytes, and the body must be a
    /// `delete_sub_organization` of one sub-org with `deleteWithoutExport: true`. The stamped
    /// request is kept, so later runs can resend it unchanged.
    /// - Throws: ``ConsoleError`` `invalid_stamp`/`invalid_body` (exit 1) or store errors; Turnkey
    ///   failures are recorded in the item's outcome.
    public func submit(session: Session, body: [UInt8], stamp: String, graceSeconds: Int? = nil)
        async throws(ConsoleError) -> RunReport.Item
    {
        try await session.require(.cleanupTeardown)
        let parsed = try TurnkeyStamp(headerValue: stamp)
        guard parsed.verify(body: body) == .valid else {
            throw ConsoleError(
                .verificationFailed, code: "invalid_stamp",
                "The stamp does not verify over the body file's exact bytes; stamp the file as it is (no re-formatting)."
            )
        }
        guard let object = (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any],
            object["type"] as? String == TurnkeyActivityBody.deleteSubOrganizationType,
            let id = object["organizationId"] as? String, Self.isUUID(id),
            (object["parameters"] as? [String: Any])?["deleteWithoutExport"] as? Bool == true
        else {
            throw .invalid(
                "invalid_body",
                "The body must be a delete_sub_organization activity of one sub-org with deleteWithoutExport true (from `cleanup teardown-request`)."
            )
        }
        let tenant = session.tenantName
        let now = nowSeconds
        let text = String(decoding: body, as: UTF8.self)
        // One sub-org, one body: a second body (another timestampMs) would be a second activity.
        if let journaled = try await store.cleanupItem(tenant: tenant, subOrgId: id)?.body, journaled != text {
            throw ConsoleError(
                .conflict, code: "body_mismatch",
                "The body file is not the journaled deletion body of sub-org \(id); write it again with `cleanup teardown-request \(id) --out FILE` and have the user stamp that file with `recovery stamp --body-file FILE`."
            )
        }
        _ = try await store.enqueueCleanup(
            tenant: tenant, [CleanupItemRecord(subOrgId: id, reason: "break_glass", firstSeenAt: now, updatedAt: now)],
            audit: nil)
        try await store.saveStampedTeardown(
            tenant: tenant,
            StampedTeardown(subOrgId: id, body: text, stamp: stamp, submittedAt: now),
            audit: session.audit(
                "cleanup.submit", target: id, details: ["scheme": parsed.scheme.rawValue]))
        // The stamp is the user's consent, not a proof that the sub-org is orphaned: it is
        // deleted now only if it is eligible as a run would find it (grace, snapshot, status);
        // otherwise the stamped request waits in the journal for the run that finds it so.
        let proof = try await snapshotProof(session: session, graceSeconds: graceSeconds)
        let worker = CleanupWorker(
            service: self, session: session, client: client(session), flags: RunFlags(), maxPolls: 5, proof: proof)
        return try await worker.process(id)
    }
}
