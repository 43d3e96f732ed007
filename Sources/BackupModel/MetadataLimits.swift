/// The Backup Service's own limits on a backup's metadata, checked on everything an export
/// brings in, and the rule that imported text holds no control characters.
///
/// Decoding accepts anything shaped like metadata; ``BackupMetadata/validate()`` then refuses
/// what the service itself could never have stored (too many factors, two keys of one kind,
/// the same factor twice) and what the console must not carry (a NUL that SQLite or C would cut,
/// an escape sequence, a 3 MB label).
extension BackupMetadata {
    /// Labels are a passkey provider's name ("1Password", "iCloud Keychain").
    public static let maxLabelBytes = 256
    /// Identifiers: factor ids, OIDC `sub`, masked emails, Turnkey ids, public keys.
    public static let maxIdentifierBytes = 1024
    /// A WebAuthn credential id is at most 1023 bytes; its base64url text about 1364 characters.
    public static let maxCredentialIdBytes = 1400
    /// Encrypted keys and the strings inside carried WebAuthn JSON.
    public static let maxBlobTextBytes = 16 * 1024

    /// Checks the service's limits and the console's text rule.
    /// - Throws: ``ConsoleError`` naming the field (`factors[2].label`) and the rule:
    ///   `too_many_factors`, `duplicate_factor`, `duplicate_key_kind`, `invalid_manifest_hash`,
    ///   `control_character`, `string_too_long`.
    public func validate() throws(ConsoleError) {
        try Self.checkText(id, field: "id", max: Self.maxIdentifierBytes)
        try Self.checkManifestHash(manifestHash)
        guard factors.count <= Self.maxMainFactors else {
            throw .invalid(
                "too_many_factors",
                "The backup has \(factors.count) main factors; the service allows at most \(Self.maxMainFactors).")
        }
        guard syncFactors.count <= Self.maxSyncFactors else {
            throw .invalid(
                "too_many_factors",
                "The backup has \(syncFactors.count) sync factors; the service allows at most \(Self.maxSyncFactors).")
        }
        try Self.checkFactors(factors, field: "factors", scope: .main)
        try Self.checkFactors(syncFactors, field: "syncFactors", scope: .sync)
        var kinds = Set<String>()
        for (i, key) in keys.enumerated() {
            let field = "keys[\(i)]"
            guard kinds.insert(key.tag).inserted else {
                throw .invalid(
                    "duplicate_key_kind",
                    "\(field) is a second \(key.tag) key; the service keeps at most one encryption key per kind.")
            }
            try Self.checkText(key.encryptedKey, field: "\(field).encryptedKey", max: Self.maxBlobTextBytes)
            if case .turnkey(let t) = key {
                try Self.checkText(t.turnkeyAccountId, field: "\(field).turnkeyAccountId", max: Self.maxIdentifierBytes)
                try Self.checkText(t.turnkeyUserId, field: "\(field).turnkeyUserId", max: Self.maxIdentifierBytes)
                try Self.checkText(
                    t.turnkeyPrivateKeyId, field: "\(field).turnkeyPrivateKeyId", max: Self.maxIdentifierBytes)
            }
        }
    }

    static func checkManifestHash(_ text: String) throws(ConsoleError) {
        let hex = text.hasPrefix("0x") ? text.utf8.dropFirst(2) : text.utf8[...]
        guard hex.count == 64, hex.allSatisfy({ Hex.nibble($0) != nil }) else {
            throw .invalid(
                "invalid_manifest_hash",
                "manifestHash must be 32 bytes of hex (64 digits), got \(text.utf8.count) characters.")
        }
    }

