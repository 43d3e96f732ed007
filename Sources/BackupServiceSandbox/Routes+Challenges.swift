import BackupCrypto
import BackupModel
import BackupService
import Foundation
import SandboxIdentity

extension BackupServiceEmulator {
    /// The generic keypair challenge: 32 random bytes, `{"challenge": base64, "token"}`.
    func keypairChallenge(_ call: Call, _ context: JSONValue) throws(Refusal) -> Answer {
        _ = try json(ServiceRequests.Empty.self, call)
        return keypairChallengeAnswer(context, call)
    }

    func keypairChallengeAnswer(_ context: JSONValue, _ call: Call) -> Answer {
        let challenge = random.bytes(32)
        let token = tokens.seal(type: "KEYPAIR", payload: challenge, context: context, now: call.now)
        return .json(200, BackupServiceWire.ChallengeResponse(challenge: Base64.encode(challenge), token: token))
    }

    /// `/v1/delete-factor/challenge/keypair {"factorId"}`: the context binds the factor.
    func deleteFactorChallenge(_ call: Call) throws(Refusal) -> Answer {
        let request = try json(ServiceRequests.DeleteFactorChallenge.self, call)
        return keypairChallengeAnswer(ChallengeContext.deleteFactor(request.factorId), call)
    }

    /// `/v1/reset/challenge/keypair`: does not check that the backup exists.
    func resetChallenge(_ call: Call) throws(Refusal) -> Answer {
        let request = try json(ServiceRequests.ResetChallenge.self, call)
        return keypairChallengeAnswer(ChallengeContext.reset(request.backupAccountId), call)
    }

    /// `/v1/create/challenge/passkey {"name","displayName","platform"}`: a WebAuthn creation
    /// challenge; the registration state (challenge and user id) rides in the token.
    func createChallengePasskey(_ call: Call) throws(Refusal) -> Answer {
        let request = try json(ServiceRequests.PasskeyChallenge.self, call)
        let challenge = random.bytes(32)
        let userId = random.bytes(16)
        let state = JWS.json([
            "challenge": Base64.encode(challenge, alphabet: .url, padding: false),
            "userId": Base64.encode(userId, alphabet: .url, padding: false),
        ])
        let token = tokens.seal(type: "PASSKEY", payload: state, context: ChallengeContext.create, now: call.now)
        let creation = SandboxWebAuthn.creationChallenge(
            challenge: challenge, userId: userId, name: request.name, displayName: request.displayName)
        return .raw(200, SortedJSON.bytes(.object(["challenge": creation, "token": .string(token)])))
    }

    /// `/v1/{retrieve,verify-factor}/challenge/passkey`: no body is read; a discoverable
    /// authentication challenge.
    func discoverableChallenge(_ call: Call, _ context: JSONValue) throws(Refusal) -> Answer {
        let challenge = random.bytes(32)
        let state = JWS.json(["challenge": Base64.encode(challenge, alphabet: .url, padding: false)])
        let token = tokens.seal(type: "PASSKEY", payload: state, context: context, now: call.now)
        let request = SandboxWebAuthn.requestChallenge(challenge: challenge)
        return .raw(200, SortedJSON.bytes(.object(["challenge": request, "token": .string(token)])))
    }

    /// `/v1/add-factor/challenge {"newFactor":{"kind":"OIDC_ACCOUNT","oidcToken"}}`: a passkey
    /// token for the existing factor (its context carries the new factor's token) and a keypair
    /// token for the new factor.
    func addFactorChallenge(_ call: Call) throws(Refusal) -> Answer {
        let request = try json(ServiceRequests.AddFactorChallenge.self, call)
        let existing = random.bytes(32)
        let existingToken = tokens.seal(
            type: "PASSKEY", payload: existing, context: ChallengeContext.addFactor(oidcToken: request.oidcToken),
            now: call.now)
        let new = random.bytes(32)
        let newToken = tokens.seal(
            type: "KEYPAIR", payload: new, context: ChallengeContext.addFactorByNewFactor, now: call.now)
        return .json(
            200,
            [
                "existingFactorChallenge": Base64.encode(existing), "existingFactorToken": existingToken,
                "newFactorChallenge": Base64.encode(new), "newFactorToken": newToken,
            ])
    }

    func health(_ call: Call) -> Answer {
        // `rev` is an explicit null (no GIT_REV), as the service writes it.
        .raw(200, Array(#"{"rev":null,"semver":"\#(Self.semver)","status":"ok"}"#.utf8))
    }
}
