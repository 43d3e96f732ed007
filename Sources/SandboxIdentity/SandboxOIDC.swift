import BackupCrypto
import BackupModel
import Foundation

/// The sandbox's stand-in for Google's and Apple's ID tokens.
///
/// The real service verifies RS256 tokens against the providers' JWKS; the sandbox cannot, so it
/// accepts ES256 tokens signed by a sandbox issuer key per provider (``SandboxKeys``, derived
/// from a public label: test data, never a secret). Everything else is the real rule set of
/// `oidc_token_verifier.rs`: the real issuer URLs, the staging client ids and Apple audience
/// allowlist, `iat` within [now − 5 min, now + 30 s], and a `nonce` equal to
/// `sha256_hex(hex(compressed P-256 session public key))`, Turnkey's nonce rule.
public enum SandboxOIDC {
    /// The staging/production Google client id the service verifies `aud` against.
    public static let googleClientId = "730924878354-jvi49m445q2mv6s1dn4oklm8i4vlpct9.apps.googleusercontent.com"
    /// The staging Apple audiences; the first is the default when a client sends no `aud`.
    public static let appleAudiences = [
        "org.worldcoin.insight.staging", "org.world.staging.id", "org.world.sandbox.id", "app.world.apple.staging",
    ]

    /// The claims of an ID token (snake_case as on the wire).
    public struct Claims: Codable, Sendable, Equatable {
        public var iss: String
        public var aud: String
        public var sub: String
        public var email: String?
        public var iat: Int64
        public var exp: Int64
        public var nonce: String?

        public init(
            iss: String, aud: String, sub: String, email: String?, iat: Int64, exp: Int64, nonce: String?
        ) {
            self.iss = iss
            self.aud = aud
            self.sub = sub
            self.email = email
            self.iat = iat
            self.exp = exp
            self.nonce = nonce
        }
    }

    /// Why a token was refused, in the service's categories.
    public enum Failure: Error, Sendable, Equatable {
        case parse
        case verification
        case invalidNonce(String)
        case invalidAud
    }

    static func keyLabel(_ provider: OIDCProvider) -> String { "oidc-issuer|\(provider.rawValue)" }

    /// An ID token from the sandbox issuer of `provider` (what a sign-in SDK hands the client).
    public static func idToken(_ claims: Claims, provider: OIDCProvider) throws(ConsoleError) -> String {
        let header = JWS.json(["alg": "ES256", "kid": "sandbox-\(provider.rawValue.lowercased())", "typ": "JWT"])
        return try JWS.sign(header: header, payload: JWS.json(claims), privateKey: SandboxKeys.p256(keyLabel(provider)))
    }

    /// The audience a token of `provider` must carry: Google's client id, or for Apple the
    /// client's `aud` if it is on the allowlist (the default when absent).
    public static func audience(_ provider: OIDCProvider, requested: String?) -> Result<String, Failure> {
        switch provider {
        case .google: return .success(googleClientId)
        case .apple:
            guard let requested else { return .success(appleAudiences[0]) }
            return appleAudiences.contains(requested) ? .success(requested) : .failure(.invalidAud)
        }
    }

    /// Turnkey's nonce for a session key given as standard base64 of its 65-byte SEC1 point.
    public static func expectedNonce(sessionPublicKeyBase64 key: String) -> Result<String, Failure> {
        guard let bytes = Base64.decode(key, alphabet: .standard) else {
            return .failure(.invalidNonce("Invalid base64 public key"))
        }
        guard bytes.count == 65 else {
            return .failure(.invalidNonce("P256 in SEC1 uncompressed public key must be 65 bytes long"))
        }
        guard let compressed = try? P256.compress(bytes) else { return .failure(.invalidNonce("Invalid public key")) }
        return .success(SHA256.hex(Array(Hex.encode(compressed).utf8)))
    }

    /// The nonce for a session key's raw SEC1 bytes (clients and Turnkey use this form).
    public static func nonce(sessionPublicKey: [UInt8]) -> String {
        let compressed = (try? P256.compress(sessionPublicKey)) ?? sessionPublicKey
        return SHA256.hex(Array(Hex.encode(compressed).utf8))
    }

    /// Verifies `token` as the service's `OidcTokenVerifier` does, in its order: the audience
    /// allowlist, parsing, then signature, issuer, audience, expiry and issue time (one error),
    /// then the nonce against the session key.
    public static func verify(
        token: String, provider: OIDCProvider, requestedAudience: String?, sessionPublicKeyBase64: String?, now: Int64
    ) -> Result<Claims, Failure> {
        let audience: String
        switch self.audience(provider, requested: requestedAudience) {
        case .success(let value): audience = value
        case .failure(let failure): return .failure(failure)
        }
        guard let parsed = JWS.parse(token),
            let claims = try? JSONDecoder().decode(Claims.self, from: Data(parsed.payload))
        else { return .failure(.parse) }
        guard JWS.verify(parsed, publicKey: SandboxKeys.p256Public(keyLabel(provider))), claims.iss == provider.issuer,
            claims.aud == audience, claims.exp > now, claims.iat >= now - 300, claims.iat <= now + 30
        else { return .failure(.verification) }
        guard let sessionPublicKeyBase64 else { return .success(claims) }
        switch expectedNonce(sessionPublicKeyBase64: sessionPublicKeyBase64) {
        case .failure(let failure): return .failure(failure)
        case .success(let expected):
            guard let nonce = claims.nonce else {
                return .failure(.invalidNonce("Nonce is required for OIDC verification"))
            }
            guard nonce == expected else {
                return .failure(.invalidNonce("Nonce mismatch: expected \(expected), got \(nonce)"))
            }
            return .success(claims)
        }
    }

    /// The service's masking: the first two characters of the local part, `***@`, the domain.
    public static func mask(_ email: String) -> String? {
        let parts = email.split(separator: "@", omittingEmptySubsequences: false)
        guard parts.count == 2, !parts[0].isEmpty, !parts[1].isEmpty else { return nil }
        guard parts[0].count > 2 else { return email }
        return String(parts[0].prefix(2)) + "***@" + parts[1]
    }
}

extension SandboxOIDC {
    /// Turnkey's check of an ID token it is given (a provider to add, a login): signed by the
    /// issuer its `iss` names, not expired; `nil` otherwise. Turnkey leaves the audience to the
    /// parent org's configuration, so any audience is taken.
    public static func verifyForTurnkey(_ token: String, now: Int64) -> (provider: OIDCProvider, claims: Claims)? {
        guard let parsed = JWS.parse(token),
            let claims = try? JSONDecoder().decode(Claims.self, from: Data(parsed.payload)),
            let provider = OIDCProvider.allCases.first(where: { $0.issuer == claims.iss }),
            JWS.verify(parsed, publicKey: SandboxKeys.p256Public(keyLabel(provider))), claims.exp > now
        else { return nil }
        return (provider, claims)
    }
}
