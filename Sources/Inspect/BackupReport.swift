import BackupCrypto
import BackupModel
import ConsoleStore
import Foundation

/// What `show BACKUP_ID` reports: everything support needs about one backup, and nothing
/// secret — encryption keys appear as their kind and Turnkey ids, never their bytes.
///
/// JSON field names follow DESIGN.md §2; ``jsonLine()`` encodes with sorted keys so output is
/// deterministic (golden files).
public struct BackupReport: Sendable, Equatable, Codable {
    /// One main or sync factor, described without secrets.
    public struct FactorView: Sendable, Equatable, Codable {
        public var id: String
        /// `PASSKEY`, `OIDC_ACCOUNT` or `EC_KEYPAIR`.
        public var kind: String
        /// RFC 3339, UTC.
        public var created: String
        public var label: String?
        public var credentialId: String?
        /// `GOOGLE` or `APPLE`.
        public var provider: String?
        public var maskedEmail: String?
        /// The first 16 hex digits of SHA-256 of the public key bytes (EC_KEYPAIR).
        public var publicKeyFingerprint: String?
        /// Whether the FactorLookup index maps this factor to this backup.
        public var indexed: Bool
    }

    /// One encryption key: its kind and, for TURNKEY, where the key lives.
    public struct KeyView: Sendable, Equatable, Codable {
        public var kind: String
        public var turnkeyAccountId: String?
        public var turnkeyUserId: String?
        public var turnkeyPrivateKeyId: String?
    }

    /// The stored sealed blob's size and SHA-256; both null when no blob is stored.
    public struct BlobView: Sendable, Equatable, Codable {
        public var bytes: Int?
        public var sha256: String?

        public func encode(to encoder: any Encoder) throws {
            enum Keys: String, CodingKey { case bytes, sha256 }
            var c = encoder.container(keyedBy: Keys.self)
            try c.encode(bytes, forKey: .bytes)
            try c.encode(sha256, forKey: .sha256)
        }
    }

    public var backupId: String
    public var manifestHash: String
    public var factors: [FactorView]
    public var syncFactors: [FactorView]
    public var keys: [KeyView]
    public var turnkeySubOrgIds: [String]
    public var sealedBlob: BlobView
    /// Index rows of this backup that no factor of the metadata accounts for.
    public var unauthorizedLookupKeys: [String]
    public var health: [HealthResult]
    /// How old the console's copy of this backup may be (the tenant's newest snapshot).
    public var snapshot: SnapshotAge?

    /// Builds the report from what the store holds for one backup.
    /// - Parameters:
    ///   - indexRows: primary keys of the FactorLookup rows that point at this backup.
    ///   - input: the health input built from the same record and rows.
    public init(record: BackupRecord, indexRows: [String], input: HealthInput) {
        let metadata = record.metadata
        let rows = Set(indexRows)
        func view(_ factor: Factor, scope: FactorScope) -> FactorView {
            var v = FactorView(
                id: factor.id, kind: factor.kind.tag, created: factor.createdAt.description,
                indexed: factor.lookupKey(scope: scope).map { rows.contains($0.rawValue) } ?? false)
            switch factor.kind {
            case .passkey(let p):
                v.label = p.label
                v.credentialId = p.credentialId
            case .oidcAccount(let o):
                v.provider = o.provider.rawValue
                v.maskedEmail = o.account.maskedEmail
            case .ecKeypair(let key):
                v.publicKeyFingerprint = Self.fingerprint(key)
            }
            return v
        }
        backupId = input.backupId
        manifestHash = metadata.manifestHash
        factors = metadata.factors.map { view($0, scope: .main) }
        syncFactors = metadata.syncFactors.map { view($0, scope: .sync) }
        keys = metadata.keys.map { key in
            if case .turnkey(let t) = key {
                return KeyView(
                    kind: key.tag, turnkeyAccountId: t.turnkeyAccountId, turnkeyUserId: t.turnkeyUserId,
                    turnkeyPrivateKeyId: t.turnkeyPrivateKeyId)
            }
            return KeyView(kind: key.tag)
        }
        turnkeySubOrgIds = metadata.turnkeySubOrgIds
        sealedBlob = BlobView(bytes: record.blobSize, sha256: record.blobSHA256)
        unauthorizedLookupKeys = input.unauthorizedKeys.sorted()
        health = HealthChecks.run(input)
    }

    /// The worst status among the health checks.
    public var overall: HealthStatus { health.map(\.status).max() ?? .ok }

    /// One line of JSON with sorted keys.
    public func jsonLine() -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return (try? encoder.encode(self)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
    }

    /// `sha256:` + 16 hex digits of the decoded key (or of the text, if it does not decode).
    static func fingerprint(_ publicKey: String) -> String {
        let bytes = Base64.decodeLenient(publicKey) ?? Array(publicKey.utf8)
        return "sha256:" + SHA256.hex(bytes).prefix(16)
    }
}
