import Access
import BackupCrypto
import BackupModel
import ConsoleStore

/// The operator side of /reset (facts §5): hand out a challenge, then verify the user's
/// signature and wipe the backup in one transaction, with the Backup Service's error codes.
///
/// `complete` checks in the service's order — token, context, Backup Account ID, signature,
/// backup existence, then single use — first outside the transaction (so a refused request
/// never takes the write lock) and then again inside the store's one ``ConsoleStore/completeReset``
/// transaction, which re-reads the challenge, so a concurrent completion cannot slip between.
public struct ResetService: Sendable {
    /// The challenge context of a reset token.
    public static let context = "reset"

    let store: any ConsoleStore
    let clock: WallClock
    let random: any RandomSource
    let checkpoint: @Sendable (ResetCheckpoint) -> Void

    /// - Parameter checkpoint: told as `complete` passes each ``ResetCheckpoint``; a no-op by default.
    public init(
        store: any ConsoleStore, clock: WallClock = .system, random: any RandomSource = SystemRandom(),
        checkpoint: @escaping @Sendable (ResetCheckpoint) -> Void = { _ in }
    ) {
        self.store = store
        self.clock = clock
        self.random = random
        self.checkpoint = checkpoint
    }

    /// `reset begin`: a 32-byte challenge and a single-use token for one backup of the session's tenant.
    /// - Throws: `permission_denied`; `invalid_backup_account_id`; `not_found` for an unknown backup.
    public func begin(backupAccountId text: String, session: Session) throws(ConsoleError) -> ResetChallenge {
        try session.require(.resetBegin)
        let id = try BackupAccountID(text)
        try BackupAccountKey.validate(id)
        guard try store.backupExists(tenant: session.tenantName, id: id.rawValue) else {
            throw .notFound("Backup \(id) does not exist in tenant \(session.tenantName).")
        }
        let challenge = random.bytes(32)
        let token = ResetToken.generate(using: random)
        let tokenHash = try ResetToken.hash(token)
        let now = clock.seconds
        let ttl = Int64(min(max(session.tenant.policy.resetTokenTTLSeconds, 1), TenantPolicy.maxResetTokenTTLSeconds))
        let record = ResetChallengeRecord(
            tokenHash: tokenHash, tenant: session.tenantName, backupId: id.rawValue, context: Self.context,
            challenge: challenge, createdAt: now, expiresAt: now + ttl)
        try store.insertResetChallenge(
            record,
            audit: session.audit(
                "reset.begin", target: id.rawValue,
                details: [
                    "tokenHashPrefix": ResetToken.auditPrefix(ofHash: tokenHash),
                    "expiresAt": Timestamp.format(now + ttl),
                ]))
        return ResetChallenge(backupId: id, challenge: challenge, token: token, expiresAt: now + ttl)
    }

    /// `reset complete`: verify the signature over the token's challenge and wipe the backup.
    ///
    /// - Parameters:
    ///   - token: the token from `reset begin`.
    ///   - signature: standard base64 of the DER signature (`backupctl recovery sign`).
    ///   - backupAccountId: the backup the caller means to reset; when given it must be the one the
    ///     token was made for (the service's request always names it).
    /// - Throws: `invalid_reset_token`, `not_found` (unknown token or backup), `token_expired`,
    ///   `invalid_challenge_context` (another operation, backup or tenant), `invalid_backup_account_id`,
    ///   `invalid_signature`, `signature_verification_error`, `already_used`, `permission_denied`.
    ///   On any error nothing has changed.
    public func complete(
        token: SecretBytes, signature: String, backupAccountId: String? = nil, session: Session
    ) throws(ConsoleError) -> ResetResult {
        let plan = try preflight(token: token, signature: signature, backupAccountId: backupAccountId, session: session)
        checkpoint(.checked)
        let checkpoint = self.checkpoint
        let expected = plan.expected
        let wipe = try store.completeReset(
            tokenHash: plan.tokenHash, now: clock.seconds,
            verify: { (record) throws(ConsoleError) in
                try Self.checkTenant(record, session)
                try Self.check(record, expected: expected, signature: signature)
                checkpoint(.verified)
            },
            audit: { wipe in
                checkpoint(.wiped)
                return session.audit(
                    "reset.complete", target: wipe.backupId,
                    details: [
                        "tokenHashPrefix": ResetToken.auditPrefix(ofHash: plan.tokenHash),
                        "lookupRowsRemoved": String(wipe.lookupRowsRemoved),
                        "subOrgsQueued": String(wipe.turnkeySubOrgIds.count),
                    ])
            })
        checkpoint(.committed)
        return ResetResult(
            backupId: wipe.backupId, wiped: true, lookupRowsRemoved: wipe.lookupRowsRemoved,
            turnkeySubOrgIds: wipe.turnkeySubOrgIds)
    }

