import BackupCrypto
import BackupModel

/// One entry of a group about to be appended, with the `details` column's text: the chain's
/// arithmetic (each `seq` the one before plus one, each hash over the one before) in one
/// place, for the shared rule (``SQLRuleStore/appendChained(_:_:)``) and any backend's own
/// insert of a group (SQLite's audit group commit).
public struct AuditLink: Sendable {
    public let entry: AuditEntry
    /// `details` as the store keeps it: canonical JSON, keys sorted.
    public let detailsText: String

    /// Links `drafts`, in order, after the head `afterSeq`/`prevHash` (0 and 64 zeros for an
    /// empty log), each stamped (``AuditDraft/stamped``) and timed by `clock`.
    /// - Throws: `internal_error` when the head is at the largest `seq` there can be (a row
    ///   written outside the console): refused, never a trap.
    public static func chain(
        _ drafts: [AuditDraft], afterSeq: Int64, prevHash: String, clock: () -> Int64
    ) throws(ConsoleError) -> [AuditLink] {
        var seq = afterSeq
        var prevHash = prevHash
        var links: [AuditLink] = []
        links.reserveCapacity(drafts.count)
        for given in drafts {
            let draft = given.stamped
            let (next, overflow) = seq.addingReportingOverflow(1)
            guard !overflow else {
                throw ConsoleError.internalError(
                    "The audit chain's head is at entry \(seq), the largest there can be (a row written outside the console); nothing can be appended."
                )
            }
            seq = next
            let at = clock()
            // The hash covers the previous hash and the canonical bytes; the details object is
            // made once, for both the hash and the stored column.
            var hashed = Array(prevHash.utf8)
            let detailsText: String
            if let detailsJSON = CanonicalJSON.object(draft.details) {
                hashed.reserveCapacity(hashed.count + 160 + detailsJSON.count)
                AuditEntry.appendCanonical(
                    seq: seq, at: at, operatorName: draft.operatorName, tenant: draft.tenant, action: draft.action,
                    target: draft.target, detailsJSON: detailsJSON, to: &hashed)
                detailsText = String(decoding: detailsJSON, as: UTF8.self)
            } else {
                hashed += AuditEntry.canonicalBytes(
                    seq: seq, at: at, operatorName: draft.operatorName, tenant: draft.tenant, action: draft.action,
                    target: draft.target, details: draft.details)
                detailsText = CanonicalJSON.objectText(draft.details)
            }
            let hash = SHA256.hex(hashed)
            links.append(
                AuditLink(
                    entry: AuditEntry(seq: seq, at: at, draft: draft, prevHash: prevHash, hash: hash),
                    detailsText: detailsText))
            prevHash = hash
        }
        return links
    }
}