    static func checkFactors(_ list: [Factor], field: String, scope: FactorScope) throws(ConsoleError) {
        var ids = Set<String>()
        var lookupKeys = Set<String>()
        for (i, factor) in list.enumerated() {
            let at = "\(field)[\(i)]"
            try checkText(factor.id, field: "\(at).id", max: maxIdentifierBytes)
            guard ids.insert(factor.id).inserted else {
                throw .invalid("duplicate_factor", "\(at) repeats the factor id of an earlier factor.")
            }
            if let key = factor.lookupKey(scope: scope), !lookupKeys.insert(key.rawValue).inserted {
                throw .invalid("duplicate_factor", "\(at) is the same \(factor.kind.tag) factor as an earlier one.")
            }
            switch factor.kind {
            case .passkey(let p):
                try checkText(p.credentialId, field: "\(at).credentialId", max: maxCredentialIdBytes)
                if let label = p.label { try checkText(label, field: "\(at).label", max: maxLabelBytes) }
                if let w = p.webauthnCredential { try checkJSON(w, field: "\(at).webauthnCredential") }
                if let r = p.registration { try checkJSON(r, field: "\(at).registration") }
            case .oidcAccount(let o):
                if let sub = o.sub { try checkText(sub, field: "\(at).account.sub", max: maxIdentifierBytes) }
                if let masked = o.account.maskedEmail {
                    try checkText(masked, field: "\(at).account.maskedEmail", max: maxIdentifierBytes)
                }
                if let provider = o.turnkeyProviderId {
                    try checkText(provider, field: "\(at).turnkeyProviderId", max: maxIdentifierBytes)
                }
            case .ecKeypair(let key):
                try checkText(key, field: "\(at).publicKey", max: maxIdentifierBytes)
            }
        }
    }

    /// Every string of carried JSON (keys too) follows the text rule; nesting is bounded.
    static func checkJSON(_ value: JSONValue, field: String, depth: Int = 0) throws(ConsoleError) {
        guard depth < 32 else { throw .invalid("invalid_metadata", "\(field) is nested more than 32 levels deep.") }
        switch value {
        case .string(let s): try checkText(s, field: field, max: maxBlobTextBytes)
        case .array(let a):
            for (i, v) in a.enumerated() { try checkJSON(v, field: "\(field)[\(i)]", depth: depth + 1) }
        case .object(let o):
            for (k, v) in o {
                try checkText(k, field: "\(field) (a key)", max: maxIdentifierBytes)
                try checkJSON(v, field: "\(field).\(UntrustedText.escaped(String(k.prefix(40))))", depth: depth + 1)
            }
        case .null, .bool, .int, .double: break
        }
    }

    static func checkText(_ text: String, field: String, max: Int) throws(ConsoleError) {
        try UntrustedText.check(text, field: field, maxBytes: max)
    }
}

/// The text rule for everything that arrives from outside: bounded, and free of control
/// characters (C0 including NUL, DEL, C1) and of the Unicode controls that reorder or hide text.
public enum UntrustedText {
    /// Whether `scalar` is a control or format character a terminal or a C string would act on.
    public static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x00...0x1F, 0x7F...0x9F: true
        // Bidirectional overrides and isolates, zero-width and line/paragraph separators.
        case 0x200B...0x200F, 0x2028...0x202E, 0x2066...0x2069, 0xFEFF: true
        default: false
        }
    }

    /// - Throws: `control_character` or `string_too_long`, naming `field` and never echoing the text.
    public static func check(_ text: String, field: String, maxBytes: Int) throws(ConsoleError) {
        let bytes = text.utf8.count
        guard bytes <= maxBytes else {
            throw .invalid("string_too_long", "\(field) has \(bytes) bytes; at most \(maxBytes) are allowed.")
        }
        if let bad = text.unicodeScalars.first(where: isControl) {
            throw .invalid(
                "control_character",
                "\(field) holds the control character U+\(String(bad.value, radix: 16, uppercase: true).leftPadded(4))."
            )
        }
    }

    /// `text` with every control character written as an escape (`\n`, `\t`, `\u{1B}`, …), for
    /// terminals and one-line messages. Everything else is kept as it is.
    public static func escaped(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: isControl) else { return text }
        var out = ""
        out.unicodeScalars.reserveCapacity(text.unicodeScalars.count + 8)
        for scalar in text.unicodeScalars {
            guard isControl(scalar) else {
                out.unicodeScalars.append(scalar)
                continue
            }
            switch scalar {
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            default: out += "\\u{\(String(scalar.value, radix: 16, uppercase: true))}"
            }
        }
        return out
    }
}

extension String {
    fileprivate func leftPadded(_ width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}
