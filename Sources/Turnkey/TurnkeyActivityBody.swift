import BackupModel

/// The exact bytes of a Turnkey activity submission (facts §6).
///
/// Turnkey deduplicates submissions by a fingerprint of the body, so a body is built once,
/// journaled, and re-sent byte for byte on every retry; a stamp is valid for these bytes only.
/// Bodies are written by hand, not by `JSONEncoder`, to fix the member order to
/// `type, timestampMs, organizationId, parameters` (the order of Turnkey's request types and of
/// its Rust SDK's serde output) with no whitespace: the same inputs always give the same bytes.
public struct TurnkeyActivityBody: Sendable, Equatable, CustomStringConvertible {
    /// The body bytes (ASCII JSON).
    public let bytes: [UInt8]
    /// The activity type, e.g. `ACTIVITY_TYPE_DELETE_SUB_ORGANIZATION`.
    public let type: String
    /// The organization the activity acts on.
    public let organizationId: String
    public let timestampMs: Int64

    public static let deleteSubOrganizationType = "ACTIVITY_TYPE_DELETE_SUB_ORGANIZATION"
    public static let deleteSubOrganizationPath = "/public/v1/submit/delete_sub_organization"

    /// `{"type":"ACTIVITY_TYPE_DELETE_SUB_ORGANIZATION","timestampMs":"<ms>","organizationId":"<suborg>","parameters":{"deleteWithoutExport":true}}`
    ///
    /// - Parameters:
    ///   - subOrgId: the sub-organization to delete; it is also the organization the request targets.
    ///   - timestampMs: unix milliseconds, sent as a string; keep it fixed across retries.
    /// - Throws: ``ConsoleError`` `invalid_suborg_id` unless the id is 1–64 characters of
    ///   `A-Z a-z 0-9 - _` (Turnkey ids are UUIDs), so no JSON escaping is ever needed and an id
    ///   is never silently altered.
    public static func deleteSubOrganization(subOrgId: String, timestampMs: Int64) throws(ConsoleError)
        -> TurnkeyActivityBody
    {
        try validate(subOrgId)
        guard timestampMs >= 0 else {
            throw .invalid("invalid_timestamp", "An activity timestampMs must not be negative, got \(timestampMs).")
        }
        let text =
            #"{"type":"\#(deleteSubOrganizationType)","timestampMs":"\#(timestampMs)","organizationId":"\#(subOrgId)","parameters":{"deleteWithoutExport":true}}"#
        return TurnkeyActivityBody(
            bytes: Array(text.utf8), type: deleteSubOrganizationType, organizationId: subOrgId,
            timestampMs: timestampMs)
    }

    /// The body as text (it is always ASCII).
    public var text: String { String(decoding: bytes, as: UTF8.self) }

    public var description: String { text }

    static func validate(_ id: String) throws(ConsoleError) {
        let ok =
            !id.isEmpty && id.utf8.count <= 64
            && id.utf8.allSatisfy { c in
                (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a) || c == 0x2d
                    || c == 0x5f
            }
        guard ok else {
            throw .invalid(
                "invalid_suborg_id",
                "Invalid Turnkey sub-organization id \(SecretShape.quoted(id, limit: 64)): expected 1-64 characters of A-Z, a-z, 0-9, '-' or '_' (a UUID)."
            )
        }
    }
}