    /// Every check of ``complete(token:signature:backupAccountId:session:)`` except single use,
    /// without writing anything: lets a command ask for confirmation only for a request that
    /// would succeed. Single use is checked inside the transaction, as the service checks it last.
    /// - Returns: the backup the token would reset.
    public func preflight(
        token: SecretBytes, signature: String, backupAccountId: String? = nil, session: Session
    ) throws(ConsoleError) -> ResetPlan {
        try session.require(.resetComplete)
        let tokenHash = try ResetToken.hash(token)
        let expected = try backupAccountId.map { (text) throws(ConsoleError) in try BackupAccountID(text) }
        guard let challenge = try store.resetChallenge(tokenHash: tokenHash) else {
            throw .notFound("No reset challenge matches this token; begin the reset again.")
        }
        try Self.checkTenant(challenge, session)
        if clock.seconds > challenge.expiresAt { throw Self.expired() }
        try Self.check(challenge, expected: expected, signature: signature)
        guard try store.backupExists(tenant: session.tenantName, id: challenge.backupId) else {
            let used = challenge.usedAt != nil ? " (this token was already used to reset it)" : ""
            throw .notFound("Backup \(challenge.backupId) does not exist in tenant \(session.tenantName)\(used).")
        }
        return ResetPlan(backupId: challenge.backupId, tokenHash: tokenHash, expected: expected)
    }

    // MARK: - Checks, in the service's order

    /// A token from another tenant is a context mismatch, reported before anything about the
    /// token itself (expiry, use) so nothing of another tenant's state shows.
    static func checkTenant(_ challenge: ResetChallengeRecord, _ session: Session) throws(ConsoleError) {
        guard challenge.tenant == session.tenantName else {
            throw contextMismatch("it was made in another tenant, not \(session.tenantName)")
        }
    }

    /// Context (operation and backup), then the Backup Account ID, then the signature.
    static func check(
        _ challenge: ResetChallengeRecord, expected: BackupAccountID?, signature: String
    ) throws(ConsoleError) {
        guard challenge.context == context else {
            throw contextMismatch("it was made for the \"\(challenge.context.prefix(32))\" operation, not reset")
        }
        if let expected, expected.rawValue != challenge.backupId {
            throw contextMismatch("it was made for backup \(challenge.backupId), not \(expected)")
        }
        let id = try BackupAccountID(challenge.backupId)
        try BackupAccountKey.validate(id)
        try verify(signature: signature, challenge: challenge.challenge, publicKey: id.publicKey)
    }

    /// The service's signature rules: standard base64, strict DER, valid low-S ECDSA over
    /// SHA-256 of the raw challenge with the key inside the Backup Account ID.
    public static func verify(signature: String, challenge: [UInt8], publicKey: [UInt8]) throws(ConsoleError) {
        guard let der = Base64.decode(signature, alphabet: .standard, requirePadding: true), !der.isEmpty else {
            throw .invalid(
                "invalid_signature", "Invalid signature: it must be standard base64 (padded) of a DER signature.")
        }
        switch Secp256k1.verify(derSignature: der, digest: SHA256.hash(challenge), publicKey: publicKey) {
        case .valid:
            return
        case .malformedSignature:
            throw .invalid("invalid_signature", "Invalid signature: the decoded bytes are not a DER ECDSA signature.")
        case .malformedPublicKey:
            throw .invalid(
                "invalid_backup_account_id", "Invalid Backup Account ID: its key is not a point on secp256k1.")
        case .mismatch:
            throw ConsoleError(
                .verificationFailed, code: "signature_verification_error",
                "Signature verification failed: it was not made by this backup's Backup Account Key over this challenge (or it is high-S)."
            )
        }
    }

    static func contextMismatch(_ why: String) -> ConsoleError {
        ConsoleError(
            .verificationFailed, code: "invalid_challenge_context", "This reset token does not fit the request: \(why)."
        )
    }

    static func expired() -> ConsoleError {
        ConsoleError(.verificationFailed, code: "token_expired", "This reset token has expired; begin the reset again.")
    }
}
