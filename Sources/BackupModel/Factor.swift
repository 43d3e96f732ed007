/// One factor of a backup: a main factor (passkey, OIDC account, iCloud Keychain keypair) or a
/// sync factor (a device's P-256 keypair).
public struct Factor: Sendable, Equatable, Codable {
    public var id: String
    public var createdAt: Timestamp
    public var kind: FactorKind

    public init(id: String, createdAt: Timestamp, kind: FactorKind) {
        self.id = id
        self.createdAt = createdAt
        self.kind = kind
    }

    /// The FactorLookup key this factor is indexed under, or `nil` when the metadata lacks what
    /// the key needs (an exported OIDC factor has no `sub`).
    public func lookupKey(scope: FactorScope) -> FactorLookupKey? {
        switch kind {
        case .passkey(let p): FactorLookupKey(scope: scope, factor: .passkey(credentialId: p.credentialId))
        case .oidcAccount(let o):
            o.sub.map { FactorLookupKey(scope: scope, factor: .oidc(issuer: o.provider.issuer, sub: $0)) }
        case .ecKeypair(let key): FactorLookupKey(scope: scope, factor: .ecKeypair(publicKey: key))
        }
    }
}

public enum FactorKind: Sendable, Equatable, Codable {
    case passkey(PasskeyFactor)
    case oidcAccount(OIDCAccountFactor)
    /// `publicKey` exactly as the metadata holds it (standard base64 of a 65-byte P-256 point).
    case ecKeypair(publicKey: String)

    /// The SCREAMING_SNAKE_CASE tag the service writes.
    public var tag: String {
        switch self {
        case .passkey: "PASSKEY"
        case .oidcAccount: "OIDC_ACCOUNT"
        case .ecKeypair: "EC_KEYPAIR"
        }
    }

    private enum Keys: String, CodingKey {
        case kind, label, credentialId, webauthnCredential, registration, account, turnkeyProviderId,
            publicKey
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: Keys.self)
        let tag = try c.decode(String.self, forKey: .kind)
        switch tag {
        case "PASSKEY":
            let webauthn = try c.decodeIfPresent(JSONValue.self, forKey: .webauthnCredential)
            let credentialId: String
            if let given = try c.decodeIfPresent(String.self, forKey: .credentialId) {
                credentialId = given
            } else if let raw = webauthn?["cred"]?["cred_id"]?.stringValue {
                credentialId = raw
            } else {
                throw DecodingError.keyNotFound(
                    Keys.credentialId,
                    .init(
                        codingPath: c.codingPath,
                        debugDescription: "a passkey needs credentialId or webauthnCredential.cred.cred_id"))
            }
            // webauthn-rs has written cred_id both padded and unpadded; the index uses base64url
            // without padding, so normalise to that.
            guard let bytes = Base64.decodeLenient(credentialId), !bytes.isEmpty else {
                throw DecodingError.dataCorruptedError(
                    forKey: .credentialId, in: c, debugDescription: "the passkey credential id is not base64url")
            }
            self = .passkey(
                PasskeyFactor(
                    credentialId: Base64.encode(bytes, alphabet: .url, padding: false),
                    label: try c.decodeIfPresent(String.self, forKey: .label),
                    webauthnCredential: webauthn,
                    registration: try c.decodeIfPresent(JSONValue.self, forKey: .registration)))
        case "OIDC_ACCOUNT":
            self = .oidcAccount(
                OIDCAccountFactor(
                    account: try c.decode(OIDCAccount.self, forKey: .account),
                    turnkeyProviderId: try c.decodeIfPresent(String.self, forKey: .turnkeyProviderId)))
        case "EC_KEYPAIR":
            self = .ecKeypair(publicKey: try c.decode(String.self, forKey: .publicKey))
        default:
            throw DecodingError.dataCorruptedError(
                forKey: .kind, in: c, debugDescription: "unknown factor kind \"\(tag)\"")
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: Keys.self)
        try c.encode(tag, forKey: .kind)
        switch self {
        case .passkey(let p):
            try c.encodeIfPresent(p.label, forKey: .label)
            if encoder.metadataForm == .exported {
                try c.encode(p.credentialId, forKey: .credentialId)
            } else {
                try c.encode(
                    p.webauthnCredential ?? .object(["cred": .object(["cred_id": .string(p.credentialId)])]),
                    forKey: .webauthnCredential)
            }
            try c.encodeIfPresent(p.registration, forKey: .registration)
        case .oidcAccount(let o):
            try c.encode(o.account, forKey: .account)
            try c.encodeIfPresent(o.turnkeyProviderId, forKey: .turnkeyProviderId)
        case .ecKeypair(let key):
            try c.encode(key, forKey: .publicKey)
        }
    }
}

