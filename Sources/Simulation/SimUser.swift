import BackupCrypto
import BackupModel
import Foundation

/// One simulated user: what their devices hold (keys, passkey, local manifest), and the
/// simulator's account of what the Backup Service and Turnkey hold for them.
///
/// Every random choice about this user comes from ``random``, seeded from the simulation seed
/// and the user's index, so a user's life is the same however users interleave.
final class SimUser {
    /// The main factors the user enrolls at creation.
    enum Profile: String, CaseIterable {
        case passkey, passkeyAndOIDC, oidc, keychain
    }

    enum State { case waiting, active, gone }

    struct Passkey {
        var credentialId: [UInt8]
        var key: SecretBytes
        /// The registration credential the service stored (Turnkey registers it later).
        var registration: JSONValue?
        var registrationChallenge: [UInt8]?
    }

    struct Device {
        var key: SimKey
        var suffix: String
        var lost = false
        var localManifest: String
    }

    /// The simulator's account of the user's backup at the service.
    struct Backup {
        var manifest: String
        var passkeyFactor: String?
        var keychainFactor: String?
        var oidc: [OIDCFactor] = []
        var keys: [EncryptionKey]
        /// Sync keys (service form) → factor id.
        var syncFactors: [String: String] = [:]
        /// FactorLookup rows of this backup whose factor the metadata no longer has.
        var staleRows: Set<String> = []

        var subOrgId: String? {
            BackupMetadata(id: "", manifestHash: "", factors: [], syncFactors: [], keys: keys).turnkeySubOrgIds.first
        }
        var mainFactors: Int { (passkeyFactor == nil ? 0 : 1) + (keychainFactor == nil ? 0 : 1) + oidc.count }
    }

    struct OIDCFactor {
        var factorId: String
        var provider: OIDCProvider
        var sub: String
        var providerId: String
    }

    /// The simulator's account of the user's current Turnkey sub-org.
    struct SubOrg {
        var id: String
        var authUserId: String
        /// providerId → (provider, sub).
        var providers: [String: OIDCProvider] = [:]
        /// Compressed hex of sync keys with a user in the sub-org.
        var syncKeys: Set<String> = []
        /// Sync keys whose user also has the delete-only policy.
        var deletingKeys: Set<String> = []
        var passkeyRegistered = false
        var breakGlass = false
        var exists = true
    }

    let index: Int
    let random: SeededRandom
    let rootKey: RootKey
    let accountKey: SecretBytes
    let backupId: String
    let accountPublicHex: String
    let profile: Profile
    let platformIOS: Bool
    let oldClient: Bool
    let withBreakGlass: Bool
    var joinDay: Int
    let subs: [OIDCProvider: String]
    let email: String
    var state = State.waiting
    var passkey: Passkey?
    var keychain: SimKey?
    var devices: [Device] = []
    var backup: Backup?
    var subOrg: SubOrg?
    var createFailures = 0
    var pendingDeletion = 0
    /// Lost every factor and device: only a reset helps.
    var lockedOut = false
    var deviceCounter = 0

    init(index: Int, seed: UInt64, days: Int, options: SimulationOptions) throws(ConsoleError) {
        self.index = index
        random = SeededRandom(seed: seed &* 0x9E37_79B9_7F4A_7C15 &+ UInt64(index) &* 0xD1B5_4A32_D192_ED03)
        var rootKey: RootKey
        var secret: SecretBytes
        repeat {
            rootKey = RootKey(version: .v1, secret: random.secretBytes(32))
            secret = (try? BackupAccountKey.secretKey(rootKey: rootKey)) ?? SecretBytes([])
        } while secret.count != 32
        self.rootKey = rootKey
        accountKey = secret
        let publicKey = try Secp256k1.publicKey(secretKey: secret, compressed: true)
        accountPublicHex = Hex.encode(publicKey)
        backupId = BackupAccountID(compressedPublicKey: publicKey).rawValue
        let draw = random.fraction
        profile = draw < 0.4 ? .passkey : draw < 0.7 ? .passkeyAndOIDC : draw < 0.8 ? .oidc : .keychain
        platformIOS = profile == .keychain || random.fraction < 0.5
        oldClient = random.fraction < options.oldClients
        withBreakGlass = random.fraction >= options.withoutBreakGlass
        joinDay = Int(random.uniform(UInt64(max(1, days * 6 / 10))))
        subs = [
            .google: String(100_000_000_000 + random.uniform(899_999_999_999)),
            .apple: "000\(random.uniform(999_999)).\(Hex.encode(random.bytes(8)))",
        ]
        email = "user\(index)@example.com"
    }

    /// The OIDC provider the user signs in with first.
    var primaryProvider: OIDCProvider { platformIOS ? .apple : .google }

    var activeDevices: [Int] { devices.indices.filter { !devices[$0].lost } }

    func newDevice(manifest: String) -> Int {
        deviceCounter += 1
        devices.append(Device(key: SimKey(random), suffix: "\(index)_\(deviceCounter)", localManifest: manifest))
        return devices.count - 1
    }

    func newManifest() -> String { Hex.encode(random.bytes(32)) }
}

extension RandomSource {
    /// A uniform fraction in [0, 1).
    var fraction: Double { Double(uniform(1 << 53)) / Double(1 << 53) }

    func chance(_ probability: Double) -> Bool { probability > 0 && fraction < probability }
}
