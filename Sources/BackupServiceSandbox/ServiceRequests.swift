import BackupModel
import BackupService
import Foundation
import SandboxIdentity

/// A JSON object being read into a request type, as serde reads it: a missing or mistyped
/// member is the framework's 422 (`Failed to deserialize the JSON body into the target type`),
/// unknown members are ignored, `null` is an absent `Option`.
struct Fields: Sendable {
    let object: [String: JSONValue]

    init(_ value: JSONValue) throws(Refusal) {
        guard case .object(let object) = value else { throw Self.refuse("invalid type: expected a JSON object") }
        self.object = object
    }

    static func refuse(_ reason: String) -> Refusal {
        Refusal(.plain(422, "Failed to deserialize the JSON body into the target type: \(reason)"))
    }

    func value(_ key: String) throws(Refusal) -> JSONValue {
        guard let value = object[key], value != .null else { throw Self.refuse("missing field `\(key)`") }
        return value
    }

    func string(_ key: String) throws(Refusal) -> String {
        guard let text = try value(key).stringValue else {
            throw Self.refuse("invalid type for `\(key)`, expected a string")
        }
        return text
    }

    func optionalString(_ key: String) throws(Refusal) -> String? {
        guard let value = object[key], value != .null else { return nil }
        guard let text = value.stringValue else { throw Self.refuse("invalid type for `\(key)`, expected a string") }
        return text
    }

    func fields(_ key: String) throws(Refusal) -> Fields { try Fields(try value(key)) }

    /// A `kind`-tagged value's tag, checked against the variants.
    func kind(_ variants: [String]) throws(Refusal) -> String {
        let tag = try string("kind")
        guard variants.contains(tag) else {
            throw Self.refuse(
                "unknown variant `\(tag)`, expected one of \(variants.map { "`\($0)`" }.joined(separator: ", "))")
        }
        return tag
    }

    /// `BackupEncryptionKey`.
    func encryptionKey(_ key: String) throws(Refusal) -> EncryptionKey? {
        guard let value = object[key], value != .null else { return nil }
        let fields = try Fields(value)
        let encrypted = try fields.string("encryptedKey")
        switch try fields.kind(["PRF", "ICLOUD", "TURNKEY"]) {
        case "PRF": return .prf(encryptedKey: encrypted)
        case "ICLOUD": return .icloud(encryptedKey: encrypted)
        default:
            return .turnkey(
                TurnkeyKey(
                    encryptedKey: encrypted, turnkeyAccountId: try fields.string("turnkeyAccountId"),
                    turnkeyUserId: try fields.string("turnkeyUserId"),
                    turnkeyPrivateKeyId: try fields.string("turnkeyPrivateKeyId")))
        }
    }

    /// `normalize_hex_32`: a leading `0x` trimmed, exactly 32 bytes of hex, lowercase.
    func manifestHash(_ key: String) throws(Refusal) -> String {
        var text = Substring(try string(key))
        while text.hasPrefix("0x") { text = text.dropFirst(2) }
        guard let bytes = Hex.decode(text) else { throw Self.refuse("Invalid character or odd number of digits") }
        guard bytes.count == 32 else { throw Self.refuse("Expected 32 bytes") }
        return text.lowercased()
    }

    /// `validate_backup_account_id`: the prefix, then hex of exactly 33 bytes.
    func backupAccountId(_ key: String) throws(Refusal) -> String {
        let text = try string(key)
        guard text.hasPrefix(BackupAccountID.prefix) else {
            throw Self.refuse("Invalid backup account ID. Missing expected prefix.")
        }
        guard let bytes = Hex.decode(text.dropFirst(BackupAccountID.prefix.count)) else {
            throw Self.refuse("Invalid character or odd number of digits")
        }
        guard bytes.count == 33 else {
            throw Self.refuse("Invalid backup account ID. Expected 33 bytes after the prefix.")
        }
        return text
    }

    func authorization(_ key: String) throws(Refusal) -> Authorization { try Authorization(try fields(key)) }
}

