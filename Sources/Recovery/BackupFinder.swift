import Access
import BackupModel
import ConsoleStore

/// Finds the backup a reset is about, from what the user still knows.
///
/// The extension point for the walkthrough's "find" step: ``StoreBackupFinder`` resolves a
/// Backup Account ID or a FactorLookup key through the store; a finder built on the Inspect
/// module's lookup can replace it without touching the state machine.
public protocol BackupFinder: Sendable {
    /// - Throws: ``ConsoleError`` `not_found`, or an `invalid_*` code naming the malformed query.
    func find(_ query: String, session: Session) throws(ConsoleError) -> BackupRecord
}

/// Resolves `backup_account_…`, a raw lookup key (`MAIN#PK|…`, `SYNC#EC_KEYPAIR|…`), or the
/// short forms `passkey CREDENTIAL_ID`, `google SUB`, `apple SUB`, `keypair PUBLIC_KEY`.
public struct StoreBackupFinder: BackupFinder {
    let store: any ConsoleStore

    public init(store: any ConsoleStore) { self.store = store }

    public func find(_ query: String, session: Session) throws(ConsoleError) -> BackupRecord {
        let text = query.trimmingCharacters(in: .whitespaces)
        let backupId: String
        if text.hasPrefix(BackupAccountID.prefix) {
            backupId = try BackupAccountID(text).rawValue
        } else {
            let key = try Self.lookupKey(text)
            guard let row = try store.lookup(tenant: session.tenantName, pk: key.rawValue) else {
                throw .notFound(
                    "No backup in tenant \(session.tenantName) is indexed under \(key.rawValue.prefix(80)).")
            }
            backupId = row.backupId
        }
        guard let record = try store.backup(tenant: session.tenantName, id: backupId) else {
            throw .notFound("Backup \(backupId) does not exist in tenant \(session.tenantName).")
        }
        return record
    }

    static func lookupKey(_ text: String) throws(ConsoleError) -> FactorLookupKey {
        if text.contains("#") { return try FactorLookupKey(parsing: text) }
        let parts = text.split(separator: " ", maxSplits: 1).map(String.init)
        guard parts.count == 2, !parts[1].isEmpty else {
            throw .invalid(
                "invalid_query",
                "Give a Backup Account ID, a lookup key (MAIN#PK|…), or one of: passkey ID, google SUB, apple SUB, keypair KEY."
            )
        }
        let factor: LookupFactor
        switch parts[0].lowercased() {
        case "passkey": factor = .passkey(credentialId: parts[1])
        case "google": factor = .oidc(issuer: OIDCProvider.google.issuer, sub: parts[1])
        case "apple": factor = .oidc(issuer: OIDCProvider.apple.issuer, sub: parts[1])
        case "keypair": factor = .ecKeypair(publicKey: parts[1])
        default:
            throw .invalid(
                "invalid_query",
                "Unknown factor kind \"\(parts[0].prefix(16))\": use passkey, google, apple or keypair.")
        }
        return FactorLookupKey(scope: .main, factor: factor)
    }
}
