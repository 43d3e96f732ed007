import BackupCrypto
import BackupModel
import Foundation

/// What an operator looks a backup up by, as typed: `lookup passkey|oidc|keypair|account …`.
///
/// Values are kept as pasted; ``LookupQuery/candidateKeys()`` turns them into the FactorLookup
/// keys the service stores, accepting the forms operators meet in logs and tickets.
public enum LookupQuery: Sendable, Equatable, Codable {
    /// A WebAuthn credential id: base64url (padded or not), standard base64, or hex.
    case passkey(credentialId: String)
    /// `google`, `apple` or an issuer URL, and the account's `sub`.
    case oidc(provider: String, sub: String)
    /// A P-256 public key, compressed (33 bytes) or uncompressed (65), as base64 (either
    /// alphabet, padded or not) or hex; `sync` selects the SYNC scope, else MAIN.
    case keypair(publicKey: String, sync: Bool)
    /// A Backup Account ID, which is the backup's id.
    case account(String)

    /// `passkey`, `oidc`, `keypair` or `account` (the audit's `kind` detail).
    public var kind: String {
        switch self {
        case .passkey: "passkey"
        case .oidc: "oidc"
        case .keypair: "keypair"
        case .account: "account"
        }
    }

    /// The stored lookup keys this input may mean, most likely first; empty for `account`.
    ///
    /// A passkey id made only of hex digits is also valid base64, so both readings are tried.
    /// An uncompressed key is not checked against the curve here (a lookup that hits proves it
    /// is stored); ``LookupService`` checks it on a miss to tell bad input from not found.
    /// - Throws: ``ConsoleError`` of kind `invalidInput` naming the field.
    public func candidateKeys() throws(ConsoleError) -> [FactorLookupKey] {
        switch self {
        case .passkey(let text):
            return try Self.credentialIds(text).map {
                FactorLookupKey(scope: .main, factor: .passkey(credentialId: $0))
            }
        case .oidc(let provider, let sub):
            let issuer = try Self.issuer(provider)
            return [FactorLookupKey(scope: .main, factor: .oidc(issuer: issuer, sub: try Self.sub(sub)))]
        case .keypair(let text, let sync):
            let stored = try Self.storedPublicKey(text)
            return [FactorLookupKey(scope: sync ? .sync : .main, factor: .ecKeypair(publicKey: stored))]
        case .account:
            return []
        }
    }

    /// Every reading of a pasted credential id, as base64url without padding (the stored form).
    static func credentialIds(_ raw: String) throws(ConsoleError) -> [String] {
        let text = trimmed(raw)
        var out: [String] = []
        if Base64.isCanonicalUnpadded(text, alphabet: .url) {
            // Already the stored form (what decoding and encoding again would give).
            out.append(text)
        } else if let bytes = Base64.decodeLenient(text), !bytes.isEmpty {
            out.append(Base64.encode(bytes, alphabet: .url, padding: false))
        }
        if text.utf8.count % 2 == 0, Hex.isHex(text), let bytes = Hex.decode(text), !bytes.isEmpty {
            let encoded = Base64.encode(bytes, alphabet: .url, padding: false)
            if !out.contains(encoded) { out.append(encoded) }
        }
        guard !out.isEmpty else {
            throw .invalid(
                "invalid_credential_id",
                "Invalid CREDENTIAL_ID \(SecretShape.quoted(text, limit: 24)): expected base64url (padded or not), standard base64 or hex."
            )
        }
        return out
    }

    /// The issuer URL of `google`, `apple` or a full issuer URL (trailing slash allowed).
    static func issuer(_ raw: String) throws(ConsoleError) -> String {
        guard let provider = OIDCProvider(name: trimmed(raw)) else {
            throw .invalid(
                "invalid_provider",
                "Invalid OIDC provider \(SecretShape.quoted(raw, limit: 40)): expected google, apple, \(OIDCProvider.google.issuer) "
                    + "or \(OIDCProvider.apple.issuer).")
        }
        return provider.issuer
    }

    static func sub(_ raw: String) throws(ConsoleError) -> String {
        let sub = trimmed(raw)
        guard !sub.isEmpty, sub.utf8.count <= 255, !sub.utf8.contains(UInt8(ascii: "|")),
            !sub.unicodeScalars.contains(where: \.properties.isWhitespace)
        else {
            throw .invalid(
                "invalid_sub", "Invalid SUB: expected the OIDC subject identifier (1-255 characters, no spaces or '|')."
            )
        }
        return sub
    }

    /// The stored form of a pasted P-256 key: standard base64, padded, of the 65-byte point.
    static func storedPublicKey(_ raw: String) throws(ConsoleError) -> String {
        let text = trimmed(raw)
        let bytes = publicKeyBytes(text)
        guard let bytes else {
            throw .invalid(
                "invalid_public_key",
                "Invalid PUBLIC_KEY \(SecretShape.quoted(text, limit: 24)): expected a 33- or 65-byte P-256 key as base64 or hex."
            )
        }
        if bytes.count == 65 { return Base64.encode(bytes) }
        do {
            return Base64.encode(try P256.decompress(bytes))
        } catch {
            throw notOnCurve()
        }
    }

    /// Decodes hex or base64 (either alphabet, padded or not) to 33 bytes starting 02/03 or
    /// 65 starting 04. The lengths of the encodings differ, so no input has two readings.
    static func publicKeyBytes(_ text: String) -> [UInt8]? {
        var readings: [[UInt8]] = []
        if Hex.isHex(text), let bytes = Hex.decode(text) { readings.append(bytes) }
        if let bytes = Base64.decodeLenient(text) { readings.append(bytes) }
        return readings.first { bytes in
            switch (bytes.count, bytes.first) {
            case (33, 0x02), (33, 0x03), (65, 0x04): true
            default: false
            }
        }
    }

    static func notOnCurve() -> ConsoleError {
        .invalid("invalid_public_key", "Invalid PUBLIC_KEY: the bytes are not a point on P-256.")
    }

    /// The text without surrounding whitespace. Pasted input rarely has any, and Foundation's
    /// trimming costs a few microseconds of a lookup, so it runs only when an end needs it.
    static func trimmed(_ text: String) -> String {
        // Printable ASCII at both ends (almost every pasted value) is never white space.
        if let first = text.utf8.first, let last = text.utf8.last, (0x21..<0x7F).contains(first),
            (0x21..<0x7F).contains(last)
        {
            return text
        }
        guard let first = text.unicodeScalars.first, let last = text.unicodeScalars.last else { return text }
        guard first.properties.isWhitespace || last.properties.isWhitespace else { return text }
        return text.trimmingCharacters(in: .whitespacesAndNewlines)
    }
}
