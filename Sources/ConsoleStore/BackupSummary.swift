import BackupCrypto
import BackupModel

/// What the health checks and `stats` need of one backup's metadata, derived when the backup
/// is written (table `backup_summary`), so a tenant-wide scan never decodes metadata JSON.
///
/// The metadata stays the source of truth: this is an index of it, rewritten in the same
/// transaction as the metadata, and ``init(metadata:blobSize:)`` is the one derivation both
/// the store and the single-backup path (`show`) use.
public struct BackupSummary: Sendable, Equatable {
    public var backupId: String
    public var mainFactors: Int
    public var syncFactors: Int
    public var passkeys: Int
    public var oidcFactors: Int
    /// iCloud Keychain keypairs among the main factors.
    public var keychainFactors: Int
    public var prfKeys: Int
    public var icloudKeys: Int
    public var turnkeyKeys: Int
    /// Main factors with no FactorLookup key (an exported OIDC factor has no `sub`).
    public var unindexedFactors: Int
    /// Sync factors that are not a valid stored P-256 device key.
    public var badSyncFactors: Int
    /// The first such sync factor, in metadata order.
    public var firstBadSyncFactor: BadSyncFactor?
    /// The manifest hash when it is not 64 hex digits; `nil` when it is well formed.
    public var malformedManifestHash: String?
    /// Size of the stored sealed blob, `nil` when none is stored.
    public var blobSize: Int?

    /// A sync factor that cannot update the backup, and why.
    public struct BadSyncFactor: Sendable, Equatable {
        public var factorId: String
        public var problem: SyncFactorProblem

        public init(factorId: String, problem: SyncFactorProblem) {
            self.factorId = factorId
            self.problem = problem
        }
    }

    /// Derives the summary from the metadata (validating every sync key on P-256 once).
    public init(metadata: BackupMetadata, blobSize: Int?) {
        backupId = metadata.id
        mainFactors = metadata.factors.count
        syncFactors = metadata.syncFactors.count
        (passkeys, oidcFactors, keychainFactors, unindexedFactors) = (0, 0, 0, 0)
        for factor in metadata.factors {
            switch factor.kind {
            case .passkey: passkeys += 1
            case .oidcAccount: oidcFactors += 1
            case .ecKeypair: keychainFactors += 1
            }
            if factor.lookupKey(scope: .main) == nil { unindexedFactors += 1 }
        }
        (prfKeys, icloudKeys, turnkeyKeys) = (0, 0, 0)
        for key in metadata.keys {
            switch key {
            case .prf: prfKeys += 1
            case .icloud: icloudKeys += 1
            case .turnkey: turnkeyKeys += 1
            }
        }
        badSyncFactors = 0
        for factor in metadata.syncFactors {
            guard let problem = SyncFactorProblem.of(factor.kind) else { continue }
            if badSyncFactors == 0 { firstBadSyncFactor = BadSyncFactor(factorId: factor.id, problem: problem) }
            badSyncFactors += 1
        }
        malformedManifestHash = Self.isWellFormedManifestHash(metadata.manifestHash) ? nil : metadata.manifestHash
        self.blobSize = blobSize
    }

    /// A summary as stored, field by field.
    public init(
        backupId: String, mainFactors: Int, syncFactors: Int, passkeys: Int, oidcFactors: Int, keychainFactors: Int,
        prfKeys: Int, icloudKeys: Int, turnkeyKeys: Int, unindexedFactors: Int, badSyncFactors: Int,
        firstBadSyncFactor: BadSyncFactor?, malformedManifestHash: String?, blobSize: Int?
    ) {
        self.backupId = backupId
        self.mainFactors = mainFactors
        self.syncFactors = syncFactors
        self.passkeys = passkeys
        self.oidcFactors = oidcFactors
        self.keychainFactors = keychainFactors
        self.prfKeys = prfKeys
        self.icloudKeys = icloudKeys
        self.turnkeyKeys = turnkeyKeys
        self.unindexedFactors = unindexedFactors
        self.badSyncFactors = badSyncFactors
        self.firstBadSyncFactor = firstBadSyncFactor
        self.malformedManifestHash = malformedManifestHash
        self.blobSize = blobSize
    }

    /// A manifest hash clients accept: 64 hex digits.
    public static func isWellFormedManifestHash(_ hash: String) -> Bool { hash.utf8.count == 64 && Hex.isHex(hash) }
}

/// Why a sync factor is not a usable device key (the stored form: standard base64, padded, of
/// a 65-byte uncompressed point on P-256).
public enum SyncFactorProblem: Sendable, Equatable {
    /// The factor is not an EC_KEYPAIR; carries its kind tag.
    case notKeypair(String)
    case notBase64
    /// Decodes to this many bytes, or to 65 bytes that do not start with 04.
    case wrongLength(Int)
    case notStoredForm
    case notOnCurve

    /// The problem of a sync factor of this kind, or `nil` when it is a valid device key.
    public static func of(_ kind: FactorKind) -> SyncFactorProblem? {
        guard case .ecKeypair(let key) = kind else { return .notKeypair(kind.tag) }
        return of(publicKey: key)
    }

    /// The problem of a stored sync key, or `nil` when it is the stored form of a P-256 point.
    public static func of(publicKey key: String) -> SyncFactorProblem? {
        guard let bytes = Base64.decode(key, alphabet: .standard) else { return .notBase64 }
        guard bytes.count == 65, bytes[0] == 0x04 else { return .wrongLength(bytes.count) }
        guard Base64.encode(bytes) == key else { return .notStoredForm }
        guard P256.isValidPublicKey(bytes) else { return .notOnCurve }
        return nil
    }

    /// The stored encoding (`backup_summary.bad_sync_problem`).
    public var code: String {
        switch self {
        case .notKeypair(let tag): "kind:\(tag)"
        case .notBase64: "base64"
        case .wrongLength(let n): "length:\(n)"
        case .notStoredForm: "form"
        case .notOnCurve: "curve"
        }
    }

    /// Parses ``code``; `nil` for anything else.
    public init?(code: String) {
        switch code {
        case "base64": self = .notBase64
        case "form": self = .notStoredForm
        case "curve": self = .notOnCurve
        default:
            if code.hasPrefix("kind:") {
                self = .notKeypair(String(code.dropFirst(5)))
            } else if code.hasPrefix("length:"), let n = Int(code.dropFirst(7)) {
                self = .wrongLength(n)
            } else {
                return nil
            }
        }
    }
}
