import BackupCrypto
import BackupModel
import Foundation
import SandboxIdentity

/// The service's `AuthHandler` (BS: `src/auth.rs`): authentication of a factor for an action,
/// and validation of a new factor for registration, step by step in the service's order.
extension BackupServiceEmulator {
    /// `AuthHandler::verify`: scope rule, token, context, the factor, then the token is burned.
    /// - Returns: the backup id and its metadata (with the ETag it was read at).
    func verify(
        _ authorization: Authorization, scope: FactorScope, context: JSONValue, token: String, _ call: Call
    ) throws(Refusal) -> (backupId: String, metadata: BackupMetadata, etag: Int) {
        let storage = try store()
        // 1. Sync routes take EC keypairs only.
        if scope == .sync {
            guard case .ecKeypair = authorization else { throw .auth("invalid_authorization_type") }
        }
        // 2–3. The token and its context.
        let (payload, tokenContext) = try tokens.extract(token, expected: authorization.challengeType, now: call.now)
        guard tokenContext == context else { throw .auth("invalid_challenge_context") }
        // 4. The factor, and the backup it opens.
        let found: (String, BackupMetadata, Int)
        switch authorization {
        case .passkey(let credential, _):
            found = try authenticatePasskey(credential, payload: payload, scope: scope, storage)
        case .oidcAccount(let oidc, let publicKey, let signature):
            let claims = try verifyOIDC(oidc, sessionKey: publicKey, call)
            try verifySignature(publicKey: publicKey, signature: signature, payload: payload)
            let pk = FactorLookupKey(scope: scope, factor: .oidc(issuer: claims.iss, sub: claims.sub)).rawValue
            found = try resolve(pk, storage) { metadata in
                metadata.factors.contains { factor in
                    if case .oidcAccount(let account) = factor.kind { return account.sub == claims.sub }
                    return false
                }
            }
        case .ecKeypair(let publicKey, let signature):
            try verifySignature(publicKey: publicKey, signature: signature, payload: payload)
            let pk = FactorLookupKey(scope: scope, factor: .ecKeypair(publicKey: publicKey)).rawValue
            found = try resolve(pk, storage) { metadata in
                (scope == .sync ? metadata.syncFactors : metadata.factors).contains {
                    $0.kind == .ecKeypair(publicKey: publicKey)
                }
            }
        }
        // 5. Burn the token.
        guard
            storage.useChallengeToken(
                hash: SHA256.hex(Array(token.utf8)), now: call.now, ttl: Self.tokenLifetimeSeconds)
        else { throw .alreadyUsed }
        return found
    }

    /// The FactorLookup row, then the metadata, then the metadata's word on the factor.
    func resolve(_ pk: String, _ storage: ServiceStorage, authorized: (BackupMetadata) -> Bool) throws(Refusal)
        -> (String, BackupMetadata, Int)
    {
        guard let backupId = storage.lookupBackup(pk) else { throw .auth("backup_untraceable") }
        guard let (metadata, etag) = storage.getMetadata(backupId) else { throw .backupMissing }
        guard authorized(metadata) else { throw .unauthorizedFactor }
        return (backupId, metadata, etag)
    }

    func authenticatePasskey(_ credential: JSONValue, payload: [UInt8], scope: FactorScope, _ storage: ServiceStorage)
        throws(Refusal) -> (String, BackupMetadata, Int)
    {
        guard let state = try? JSONDecoder().decode([String: String].self, from: Data(payload)),
            let challenge = state["challenge"].flatMap({ Base64.decode($0, alphabet: .url) })
        else { throw .internalError }
        let claimed: String
        switch SandboxWebAuthn.claimedCredentialId(credential) {
        case .success(let id): claimed = id
        case .failure(.prfResults): throw .auth("webauthn_prf_results_not_allowed")
        case .failure: throw .webauthnInvalidPayload
        }
        let pk = FactorLookupKey(scope: scope, factor: .passkey(credentialId: claimed)).rawValue
        guard let backupId = storage.lookupBackup(pk) else { throw .auth("backup_untraceable") }
        guard let (metadata, etag) = storage.getMetadata(backupId) else { throw .backupMissing }
        let stored = Self.passkeys(metadata)
        guard !stored.isEmpty else { throw .unauthorizedFactor }
        switch SandboxWebAuthn.verifyAssertion(credential, challenge: challenge, stored: stored) {
        case .success: return (backupId, metadata, etag)
        case .failure(.invalidPayload): throw .webauthnInvalidPayload
        case .failure: throw .webauthn
        }
    }

