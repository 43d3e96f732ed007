import BackupCrypto
import BackupModel
import Foundation
import SandboxIdentity

/// The service's challenge tokens (BS: `challenge_manager.rs`), with one stand-in.
///
/// Production tokens are JWEs whose content key KMS wraps; the sandbox cannot call KMS, so its
/// tokens are `sbx.<base64url claims>.<base64url HMAC-SHA-256>` under a key the emulator holds.
/// Both are opaque to clients. The claims are the service's: `payload` (standard base64 of the
/// raw payload: 32 challenge bytes, or a passkey ceremony's state), `challenge_type`
/// (`KEYPAIR`/`PASSKEY`), `challenge_context` (`{"kind": …}`), `iat`, `nbf`, `exp` (15 minutes),
/// and extraction checks them in the service's order.
struct ChallengeTokens: Sendable {
    let key: [UInt8]

    struct Claims: Codable {
        var payload: String?
        var challenge_type: String?
        var challenge_context: JSONValue?
        var iat: Int64
        var nbf: Int64
        var exp: Int64
    }

    func seal(type: String, payload: [UInt8], context: JSONValue, now: Int64) -> String {
        let claims = Claims(
            payload: Base64.encode(payload), challenge_type: type, challenge_context: context, iat: now, nbf: now,
            exp: now + BackupServiceEmulator.tokenLifetimeSeconds)
        return seal(claims)
    }

    func seal(_ claims: Claims) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let body = Base64.encode(Array((try? encoder.encode(claims)) ?? Data()), alphabet: .url, padding: false)
        return "sbx." + body + "."
            + Base64.encode(HMAC.sha256(key: key, Array(body.utf8)), alphabet: .url, padding: false)
    }

    /// `extract_token_payload(expected, token)`: decrypt, type present, type equal, payload,
    /// context, then `nbf <= now <= exp`.
    func extract(_ token: String, expected: String, now: Int64) throws(Refusal) -> (
        payload: [UInt8], context: JSONValue
    ) {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard token.utf8.count <= 16_384, parts.count == 3, parts[0] == "sbx",
            let mac = Base64.decode(parts[2], alphabet: .url),
            HMAC.equal(mac, HMAC.sha256(key: key, Array(parts[1].utf8))),
            let json = Base64.decode(parts[1], alphabet: .url), let claims = FastJSON.parse(json)
        else { throw .jwt }
        guard let type = claims["challenge_type"]?.stringValue else { throw .jwt }
        guard type == expected else { throw .unexpectedChallengeType }
        guard let encoded = claims["payload"]?.stringValue, let payload = Base64.decode(encoded, alphabet: .standard)
        else { throw .jwt }
        guard let context = claims["challenge_context"], context != .null else { throw .jwt }
        guard case .int(let notBefore)? = claims["nbf"], case .int(let expires)? = claims["exp"], notBefore <= now,
            now <= expires
        else { throw .jwt }
        return (payload, context)
    }
}

/// The challenge contexts (`#[serde(tag="kind", rename_all="UPPERCASE")]`, camelCase fields).
enum ChallengeContext {
    static func kind(_ kind: String) -> JSONValue { .object(["kind": .string(kind)]) }
    static let create = kind("CREATE")
    static let retrieve = kind("RETRIEVE")
    static let retrieveMetadata = kind("RETRIEVEMETADATA")
    static let sync = kind("SYNC")
    static let addSyncFactor = kind("ADDSYNCFACTOR")
    static let deleteBackup = kind("DELETEBACKUP")
    static let verifyFactor = kind("VERIFYFACTOR")
    static let addFactorByNewFactor = kind("ADDFACTORBYNEWFACTOR")

    static func deleteFactor(_ factorId: String) -> JSONValue {
        .object(["kind": .string("DELETEFACTOR"), "factorId": .string(factorId)])
    }

    static func reset(_ backupAccountId: String) -> JSONValue {
        .object(["kind": .string("RESET"), "backupAccountId": .string(backupAccountId)])
    }

    static func addFactor(oidcToken: String) -> JSONValue {
        .object([
            "kind": .string("ADDFACTOR"),
            "newFactorType": .object(["kind": .string("OIDC_ACCOUNT"), "oidcToken": .string(oidcToken)]),
        ])
    }
}

/// HMAC-SHA-256 (RFC 2104) over the project's SHA-256.
enum HMAC {
    static func sha256(key: [UInt8], _ message: [UInt8]) -> [UInt8] {
        var block = key.count > 64 ? SHA256.hash(key) : key
        block += [UInt8](repeating: 0, count: 64 - block.count)
        let inner = SHA256.hash(block.map { $0 ^ 0x36 } + message)
        return SHA256.hash(block.map { $0 ^ 0x5c } + inner)
    }

    /// Constant-time comparison.
    static func equal(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        return zip(a, b).reduce(0) { $0 | ($1.0 ^ $1.1) } == 0
    }
}
