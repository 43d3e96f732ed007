import BackupCrypto
import BackupModel
import COpenSSL
import ConsoleStore
import Foundation

/// Distinct, valid P-256 public keys at a few microseconds each: P, P+G, P+2G, … (a real
/// scalar multiplication per key would make building a million backups take minutes).
final class PointChain {
    private let group: OpaquePointer
    private let context: OpaquePointer
    private let point: OpaquePointer
    private let generator: OpaquePointer

    init(seed: UInt64) {
        // Allocation failures abort the benchmark; they mean the machine is out of memory.
        guard let group = EC_GROUP_new_by_curve_name(NID_X9_62_prime256v1), let context = BN_CTX_new(),
            let point = EC_POINT_new(group), let base = EC_GROUP_get0_generator(group),
            let generator = EC_POINT_dup(base, group), let start = BN_new()
        else { fatalError("OpenSSL allocation failed") }
        BN_set_word(start, UInt(truncatingIfNeeded: seed | 1))
        EC_POINT_mul(group, point, start, nil, nil, context)
        BN_free(start)
        self.group = group
        self.context = context
        self.point = point
        self.generator = generator
    }

    deinit {
        EC_POINT_free(point)
        EC_POINT_free(generator)
        BN_CTX_free(context)
        EC_GROUP_free(group)
    }

    /// The next 65-byte uncompressed point.
    func next() -> [UInt8] {
        EC_POINT_add(group, point, point, generator, context)
        var out = [UInt8](repeating: 0, count: 65)
        _ = EC_POINT_point2oct(group, point, POINT_CONVERSION_UNCOMPRESSED, &out, 65, context)
        return out
    }
}

/// The synthetic tenant of the inspect benchmark: cheap to build, valid where the checks and
/// lookups look (real P-256 points, real Backup Account IDs for the sampled backups).
///
/// Backup ids rise with the index (`02` ‖ big-endian index ‖ random), as in a store built by
/// `import`, which walks the export in S3 key (= id) order; only the sampled backups get real,
/// random ids. Used by one thread at a time (the build generates a batch ahead on another).
final class InspectBenchData: @unchecked Sendable {
    /// What the lookups of one sampled backup use.
    struct Sample {
        var backupId: String
        var credentialId: String
        var googleSub: String
        var keychainKey: String?
        var syncKey: String
    }

    let count: Int
    let sampleEvery: Int
    let rng = SeededRandom(seed: 2024)
    let points = PointChain(seed: 0x5eed)
    var samples: [Sample] = []

    init(count: Int, samples wanted: Int) {
        self.count = count
        sampleEvery = max(1, count / wanted)
    }

    /// Backup `i`: a passkey, a Google account (TURNKEY key), every fourth an iCloud Keychain
    /// keypair, and two devices. Sampled backups get a real Backup Account ID.
    func make(_ i: Int) throws -> BackupWrite {
        let sampled = i % sampleEvery == 0
        var beBytes = [UInt8](repeating: 0, count: 8)
        for k in 0..<8 { beBytes[k] = UInt8(truncatingIfNeeded: i >> (56 - 8 * k)) }
        let id =
            sampled
            ? try BackupAccountKey.derive(rootKey: RootKey(version: .v1, secret: rng.secretBytes(32))).rawValue
            : BackupAccountID.prefix + "02" + Hex.encode(beBytes + rng.bytes(24))
        let at = Timestamp(seconds: 1_780_000_000 - Int64(i % 10_000))
        let credential = Base64.encode(beBytes + rng.bytes(24), alphabet: .url, padding: false)
        let sub = "1\(100_000_000_000 + i)"
        var factors = [
            Factor(
                id: rng.uuid(), createdAt: at,
                kind: .passkey(PasskeyFactor(credentialId: credential, label: "1Password"))),
            Factor(
                id: rng.uuid(), createdAt: at,
                kind: .oidcAccount(
                    OIDCAccountFactor(
                        account: OIDCAccount(provider: .google, sub: sub, maskedEmail: "j***@gmail.com"),
                        turnkeyProviderId: rng.uuid()))),
        ]
        var keys: [EncryptionKey] = [
            .prf(encryptedKey: Hex.encode(rng.bytes(48))),
            .turnkey(
                TurnkeyKey(
                    encryptedKey: Hex.encode(rng.bytes(48)), turnkeyAccountId: rng.uuid(), turnkeyUserId: rng.uuid(),
                    turnkeyPrivateKeyId: rng.uuid())),
        ]
        var keychain: String?
        if i % 4 == 0 {
            let key = Base64.encode(points.next())
            keychain = key
            factors.append(Factor(id: rng.uuid(), createdAt: at, kind: .ecKeypair(publicKey: key)))
            keys.append(.icloud(encryptedKey: Hex.encode(rng.bytes(48))))
        }
        let sync = (0..<2).map { _ in Base64.encode(points.next()) }
        let metadata = BackupMetadata(
            id: id, manifestHash: Hex.encode(rng.bytes(32)), factors: factors,
            syncFactors: sync.map { Factor(id: rng.uuid(), createdAt: at, kind: .ecKeypair(publicKey: $0)) }, keys: keys
        )
        if sampled {
            samples.append(
                Sample(backupId: id, credentialId: credential, googleSub: sub, keychainKey: keychain, syncKey: sync[0]))
        }
        let blob = Data(rng.bytes(256))
        let record = BackupRecord(
            backupId: id, metadata: metadata, blobSize: blob.count, blobSHA256: SHA256.hex(Array(blob)), importedAt: 1,
            updatedAt: 1)
        return BackupWrite(
            record: record, blob: blob, lookupRows: metadata.lookupKeys.map { LookupRow(pk: $0.rawValue, backupId: id) }
        )
    }
}