    /// The passkeys of a backup as stored credentials (their `webauthnCredential`).
    static func passkeys(_ metadata: BackupMetadata) -> [SandboxWebAuthn.StoredCredential] {
        metadata.factors.compactMap { factor in
            guard case .passkey(let passkey) = factor.kind else { return nil }
            return SandboxWebAuthn.StoredCredential(webauthnCredential: passkey.webauthnCredential)
        }
    }

    /// `OidcTokenVerifier::verify_token`: the token, its nonce against the session key, then
    /// the nonce is burned (before the challenge signature is checked, as in the service).
    func verifyOIDC(_ oidc: OIDCTokenInput, sessionKey: String, _ call: Call) throws(Refusal) -> SandboxOIDC.Claims {
        let storage = try store()
        switch SandboxOIDC.verify(
            token: oidc.token, provider: oidc.provider, requestedAudience: oidc.aud, sessionPublicKeyBase64: sessionKey,
            now: call.now)
        {
        case .failure(.invalidAud): throw .bad("oidc_token_invalid_aud", "Invalid aud provided.")
        case .failure(.parse): throw .bad("oidc_token_parse_error", "Failed to parse OIDC token.")
        case .failure(.verification): throw .bad("oidc_token_verification_error", "Failed to verify OIDC token.")
        case .failure(.invalidNonce(let message)): throw .bad("oidc_token_invalid_nonce", message)
        case .success(let claims):
            guard let nonce = claims.nonce else {
                throw .bad("oidc_token_parse_error", "OIDC token is missing required nonce claim.")
            }
            let provider = oidc.provider == .google ? "Google" : "Apple"
            guard storage.useOIDCNonce(key: SHA256.hex(Array("\(provider):\(nonce)".utf8)), now: call.now) else {
                throw .alreadyUsed
            }
            return claims
        }
    }

    /// `verify_signature`: P-256 ECDSA-SHA-256 over the raw payload, with the service's errors
    /// (the first 50 characters of each).
    func verifySignature(publicKey: String, signature: String, payload: [UInt8]) throws(Refusal) {
        guard !publicKey.isEmpty, !signature.isEmpty, !payload.isEmpty else {
            throw .signature("Public key, signature or trusted payload is empty")
        }
        guard let key = Base64.decode(publicKey, alphabet: .standard, requirePadding: true) else {
            throw .signature("Failed to decode a value from base64: \(Self.base64Problem(publicKey))")
        }
        guard key.count == 65, P256.isValidPublicKey(key) else {
            throw .signature("Failed to create verifying key from SEC1 bytes")
        }
        guard let der = Base64.decode(signature, alphabet: .standard, requirePadding: true) else {
            throw .signature("Failed to decode a value from base64: \(Self.base64Problem(signature))")
        }
        guard der.count <= 72 else {
            throw .signature(
                "Failed to create signature from DER bytes: Invalid signature length. Received \(der.count) bytes")
        }
        switch P256.verify(derSignature: der, message: payload, publicKey: key) {
        case .valid: return
        case .malformedSignature: throw .signature("Failed to create signature from DER bytes: signature error")
        case .malformedPublicKey: throw .signature("Failed to create verifying key from SEC1 bytes")
        case .mismatch: throw .signature("Signature verification failed")
        }
    }

    /// The base64 crate's reason for a decoding failure (only its start survives the 50-character cut).
    static func base64Problem(_ text: String) -> String {
        let alphabet = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=".utf8)
        if let index = text.utf8.firstIndex(where: { !alphabet.contains($0) }) {
            let offset = text.utf8.distance(from: text.utf8.startIndex, to: index)
            return "Invalid symbol \(text.utf8[index]), offset \(offset)."
        }
        return text.utf8.count % 4 == 1 ? "Invalid input length." : "Invalid padding"
    }
}
