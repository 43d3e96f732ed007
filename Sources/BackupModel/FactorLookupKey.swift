/// FactorLookup scope: main factors recover a backup; sync factors only update it.
public enum FactorScope: String, Sendable, Codable, CaseIterable {
    case main = "MAIN"
    case sync = "SYNC"
}

/// What a FactorLookup key names.
public enum LookupFactor: Sendable, Hashable {
    case passkey(credentialId: String)
    case oidc(issuer: String, sub: String)
    case ecKeypair(publicKey: String)
}

/// A FactorLookup primary key, `{MAIN,SYNC}#PK|…`, `…#OIDC|<issuer>|<sub>`, `…#EC_KEYPAIR|…`,
/// exactly as the Backup Service writes it.
public struct FactorLookupKey: Sendable, Hashable, Comparable, CustomStringConvertible {
    public let scope: FactorScope
    public let factor: LookupFactor
    /// The key as stored, made once: a lookup reads it several times (its shared read, its
    /// resolution, its answer and its audit entry).
    public let rawValue: String

    public init(scope: FactorScope, factor: LookupFactor) {
        self.scope = scope
        self.factor = factor
        rawValue =
            switch factor {
            case .passkey(let id): scope.rawValue + "#PK|" + id
            case .oidc(let issuer, let sub): scope.rawValue + "#OIDC|" + issuer + "|" + sub
            case .ecKeypair(let key): scope.rawValue + "#EC_KEYPAIR|" + key
            }
    }

    public static func == (a: FactorLookupKey, b: FactorLookupKey) -> Bool {
        a.scope == b.scope && a.factor == b.factor
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(scope)
        hasher.combine(factor)
    }

    public var description: String { rawValue }

    /// The kind column of the index: `PK`, `OIDC` or `EC_KEYPAIR`.
    public var kindTag: String {
        switch factor {
        case .passkey: "PK"
        case .oidc: "OIDC"
        case .ecKeypair: "EC_KEYPAIR"
        }
    }

    /// - Throws: ``ConsoleError`` `invalid_lookup_key`.
    public init(parsing text: String) throws(ConsoleError) {
        guard text.utf8.count <= Self.maxBytes else {
            throw .invalid(
                "invalid_lookup_key",
                "Invalid FactorLookup key: it has \(text.utf8.count) bytes, at most \(Self.maxBytes).")
        }
        guard !text.unicodeScalars.contains(where: UntrustedText.isControl) else {
            throw .invalid(
                "invalid_lookup_key",
                "Invalid FactorLookup key \"\(UntrustedText.escaped(String(text.prefix(80))))\": it holds a control character."
            )
        }
        guard let hash = text.firstIndex(of: "#") else {
            throw Self.invalid(text, "expected SCOPE#KIND|…")
        }
        guard let scope = FactorScope(rawValue: String(text[..<hash])) else {
            throw Self.invalid(text, "the scope must be MAIN or SYNC")
        }
        let rest = text[text.index(after: hash)...]
        guard let bar = rest.firstIndex(of: "|") else { throw Self.invalid(text, "expected KIND|value") }
        let kind = rest[..<bar]
        let value = String(rest[rest.index(after: bar)...])
        guard !value.isEmpty else { throw Self.invalid(text, "the value is empty") }
        switch kind {
        case "PK":
            factor = .passkey(credentialId: value)
        case "OIDC":
            // Issuer URLs hold no '|', so the first one ends the issuer; the rest is the sub.
            guard let split = value.firstIndex(of: "|"), value.index(after: split) < value.endIndex else {
                throw Self.invalid(text, "an OIDC key is OIDC|<issuer>|<sub>")
            }
            factor = .oidc(issuer: String(value[..<split]), sub: String(value[value.index(after: split)...]))
        case "EC_KEYPAIR":
            factor = .ecKeypair(publicKey: value)
        default:
            throw Self.invalid(text, "the kind must be PK, OIDC or EC_KEYPAIR")
        }
        self.scope = scope
        // What the parts make again, byte for byte: SCOPE, `#`, KIND, `|`, the value.
        rawValue = text
    }

    /// Far above any real key (a 1023-byte credential id in base64url, an OIDC issuer and sub).
    public static let maxBytes = 4096

    public static func < (a: FactorLookupKey, b: FactorLookupKey) -> Bool { a.rawValue < b.rawValue }

    static func invalid(_ text: String, _ reason: String) -> ConsoleError {
        .invalid("invalid_lookup_key", "Invalid FactorLookup key \(SecretShape.quoted(text, limit: 80)): \(reason).")
    }
}
