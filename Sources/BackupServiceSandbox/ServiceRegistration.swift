import BackupCrypto
import BackupModel
import Foundation
import SandboxIdentity

extension BackupServiceEmulator {
    /// A new factor, checked and ready to store, with its FactorLookup key (without scope).
    struct Registration {
        var factor: Factor
        var lookup: LookupFactor
    }

    /// `AuthHandler::validate_factor_registration`: sync factors are keypairs, the token and its
    /// context, the factor's own proof, then the token is burned.
    func validateRegistration(
        _ authorization: Authorization, token: String, context: JSONValue, turnkeyProviderId: String?,
        isSyncFactor: Bool, _ call: Call
    ) throws(Refusal) -> Registration {
        let storage = try store()
        if isSyncFactor {
            guard case .ecKeypair = authorization else { throw .auth("invalid_sync_factor_type") }
        }
        let (payload, tokenContext) = try tokens.extract(token, expected: authorization.challengeType, now: call.now)
        guard tokenContext == context else { throw .auth("invalid_challenge_context") }
        let registration: Registration
        switch authorization {
        case .passkey(let credential, let label):
            registration = try registerPasskey(credential, label: label, payload: payload, call)
        case .oidcAccount(let oidc, let publicKey, let signature):
            guard let turnkeyProviderId else { throw .auth("missing_turnkey_provider_id") }
            let claims = try verifyOIDC(oidc, sessionKey: publicKey, call)
            try verifySignature(publicKey: publicKey, signature: signature, payload: payload)
            guard let email = claims.email else { throw .auth("missing_email") }
            let account = OIDCAccount(
                provider: oidc.provider, sub: claims.sub, maskedEmail: SandboxOIDC.mask(email) ?? "")
            registration = Registration(
                factor: newFactor(
                    .oidcAccount(OIDCAccountFactor(account: account, turnkeyProviderId: turnkeyProviderId))),
                lookup: .oidc(issuer: claims.iss, sub: claims.sub))
        case .ecKeypair(let publicKey, let signature):
            try verifySignature(publicKey: publicKey, signature: signature, payload: payload)
            registration = Registration(
                factor: newFactor(.ecKeypair(publicKey: publicKey)), lookup: .ecKeypair(publicKey: publicKey))
        }
        guard
            storage.useChallengeToken(
                hash: SHA256.hex(Array(token.utf8)), now: call.now, ttl: Self.tokenLifetimeSeconds)
        else { throw .alreadyUsed }
        return registration
    }

    func registerPasskey(_ credential: JSONValue, label: String, payload: [UInt8], _ call: Call) throws(Refusal)
        -> Registration
    {
        guard let state = try? JSONDecoder().decode([String: String].self, from: Data(payload)),
            let challenge = state["challenge"].flatMap({ Base64.decode($0, alphabet: .url) })
        else { throw .internalError }
        switch SandboxWebAuthn.verifyRegistration(credential, challenge: challenge) {
        case .failure(.invalidPayload), .failure(.prfResults): throw .webauthnInvalidPayload
        case .failure: throw .webauthn
        case .success(let stored):
            let passkey = PasskeyFactor(
                credentialId: stored.credentialId, label: label, webauthnCredential: stored.webauthnCredential,
                registration: credential)
            return Registration(
                factor: newFactor(.passkey(passkey)), lookup: .passkey(credentialId: stored.credentialId))
        }
    }

    /// A factor with a fresh v4 id, created now.
    func newFactor(_ kind: FactorKind) -> Factor {
        Factor(id: random.uuid(), createdAt: Timestamp(seconds: clock.seconds), kind: kind)
    }
}
