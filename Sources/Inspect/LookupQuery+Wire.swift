import BackupModel
import ConsoleWire

/// The wire form of a lookup: an object tagged by `kind`, with the fields of that kind —
/// `{"kind": "passkey", "credentialId"}`, `{"kind": "oidc", "provider", "sub"}`,
/// `{"kind": "keypair", "publicKey", "sync"}` or `{"kind": "account", "backupAccountId"}`.
extension LookupQuery: SchemaDescribed {
    private enum Keys: String, CodingKey { case kind, credentialId, provider, sub, publicKey, sync, backupAccountId }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: Keys.self)
        switch try c.decode(String.self, forKey: .kind) {
        case "passkey": self = .passkey(credentialId: try c.decode(String.self, forKey: .credentialId))
        case "oidc":
            self = .oidc(
                provider: try c.decode(String.self, forKey: .provider), sub: try c.decode(String.self, forKey: .sub))
        case "keypair":
            self = .keypair(
                publicKey: try c.decode(String.self, forKey: .publicKey),
                sync: try c.decodeIfPresent(Bool.self, forKey: .sync) ?? false)
        case "account": self = .account(try c.decode(String.self, forKey: .backupAccountId))
        default:
            throw DecodingError.dataCorruptedError(
                forKey: .kind, in: c, debugDescription: "kind must be passkey, oidc, keypair or account")
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: Keys.self)
        try c.encode(kind, forKey: .kind)
        switch self {
        case .passkey(let credentialId): try c.encode(credentialId, forKey: .credentialId)
        case .oidc(let provider, let sub):
            try c.encode(provider, forKey: .provider)
            try c.encode(sub, forKey: .sub)
        case .keypair(let publicKey, let sync):
            try c.encode(publicKey, forKey: .publicKey)
            try c.encode(sync, forKey: .sync)
        case .account(let id): try c.encode(id, forKey: .backupAccountId)
        }
    }

    public static func jsonSchema(_ registry: SchemaRegistry) -> JSONValue {
        let text: JSONValue = ["type": "string", "minLength": 1]
        return [
            "description": "What to look a backup up by, tagged by kind.",
            "oneOf": [
                .object(
                    ["kind": .constant("passkey"), "credentialId": text], required: ["kind", "credentialId"],
                    title: "LookupByPasskey"),
                .object(
                    [
                        "kind": .constant("oidc"),
                        "provider": [
                            "type": "string", "minLength": 1, "description": "google, apple or an issuer URL",
                        ],
                        "sub": text,
                    ], required: ["kind", "provider", "sub"], title: "LookupByOIDC"),
                .object(
                    ["kind": .constant("keypair"), "publicKey": text, "sync": .booleanType],
                    required: ["kind", "publicKey"], title: "LookupByKeypair"),
                .object(
                    ["kind": .constant("account"), "backupAccountId": text], required: ["kind", "backupAccountId"],
                    title: "LookupByAccount"),
            ],
        ]
    }

    public static var schemaExample: JSONValue { ["kind": "account", "backupAccountId": "x"] }
}
