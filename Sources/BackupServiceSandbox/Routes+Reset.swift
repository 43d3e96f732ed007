import BackupCrypto
import BackupModel
import BackupService
import Foundation

extension BackupServiceEmulator {
    /// `/v1/reset`, steps 1–8 of the service's order (step 0 is the framework's parse): token,
    /// context, key and signature, existence (HEAD of the blob), single use, then the deletes.
    func reset(_ call: Call) async throws(Refusal) -> Answer {
        let request = try json(ServiceRequests.Reset.self, call)
        if faults.takeDropBefore() { return ServiceAnswer(status: 0, contentType: nil, body: [], drop: true) }
        let backupId = request.backupAccountId
        // 1. The token: authentic, of the keypair type, not expired.
        let (challenge, context) = try tokens.extract(request.challengeToken, expected: "KEYPAIR", now: call.now)
        // 2. The context binds this operation and this backup.
        guard context == ChallengeContext.reset(backupId) else {
            throw .bad(
                "invalid_challenge_context",
                "Challenge token was not created for reset operation or backup_account_id mismatch.")
        }
        // 3. The id is a point; the signature is base64 DER and verifies over the challenge.
        let key = BackupAccountID.publicKeyBytes(backupId)
        guard key.first == 0x02 || key.first == 0x03 else {
            throw .bad("invalid_backup_account_id", "Failed to parse compressed public key from backup_account_id.")
        }
        guard Secp256k1.isValidPublicKey(key) else {
            throw .bad("invalid_backup_account_id", "Failed to create verifying key from backup_account_id.")
        }
        // Rust's `STANDARD` engine: canonical padding is required.
        guard let der = Base64.decode(request.signature, alphabet: .standard, requirePadding: true) else {
            throw .bad("invalid_signature", "Signature must be valid base64.")
        }
        switch Secp256k1.verify(derSignature: der, digest: SHA256.hash(challenge), publicKey: key) {
        case .valid: break
        case .malformedSignature: throw .bad("invalid_signature", "Failed to parse signature as DER format.")
        case .malformedPublicKey:
            throw .bad("invalid_backup_account_id", "Failed to create verifying key from backup_account_id.")
        case .mismatch: throw .bad("signature_verification_error", "Signature verification failed.")
        }
        do {
            // 4. The backup exists (HEAD of its blob).
            guard try await backend.blobExists(backupId: backupId) else { throw Refusal.notFound }
            // 5. Single use; 6–7. blob, metadata, lookup rows.
            guard
                try await backend.consume(
                    tokenHash: SHA256.hex(Array(request.challengeToken.utf8)), backupId: backupId, now: call.now)
            else { throw Refusal.alreadyUsed }
        } catch let refusal as Refusal {
            throw refusal
        } catch {
            throw .internalError
        }
        if faults.takeDrop() { return ServiceAnswer(status: 204, contentType: nil, body: [], drop: true) }
        return .noContent
    }

    /// A token of any type for the reset context, for tests of the type and expiry checks.
    public func sealForTests(type: String, backupAccountId: String, expires: Int64) -> String {
        tokens.seal(
            .init(
                payload: Base64.encode([UInt8](repeating: 0, count: 32)), challenge_type: type,
                challenge_context: ChallengeContext.reset(backupAccountId), iat: expires - Self.tokenLifetimeSeconds,
                nbf: expires - Self.tokenLifetimeSeconds, exp: expires))
    }
}

extension BackupAccountID {
    /// The 33 bytes after the prefix of an id that already passed the shape check.
    static func publicKeyBytes(_ id: String) -> [UInt8] {
        Hex.decode(id.dropFirst(prefix.count)) ?? []
    }
}
