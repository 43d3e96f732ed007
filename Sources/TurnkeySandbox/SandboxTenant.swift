import BackupCrypto
import BackupModel
import ConsoleStore
import Turnkey

/// The in-process Turnkey of a sandbox tenant: sub-orgs from the store, keys derived from the name.
///
/// A sandbox tenant has no key files. Its parent org id, API key and cleanup key are derived
/// deterministically from the tenant name (`SHA-256("backupctl-sandbox-…|" + name)`), so every
/// `backupctl` process sees the same sandbox. They are **not secrets** — anyone can derive them —
/// which is fine because they only ever unlock this emulator. Every sandbox sub-org has
/// `auth_user_main`, `sync_factor_user_cleanup` (the cleanup key, deletion-only) and, when its
/// backup is known, a break-glass user holding that backup's Backup Account Key.
public enum SandboxTenant {
    /// The sandbox and the connection that reaches it without a socket.
    public static func open(
        store: any CleanupJournalStore & SandboxStore, tenant: TenantName, faults: SandboxFaults = .none
    )
        async throws(ConsoleError) -> (sandbox: TurnkeySandbox, connection: TurnkeyConnection)
    {
        let org = parentOrgId(tenant)
        let (apiKey, cleanupKey) = keys(tenant)
        let sandbox = TurnkeySandbox(
            parentOrgId: org, directory: StoreDirectory(store: store, tenant: tenant),
            parentUsers: [try user("sandbox_api_key", apiKey, canDelete: false)],
            defaultSubOrgUsers: [try user("sync_factor_user_cleanup", cleanupKey, canDelete: true)], faults: faults)
        // Like production accounts made since the break-glass user was introduced: every sub-org
        // has its backup's Backup Account Key as a deletion-capable secp256k1 user.
        await sandbox.setBreakGlassUsers { subOrgId in
            var backupId = try? await store.subOrgReference(tenant: tenant, subOrgId: subOrgId)
            if backupId == nil {
                backupId = (try? await store.cleanupItem(tenant: tenant, subOrgId: subOrgId))?.lastBackupId
            }
            guard let backupId, let id = try? BackupAccountID(backupId) else { return [] }
            return [SandboxUser.breakGlass(publicKeyHex: Hex.encode(id.publicKey))]
        }
        let connection = TurnkeyConnection(
            baseURL: "sandbox://\(tenant)", parentOrgId: org, apiKey: apiKey, cleanupKey: cleanupKey,
            transport: SandboxTransport(sandbox: sandbox))
        return (sandbox, connection)
    }

    /// The tenant's API key (the parent org's user) and cleanup key (every sub-org's
    /// `sync_factor_user_cleanup`): derived from the name, so not secrets (see above).
    public static func keys(_ tenant: TenantName) -> (apiKey: SecretBytes, cleanupKey: SecretBytes) {
        (derivedKey("api-key", tenant), derivedKey("cleanup-key", tenant))
    }

    public static func parentOrgId(_ tenant: TenantName) -> String {
        uuid(SHA256.hash(Array("backupctl-sandbox-org|\(tenant)".utf8)))
    }

    /// A P-256 user for `key`.
    public static func user(_ name: String, _ key: SecretBytes, canDelete: Bool) throws(ConsoleError) -> SandboxUser {
        SandboxUser(
            name: name, publicKey: Hex.encode(try P256.publicKey(privateKey: key, compressed: true)),
            scheme: TurnkeyStamp.Scheme.p256.rawValue, canDelete: canDelete)
    }

    /// `SHA-256("backupctl-sandbox-<label>|<tenant>|<n>")` for the first n that is a P-256 scalar.
    static func derivedKey(_ label: String, _ tenant: TenantName) -> SecretBytes {
        var counter = 0
        while true {
            let key = SecretBytes(SHA256.hash(Array("backupctl-sandbox-\(label)|\(tenant)|\(counter)".utf8)))
            if P256.isValidPrivateKey(key) { return key }
            counter += 1
        }
    }

    static func uuid(_ digest: [UInt8]) -> String {
        var raw = Array(digest.prefix(16))
        raw[6] = raw[6] & 0x0f | 0x40
        raw[8] = raw[8] & 0x3f | 0x80
        let hex = Array(Hex.encode(raw))
        return String(hex[0..<8]) + "-" + String(hex[8..<12]) + "-" + String(hex[12..<16]) + "-"
            + String(hex[16..<20]) + "-" + String(hex[20..<32])
    }
}
