import BackupModel
import ConsoleStore

/// Turns what an operator typed for a backup into the one backup id it names, git-style.
///
/// Accepted: the full Backup Account ID; any prefix of it with at least ``minimumHexDigits``
/// hex digits, with or without `backup_account_`; and the shortened form tables print
/// (`backup_account_0b2e4ce2…26e8`, with `…` or `...`). A prefix that more than one backup
/// starts with is `ambiguous_id`, listing the candidates.
public struct BackupIdResolver: Sendable {
    /// Fewer hex digits than this are too likely to be a typo (git asks for 4).
    public static let minimumHexDigits = 4
    /// How many candidates an `ambiguous_id` error lists.
    public static let listedCandidates = 10

    let store: any ConsoleStore

    public init(store: any ConsoleStore) { self.store = store }

    /// The full id of the one backup `text` names in `tenant`.
    /// - Throws: ``ConsoleError`` `invalid_backup_account_id` (not an id or prefix),
    ///   `not_found`, `ambiguous_id` (several backups match; the message lists them).
    public func resolve(_ text: String, tenant: TenantName) async throws(ConsoleError) -> String {
        let typed = LookupQuery.trimmed(text)
        if let full = try? BackupAccountID(typed: typed) {
            guard try await store.backupExists(tenant: tenant, id: full.rawValue) else {
                throw ConsoleError.notFound("No backup \(full.abbreviated) in tenant \(tenant).")
            }
            return full.rawValue
        }
        let pattern = try Self.pattern(typed)
        var matches: [String] = []
        if let suffix = pattern.suffix {
            // The shortened form: the ids with its prefix (8 hex digits leave a handful), by suffix.
            matches = try await store.backupIds(tenant: tenant, prefix: pattern.prefix, limit: 10_000).filter {
                $0.hasSuffix(suffix)
            }
        } else {
            matches = try await store.backupIds(
                tenant: tenant, prefix: pattern.prefix, limit: Self.listedCandidates + 1)
        }
        guard let first = matches.first else {
            throw ConsoleError.notFound(
                "No backup id in tenant \(tenant) starts with \(SecretShape.excerpt(typed, limit: 80)).")
        }
        guard matches.count == 1 else {
            let shown = matches.prefix(Self.listedCandidates)
            let more = matches.count > Self.listedCandidates ? ", and more" : ""
            throw ConsoleError.invalid(
                "ambiguous_id",
                "\(SecretShape.excerpt(typed, limit: 80)) matches several backups in tenant \(tenant); give more digits. Candidates: "
                    + shown.joined(separator: ", ") + more + ".")
        }
        return first
    }

    /// The id prefix (with `backup_account_`) and, for the shortened form, the hex suffix.
    static func pattern(_ typed: String) throws(ConsoleError) -> (prefix: String, suffix: String?) {
        var text = typed
        var suffix: String?
        for ellipsis in ["…", "..."] {
            if let range = text.range(of: ellipsis) {
                suffix = String(text[range.upperBound...])
                text = String(text[..<range.lowerBound])
                break
            }
        }
        let prefixed = text.lowercased().hasPrefix(BackupAccountID.prefix)
        let hex = prefixed ? String(text.dropFirst(BackupAccountID.prefix.count)) : text
        let lowered = hex.lowercased()
        guard Hex.isHex(lowered), suffix.map({ Hex.isHex($0.lowercased()) }) ?? true else {
            throw invalid(typed, "expected a Backup Account ID or a prefix of its hex digits")
        }
        guard lowered.count + (suffix?.count ?? 0) >= minimumHexDigits, lowered.count <= 66 else {
            throw invalid(typed, "give at least \(minimumHexDigits) hex digits of the id")
        }
        return (BackupAccountID.prefix + lowered, suffix?.lowercased())
    }

    static func invalid(_ typed: String, _ reason: String) -> ConsoleError {
        .invalid("invalid_backup_account_id", "Invalid backup id \(SecretShape.quoted(typed, limit: 80)): \(reason).")
    }
}