/// A request type read from a JSON body.
protocol ServiceRequest: Sendable {
    init(_ fields: Fields) throws(Refusal)
}

/// The `Authorization` of a request (BS: `types/authorization.rs`), tagged by `kind`.
enum Authorization: Sendable {
    case passkey(credential: JSONValue, label: String)
    case oidcAccount(token: OIDCTokenInput, publicKey: String, signature: String)
    case ecKeypair(publicKey: String, signature: String)

    init(_ fields: Fields) throws(Refusal) {
        switch try fields.kind(["PASSKEY", "OIDC_ACCOUNT", "EC_KEYPAIR"]) {
        case "PASSKEY":
            self = .passkey(credential: try fields.value("credential"), label: try fields.optionalString("label") ?? "")
        case "OIDC_ACCOUNT":
            self = .oidcAccount(
                token: try OIDCTokenInput(try fields.fields("oidcToken")), publicKey: try fields.string("publicKey"),
                signature: try fields.string("signature"))
        default:
            self = .ecKeypair(publicKey: try fields.string("publicKey"), signature: try fields.string("signature"))
        }
    }

    /// `From<&Authorization> for ChallengeType`: OIDC accounts sign a keypair challenge too.
    var challengeType: String {
        if case .passkey = self { return "PASSKEY" }
        return "KEYPAIR"
    }
}

/// `OidcToken`: `{"kind":"GOOGLE","token"}` or `{"kind":"APPLE","token","aud"?}`.
struct OIDCTokenInput: Sendable {
    var provider: OIDCProvider
    var token: String
    var aud: String?

    init(_ fields: Fields) throws(Refusal) {
        provider = try fields.kind(["GOOGLE", "APPLE"]) == "GOOGLE" ? .google : .apple
        token = try fields.string("token")
        aud = provider == .apple ? try fields.optionalString("aud") : nil
    }
}

/// The request bodies of the full API (camelCase).
enum ServiceRequests {
    struct Empty: ServiceRequest {
        init(_ fields: Fields) throws(Refusal) {}
    }

    struct DeleteFactorChallenge: ServiceRequest {
        var factorId: String
        init(_ fields: Fields) throws(Refusal) { factorId = try fields.string("factorId") }
    }

    struct ResetChallenge: ServiceRequest {
        var backupAccountId: String
        init(_ fields: Fields) throws(Refusal) { backupAccountId = try fields.backupAccountId("backupAccountId") }
    }

    struct Status: ServiceRequest {
        var backupId: String
        init(_ fields: Fields) throws(Refusal) { backupId = try fields.string("backupId") }
    }

    struct PasskeyChallenge: ServiceRequest {
        var name: String
        var displayName: String
        init(_ fields: Fields) throws(Refusal) {
            name = try fields.string("name")
            displayName = try fields.string("displayName")
            let platform = try fields.string("platform")
            guard platform == "IOS" || platform == "ANDROID" else {
                throw Fields.refuse("unknown variant `\(platform)`, expected `ANDROID` or `IOS`")
            }
        }
    }

    struct AddFactorChallenge: ServiceRequest {
        var oidcToken: String
        init(_ fields: Fields) throws(Refusal) {
            let newFactor = try fields.fields("newFactor")
            _ = try newFactor.kind(["OIDC_ACCOUNT"])
            oidcToken = try newFactor.string("oidcToken")
        }
    }

    struct Create: ServiceRequest {
        var authorization: Authorization
        var challengeToken: String
        var initialEncryptionKey: EncryptionKey
        var initialSyncFactor: Authorization
        var initialSyncChallengeToken: String
        var turnkeyProviderId: String?
        var manifestHash: String
        var backupAccountId: String

