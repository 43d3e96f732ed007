import BackupCrypto
import BackupModel
import Foundation
import SandboxIdentity

extension BackupServiceEmulator {
    static let turnkeyActivityType = "ACTIVITY_TYPE_CREATE_API_KEYS_V2"
    static let turnkeyActivityTTLMillis: Int64 = 5 * 60 * 1000

    /// `POST /v1/add-factor` (BS: `add_factor.rs`): only an existing passkey (with the Turnkey
    /// activity it signed, carrying the existing factor's challenge) adding an OIDC account.
    /// The existing factor's token is not burned (the service's `TODO / FIXME`); the new one is.
    func addFactor(_ call: Call) throws(Refusal) -> Answer {
        let storage = try store()
        let request = try json(ServiceRequests.AddFactor.self, call)
        // 1. The existing factor.
        guard case .passkey(let credential, _) = request.existingFactorAuthorization else {
            throw .bad("not_supported", "Not supported")
        }
        guard let activity = request.existingFactorTurnkeyActivity else {
            throw .bad("missing_turnkey_activity", "Turnkey activity is missing")
        }
        let credentialId: String
        switch SandboxWebAuthn.claimedCredentialId(credential) {
        case .success(let id): credentialId = id
        case .failure(.prfResults): throw .auth("webauthn_prf_results_not_allowed")
        case .failure: throw .webauthnInvalidPayload
        }
        let pk = FactorLookupKey(scope: .main, factor: .passkey(credentialId: credentialId)).rawValue
        guard let backupId = storage.lookupBackup(pk) else { throw .auth("backup_untraceable") }
        guard let (metadata, _) = storage.getMetadata(backupId), storage.getBlob(backupId) != nil else {
            throw .backupMissing
        }
        guard let reference = Self.passkeys(metadata).first(where: { $0.credentialId == credentialId }) else {
            throw .auth("backup_untraceable")
        }
        try verifyActivityStamp(credential, activity: activity, publicKey: reference.publicKey)
        try verifyActivityParameters(activity, metadata: metadata, call)
        guard let activityJSON = FastJSON.parse(Array(activity.utf8)) else {
            throw .bad("invalid_turnkey_activity", "Provided Turnkey activity is invalid")
        }
        guard let serviceChallenge = activityJSON["metadata"]?["challenge"]?.stringValue else {
            throw .bad("invalid_turnkey_activity", "Turnkey activity is missing server challenge")
        }
        let (trusted, context) = try tokens.extract(
            request.existingFactorChallengeToken, expected: "PASSKEY", now: call.now)
        guard Base64.encode(trusted) == serviceChallenge else {
            throw .bad("invalid_challenge", "Challenge mismatch with Turnkey activity")
        }
        guard context["kind"]?.stringValue == "ADDFACTOR",
            let expectedToken = context["newFactorType"]?["oidcToken"]?.stringValue
        else { throw .bad("invalid_challenge_context", "Challenge context mismatch") }
        // 2. The new factor.
        guard case .oidcAccount(let oidc, _, _) = request.newFactorAuthorization else {
            throw .bad("invalid_new_factor_authorization_type", "Invalid new factor authorization type")
        }
        guard oidc.token == expectedToken else { throw .bad("oidc_token_mismatch", "OIDC Token mismatch") }
        let registration = try validateRegistration(
            request.newFactorAuthorization, token: request.newFactorChallengeToken,
            context: ChallengeContext.addFactorByNewFactor, turnkeyProviderId: request.turnkeyProviderId,
            isSyncFactor: false, call)
        // 3. The lookup row first, then the metadata; roll the row back only on a definite non-write.
        let newKey = FactorLookupKey(scope: .main, factor: registration.lookup).rawValue
        guard
            try io({ () throws(ConsoleError) in
                try storage.insertLookup(newKey, backupId: backupId, nowMillis: call.nowMillis)
            })
        else { throw .factorAlreadyExists }
        switch addFactorToMetadata(
            backupId: backupId, factor: registration.factor, scope: .main, key: request.encryptedBackupKey, storage)
        {
        case .inserted(let updated):
            return exportedAnswer(["factorId": .string(registration.factor.id)], metadataKey: "backupMetadata", updated)
        case .notInserted(let refusal):
            try io { () throws(ConsoleError) in try storage.deleteLookup(newKey) }
            throw refusal
        case .unknown(let refusal):
            throw refusal
        }
    }

    /// `verify_turnkey_activity_webauthn_stamp`: the assertion's challenge is the activity's
    /// SHA-256 in hex, signed by the backup's passkey.
    func verifyActivityStamp(_ credential: JSONValue, activity: String, publicKey: [UInt8]) throws(Refusal) {
        func fail(_ message: String) -> Refusal { .bad("turnkey_activity_error", message) }
        let response = credential["response"]
        guard let clientData = response?["clientDataJSON"]?.stringValue.flatMap({ Base64.decode($0, alphabet: .url) }),
            let data = FastJSON.parse(Array(clientData)),
            let sent = data["challenge"]?.stringValue.flatMap({ Base64.decode($0, alphabet: .url) }),
            let authenticatorData = response?["authenticatorData"]?.stringValue.flatMap({
                Base64.decode($0, alphabet: .url)
            })
        else { throw fail("Failed to decode assertion components") }
        let expected = Array(SHA256.hex(Array(activity.utf8)).utf8)
        guard sent == expected else {
            throw fail("Mismatch between challenge in the assertion and the hash of activity JSON")
        }
        guard let signature = response?["signature"]?.stringValue.flatMap({ Base64.decode($0, alphabet: .url) }) else {
            throw fail("Failed to decode signature from base64url")
        }
        guard JWS.derToRaw(signature) != nil else { throw fail("Failed to convert signature format") }
        guard
            P256.verify(
                derSignature: signature, message: authenticatorData + SHA256.hash(clientData), publicKey: publicKey)
                == .valid
        else { throw fail("Signature verification failed") }
    }