public struct PasskeyFactor: Sendable, Equatable {
    /// base64url without padding, as FactorLookup keys it.
    public var credentialId: String
    public var label: String?
    /// The webauthn-rs `Passkey` object of the stored form, carried as it came.
    public var webauthnCredential: JSONValue?
    public var registration: JSONValue?

    public init(
        credentialId: String, label: String? = nil, webauthnCredential: JSONValue? = nil,
        registration: JSONValue? = nil
    ) {
        self.credentialId = credentialId
        self.label = label
        self.webauthnCredential = webauthnCredential
        self.registration = registration
    }

    /// Passkeys compare by credential id, as the service's `PartialEq` does.
    public static func == (a: PasskeyFactor, b: PasskeyFactor) -> Bool { a.credentialId == b.credentialId }
}

public struct OIDCAccountFactor: Sendable, Equatable {
    public var account: OIDCAccount
    public var turnkeyProviderId: String?

    public init(account: OIDCAccount, turnkeyProviderId: String?) {
        self.account = account
        self.turnkeyProviderId = turnkeyProviderId
    }

    public var provider: OIDCProvider { account.provider }
    public var sub: String? { account.sub }
}

public enum OIDCProvider: String, Sendable, Codable, CaseIterable {
    case google = "GOOGLE"
    case apple = "APPLE"

    public var issuer: String {
        switch self {
        case .google: "https://accounts.google.com"
        case .apple: "https://appleid.apple.com"
        }
    }

    /// `google`, `apple`, or a full issuer URL (with or without a trailing slash).
    public init?(name: String) {
        let trimmed = name.hasSuffix("/") ? String(name.dropLast()) : name
        switch trimmed.lowercased() {
        case "google", "https://accounts.google.com", "accounts.google.com": self = .google
        case "apple", "https://appleid.apple.com", "appleid.apple.com": self = .apple
        default: return nil
        }
    }
}

/// An OIDC account. The stored form has `sub` and the full `email`; the console keeps only the
/// masked email (it has no use for the address) and the `sub` that lookups need.
public struct OIDCAccount: Sendable, Equatable, Codable {
    public var provider: OIDCProvider
    public var sub: String?
    public var maskedEmail: String?

    public init(provider: OIDCProvider, sub: String?, maskedEmail: String?) {
        self.provider = provider
        self.sub = sub
        self.maskedEmail = maskedEmail
    }

    private enum Keys: String, CodingKey { case kind, sub, email, maskedEmail }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: Keys.self)
        provider = try c.decode(OIDCProvider.self, forKey: .kind)
        sub = try c.decodeIfPresent(String.self, forKey: .sub)
        if let masked = try c.decodeIfPresent(String.self, forKey: .maskedEmail) {
            maskedEmail = masked
        } else if let email = try c.decodeIfPresent(String.self, forKey: .email) {
            maskedEmail = Self.mask(email)
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: Keys.self)
        try c.encode(provider, forKey: .kind)
        if encoder.metadataForm == .stored { try c.encodeIfPresent(sub, forKey: .sub) }
        try c.encodeIfPresent(maskedEmail, forKey: .maskedEmail)
    }

    /// `jane@gmail.com` → `j***@gmail.com`.
    public static func mask(_ email: String) -> String {
        guard let at = email.lastIndex(of: "@"), at > email.startIndex else { return "***" }
        return String(email[email.startIndex]) + "***" + email[at...]
    }
}
