import BackupCrypto
import BackupModel
import Foundation

/// One realistic synthetic backup for sandbox seeding, built from its own seeded stream so
/// that backup `i` of seed `s` is the same whichever thread makes it.
///
/// Keys are real (a derived Backup Account ID, P-256 device and keychain keys) so every
/// console path — lookup, show, reset, cleanup — works on it; the root keys are discarded.
struct SyntheticBackup {
    static let passkeyLabels = [
        "iCloud Keychain", "Google Password Manager", "1Password", "Bitwarden", "Dashlane", "Samsung Pass",
    ]
    static let gmailInitials = Array("abcdefghijklmnopqrstuvwxyz")

    var write: BackupWrite
    /// The rows differ from what the metadata implies (an extra or a missing factor).
    var drifted: Bool

    /// A seed for backup `index` that does not overlap the neighbouring ones (SplitMix64 finaliser).
    static func streamSeed(_ seed: UInt64, _ index: UInt64) -> UInt64 {
        var z = seed &+ (index &+ 1) &* 0x9E37_79B9_7F4A_7C15
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// Builds backup `index` of `seed` with timestamps around `now` (unix seconds).
    static func make(seed: UInt64, index: UInt64, now: Int64) throws(ConsoleError) -> SyntheticBackup {
        let rng = SeededRandom(seed: streamSeed(seed, index))
        let rootKey = RootKey(version: .v1, secret: rng.secretBytes(32))
        let id = try BackupAccountKey.derive(rootKey: rootKey).rawValue
        func pick(_ n: Int) -> Int { Int(rng.uniform(UInt64(n))) }
        func factor(_ kind: FactorKind) -> Factor {
            // Enrolled some time in the last two years.
            Factor(id: rng.uuid(), createdAt: Timestamp(seconds: now - Int64(pick(2 * 365 * 86_400))), kind: kind)
        }
        func encrypted() -> String { Hex.encode(rng.bytes(48 + pick(48))) }

        var factors: [Factor] = []
        var keys: [EncryptionKey] = []
        func addPasskey() {
            let credential = Base64.encode(rng.bytes(16 + pick(49)), alphabet: .url, padding: false)
            let label = passkeyLabels[pick(passkeyLabels.count)]
            factors.append(factor(.passkey(PasskeyFactor(credentialId: credential, label: label))))
            keys.append(.prf(encryptedKey: encrypted()))
        }
        func addOIDC() {
            let account: OIDCAccount
            if pick(3) == 0 {
                let sub = "000\(100 + pick(900)).\(Hex.encode(rng.bytes(16))).\(1000 + pick(9000))"
                account = OIDCAccount(
                    provider: .apple, sub: sub, maskedEmail: "\(initial())***@privaterelay.appleid.com")
            } else {
                let sub = "1" + (0..<20).map { _ in String(pick(10)) }.joined()
                account = OIDCAccount(provider: .google, sub: sub, maskedEmail: "\(initial())***@gmail.com")
            }
            factors.append(factor(.oidcAccount(OIDCAccountFactor(account: account, turnkeyProviderId: rng.uuid()))))
            keys.append(
                .turnkey(
                    TurnkeyKey(
                        encryptedKey: encrypted(), turnkeyAccountId: rng.uuid(), turnkeyUserId: rng.uuid(),
                        turnkeyPrivateKeyId: rng.uuid())))
        }
        func initial() -> Character { gmailInitials[pick(gmailInitials.count)] }
        func p256() throws(ConsoleError) -> String {
            let key = P256.generatePrivateKey(using: rng)
            return Base64.encode(try P256.publicKey(privateKey: key, compressed: false))
        }

        // Only what the service's flows can make: one main factor at create (a passkey, an OIDC
        // account or an iCloud keychain key), and an OIDC account added to a passkey backup
        // (`/v1/add-factor` supports no other pair). So at most one key of each kind.
        let mix = pick(100)
        switch mix {
        case 0..<45:
            addPasskey()
            if pick(5) == 0 { addOIDC() }
        case 45..<75:
            addPasskey()
            addOIDC()
        case 75..<90:
            factors.append(factor(.ecKeypair(publicKey: try p256())))
            keys.append(.icloud(encryptedKey: encrypted()))
        default:
            addOIDC()
        }
        var syncFactors: [Factor] = []
        for _ in 0..<(1 + pick(3)) { syncFactors.append(factor(.ecKeypair(publicKey: try p256()))) }

        let metadata = BackupMetadata(
            id: id, manifestHash: Hex.encode(rng.bytes(32)), factors: factors, syncFactors: syncFactors, keys: keys)
        var rows = metadata.lookupKeys.map { LookupRow(pk: $0.rawValue, backupId: id) }
        // ~2% drift, as the real index has: a row for a removed factor, or a factor never indexed.
        let drift = pick(100) < 2
        if drift {
            if pick(2) == 0 || rows.count < 2 {
                let stale = Base64.encode(rng.bytes(32), alphabet: .url, padding: false)
                rows.append(LookupRow(pk: "MAIN#PK|\(stale)", backupId: id))
            } else {
                rows.remove(at: pick(rows.count))
            }
        }
        // Log-uniform 1-64 KiB: mostly small, a few large, like real sealed blobs scaled down.
        let size = Int(1024 * pow(2.0, Double(pick(6001)) / 1000))
        let blob = Data(rng.bytes(size))
        let record = BackupRecord(
            backupId: id, metadata: metadata, blobSize: blob.count, blobSHA256: Hex.encode(SHA256.hash(blob)),
            importedAt: now, updatedAt: now)
        return SyntheticBackup(write: BackupWrite(record: record, blob: blob, lookupRows: rows), drifted: drift)
    }
}