    /// `verify_turnkey_activity_parameters`: the organization (when the backup has a Turnkey
    /// account), the type `ACTIVITY_TYPE_CREATE_API_KEYS_V2`, and a timestamp at most 5 minutes old.
    func verifyActivityParameters(_ activity: String, metadata: BackupMetadata, _ call: Call) throws(Refusal) {
        func fail(_ message: String) -> Refusal { .bad("turnkey_activity_error", message) }
        guard let json = FastJSON.parse(Array(activity.utf8)) else {
            throw fail("Failed to parse activity JSON")
        }
        guard let organization = json["organizationId"]?.stringValue else {
            throw fail("Missing organizationId field in activity JSON")
        }
        if let expected = metadata.turnkeySubOrgIds.first, organization != expected {
            throw fail("organizationId does not match expected Turnkey account ID")
        }
        guard let type = json["type"]?.stringValue else { throw fail("Missing type field in activity JSON") }
        guard type == Self.turnkeyActivityType else { throw fail("Activity type does not match expected type") }
        guard let stamp = json["timestampMs"]?.stringValue else {
            throw fail("Missing timestampMs field in activity JSON")
        }
        guard let millis = Int64(stamp) else { throw fail("Invalid timestamp format in activity JSON") }
        guard call.nowMillis - millis <= Self.turnkeyActivityTTLMillis else {
            throw fail("Activity has expired based on TTL")
        }
    }

    /// `POST /v1/delete-factor` (attestation; authorized by a SYNC factor): the factor leaves the
    /// metadata first (the last main factor deletes the backup), then its FactorLookup row (or
    /// all the backup's rows). A failure between the two leaves the row behind.
    func deleteFactor(_ call: Call) throws(Refusal) -> Answer {
        try attest(call)
        let storage = try store()
        let request = try json(ServiceRequests.DeleteFactor.self, call)
        if request.scope == .sync, request.encryptionKey != nil {
            throw .bad(
                "encryption_key_not_allowed", "Removing an encryption key is not allowed when removing sync factors")
        }
        let (backupId, metadata, _) = try verify(
            request.authorization, scope: .sync, context: ChallengeContext.deleteFactor(request.factorId),
            token: request.challengeToken, call)
        let list = request.scope == .main ? metadata.factors : metadata.syncFactors
        guard let factor = list.first(where: { $0.id == request.factorId }) else {
            throw .bad("factor_not_found", "Factor not found in backup")
        }
        let remaining = try removeFactor(
            backupId: backupId, factorId: request.factorId, scope: request.scope,
            key: request.encryptionKey, storage)
        try call.failIf("lookup-delete")
        if let remaining {
            if let pk = factor.lookupKey(scope: request.scope)?.rawValue {
                try io { () throws(ConsoleError) in try storage.deleteLookup(pk) }
            }
            return exportedAnswer(["backupDeleted": .bool(false)], metadataKey: "backupMetadata", remaining)
        }
        try io { () throws(ConsoleError) in
            for pk in storage.lookupKeys(backupId: backupId) { try storage.deleteLookup(pk) }
        }
        return .raw(200, Array(#"{"backupDeleted":true,"backupMetadata":null}"#.utf8))
    }

    /// `remove_factor` / `remove_sync_factor`; `nil` when the last main factor went and the
    /// backup with it.
    func removeFactor(
        backupId: String, factorId: String, scope: FactorScope, key: EncryptionKey?, _ storage: ServiceStorage
    ) throws(Refusal) -> BackupMetadata? {
        guard let current = storage.getMetadata(backupId) else { throw .backupNotFound }
        var metadata = current.metadata
        if scope == .sync {
            guard let index = metadata.syncFactors.firstIndex(where: { $0.id == factorId }) else {
                throw .factorNotFound
            }
            metadata.syncFactors.remove(at: index)
        } else {
            guard let index = metadata.factors.firstIndex(where: { $0.id == factorId }) else { throw .factorNotFound }
            metadata.factors.remove(at: index)
            if metadata.factors.isEmpty {
                try io { () throws(ConsoleError) in
                    try storage.deleteBlob(backupId)
                    try storage.deleteMetadata(backupId)
                }
                return nil
            }
            if let key {
                guard let keyIndex = metadata.keys.firstIndex(of: key) else { throw .encryptionKeyNotFound }
                metadata.keys.remove(at: keyIndex)
                let left = metadata.keys.contains { $0.tag == key.tag }
                let needs = metadata.factors.contains { factor in
                    switch (key, factor.kind) {
                    case (.prf, .passkey), (.icloud, .ecKeypair), (.turnkey, .oidcAccount): true
                    default: false
                    }
                }
                if !left && needs { throw .factorOrphaned }
            }
        }
        guard try io({ () throws(ConsoleError) in try storage.putMetadata(metadata, ifMatch: current.etag) }) else {
            throw .internalError
        }
        return metadata
    }
}
