/// One encryption of the backup key, as listed in the metadata's `keys`.
public enum EncryptionKey: Sendable, Equatable, Codable {
    /// Encrypted with the passkey's PRF output.
    case prf(encryptedKey: String)
    /// Encrypted with a key in the user's iCloud Keychain.
    case icloud(encryptedKey: String)
    /// Encrypted with a private key held in the user's Turnkey sub-organization.
    case turnkey(TurnkeyKey)

    public var tag: String {
        switch self {
        case .prf: "PRF"
        case .icloud: "ICLOUD"
        case .turnkey: "TURNKEY"
        }
    }

    public var encryptedKey: String {
        switch self {
        case .prf(let k), .icloud(let k): k
        case .turnkey(let t): t.encryptedKey
        }
    }

    private enum Keys: String, CodingKey {
        case kind, encryptedKey, turnkeyAccountId, turnkeyUserId, turnkeyPrivateKeyId
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: Keys.self)
        let tag = try c.decode(String.self, forKey: .kind)
        let encrypted = try c.decode(String.self, forKey: .encryptedKey)
        switch tag {
        case "PRF": self = .prf(encryptedKey: encrypted)
        case "ICLOUD": self = .icloud(encryptedKey: encrypted)
        case "TURNKEY":
            self = .turnkey(
                TurnkeyKey(
                    encryptedKey: encrypted,
                    turnkeyAccountId: try c.decode(String.self, forKey: .turnkeyAccountId),
                    turnkeyUserId: try c.decode(String.self, forKey: .turnkeyUserId),
                    turnkeyPrivateKeyId: try c.decode(String.self, forKey: .turnkeyPrivateKeyId)))
        default:
            throw DecodingError.dataCorruptedError(
                forKey: .kind, in: c, debugDescription: "unknown key kind \"\(tag)\"")
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: Keys.self)
        try c.encode(tag, forKey: .kind)
        try c.encode(encryptedKey, forKey: .encryptedKey)
        if case .turnkey(let t) = self {
            try c.encode(t.turnkeyAccountId, forKey: .turnkeyAccountId)
            try c.encode(t.turnkeyUserId, forKey: .turnkeyUserId)
            try c.encode(t.turnkeyPrivateKeyId, forKey: .turnkeyPrivateKeyId)
        }
    }
}

public struct TurnkeyKey: Sendable, Equatable {
    public var encryptedKey: String
    /// The user's Turnkey sub-organization id (inferred from naming and flows; see the facts).
    public var turnkeyAccountId: String
    public var turnkeyUserId: String
    public var turnkeyPrivateKeyId: String

    public init(encryptedKey: String, turnkeyAccountId: String, turnkeyUserId: String, turnkeyPrivateKeyId: String) {
        self.encryptedKey = encryptedKey
        self.turnkeyAccountId = turnkeyAccountId
        self.turnkeyUserId = turnkeyUserId
        self.turnkeyPrivateKeyId = turnkeyPrivateKeyId
    }
}