        init(_ fields: Fields) throws(Refusal) {
            authorization = try fields.authorization("authorization")
            challengeToken = try fields.string("challengeToken")
            guard let key = try fields.encryptionKey("initialEncryptionKey") else {
                throw Fields.refuse("missing field `initialEncryptionKey`")
            }
            initialEncryptionKey = key
            initialSyncFactor = try fields.authorization("initialSyncFactor")
            initialSyncChallengeToken = try fields.string("initialSyncChallengeToken")
            turnkeyProviderId = try fields.optionalString("turnkeyProviderId")
            manifestHash = try fields.manifestHash("manifestHash")
            backupAccountId = try fields.backupAccountId("backupAccountId")
        }
    }

    struct Sync: ServiceRequest {
        var authorization: Authorization
        var challengeToken: String
        var currentManifestHash: String
        var newManifestHash: String

        init(_ fields: Fields) throws(Refusal) {
            authorization = try fields.authorization("authorization")
            challengeToken = try fields.string("challengeToken")
            currentManifestHash = try fields.manifestHash("currentManifestHash")
            newManifestHash = try fields.manifestHash("newManifestHash")
        }
    }

    struct Authorized: ServiceRequest {
        var authorization: Authorization
        var challengeToken: String

        init(_ fields: Fields) throws(Refusal) {
            authorization = try fields.authorization("authorization")
            challengeToken = try fields.string("challengeToken")
        }
    }

    struct RetrieveMetadata: ServiceRequest {
        var authorization: Authorization
        var challengeToken: String
        var backupId: String?

        init(_ fields: Fields) throws(Refusal) {
            authorization = try fields.authorization("authorization")
            challengeToken = try fields.string("challengeToken")
            backupId = try fields.optionalString("backupId")
        }
    }

    struct AddSyncFactor: ServiceRequest {
        var challengeToken: String
        var syncFactor: Authorization
        var syncFactorToken: String

        init(_ fields: Fields) throws(Refusal) {
            challengeToken = try fields.string("challengeToken")
            syncFactor = try fields.authorization("syncFactor")
            syncFactorToken = try fields.string("syncFactorToken")
        }
    }

    struct AddFactor: ServiceRequest {
        var existingFactorAuthorization: Authorization
        var existingFactorChallengeToken: String
        var existingFactorTurnkeyActivity: String?
        var newFactorAuthorization: Authorization
        var newFactorChallengeToken: String
        var encryptedBackupKey: EncryptionKey?
        var turnkeyProviderId: String?

        init(_ fields: Fields) throws(Refusal) {
            existingFactorAuthorization = try fields.authorization("existingFactorAuthorization")
            existingFactorChallengeToken = try fields.string("existingFactorChallengeToken")
            existingFactorTurnkeyActivity = try fields.optionalString("existingFactorTurnkeyActivity")
            newFactorAuthorization = try fields.authorization("newFactorAuthorization")
            newFactorChallengeToken = try fields.string("newFactorChallengeToken")
            encryptedBackupKey = try fields.encryptionKey("encryptedBackupKey")
            turnkeyProviderId = try fields.optionalString("turnkeyProviderId")
        }
    }

    struct DeleteFactor: ServiceRequest {
        var authorization: Authorization
        var challengeToken: String
        var factorId: String
        var encryptionKey: EncryptionKey?
        var scope: FactorScope

        init(_ fields: Fields) throws(Refusal) {
            authorization = try fields.authorization("authorization")
            challengeToken = try fields.string("challengeToken")
            factorId = try fields.string("factorId")
            encryptionKey = try fields.encryptionKey("encryptionKey")
            let scope = try fields.string("scope")
            guard let parsed = FactorScope(rawValue: scope) else {
                throw Fields.refuse("unknown variant `\(scope)`, expected `MAIN` or `SYNC`")
            }
            self.scope = parsed
        }
    }

    struct Reset: ServiceRequest {
        var backupAccountId: String
        var signature: String
        var challengeToken: String

        init(_ fields: Fields) throws(Refusal) {
            backupAccountId = try fields.backupAccountId("backupAccountId")
            signature = try fields.string("signature")
            challengeToken = try fields.string("challengeToken")
        }
    }
}
