import Access
import BackupCrypto
import BackupModel
import BackupService
import ConsoleStore

/// The operator side of /reset, through the tenant's Backup Service (its `/v1/reset` API).
///
/// `begin` asks `/v1/backup/status` (a backup the service does not have stops there) and then
/// `/v1/reset/challenge/keypair`, and keeps a ledger entry (the token's hash, the backup, the
/// challenge) so `complete` knows which backup a token is for. `complete` sends `/v1/reset`
/// once; only on its `204` — or, when the answer was lost, on `/v1/backup/status` answering
/// `not_found` — does the console audit the reset, delete its own copy and queue the backup's
/// Turnkey sub-orgs, in one local transaction. Every refusal relays the service's code and is
/// audited as a refusal, never as the reset.
public struct ResetService: Sendable {
    /// The challenge context of a reset token.
    public static let context = "reset"

    let store: any LiveTenantStore
    let service: BackupServiceClient
    let clock: WallClock
    let checkpoint: @Sendable (ResetCheckpoint) -> Void

    /// - Parameter checkpoint: told as `complete` passes each ``ResetCheckpoint``; a no-op by default.
    public init(
        store: any LiveTenantStore, service: BackupServiceClient, clock: WallClock = .system,
        checkpoint: @escaping @Sendable (ResetCheckpoint) -> Void = { _ in }
    ) {
        self.store = store
        self.service = service
        self.clock = clock
        self.checkpoint = checkpoint
    }

    /// `reset begin`: the live backup's main factors, then a challenge and its single-use token.
    /// - Throws: `permission_denied`; `invalid_backup_account_id`; the service's `not_found` when
    ///   it has no such backup; exit-2 errors when the service fails or cannot be reached.
    public func begin(backupAccountId text: String, session: Session) async throws(ConsoleError) -> ResetChallenge {
        try await session.require(.resetBegin)
        let id = try BackupAccountID(typed: text)
        try BackupAccountKey.validate(id)
        let status: BackupServiceWire.StatusResponse
        let issued: (challenge: [UInt8], token: SecretBytes)
        do throws(BackupServiceError) {
            status = try await service.status(backupId: id.rawValue)
            issued = try await service.resetChallenge(backupAccountId: id.rawValue)
        } catch {
            throw error.consoleError.context("Backup Service at \(service.baseURL)")
        }
        let tokenHash = try ResetToken.hash(issued.token)
        let now = clock.seconds
        let expiresAt = now + Int64(TenantPolicy.maxResetTokenTTLSeconds)
        let record = ResetChallengeRecord(
            tokenHash: tokenHash, tenant: session.tenantName, backupId: id.rawValue, context: Self.context,
            challenge: issued.challenge, createdAt: now, expiresAt: expiresAt)
        try await store.insertResetChallenge(
            record,
            audit: session.audit(
                "reset.begin", target: id.rawValue,
                details: [
                    "tokenHashPrefix": ResetToken.auditPrefix(ofHash: tokenHash),
                    "expiresAt": Timestamp.format(expiresAt), "liveMainFactors": "\(status.factors.count)",
                ]))
        return ResetChallenge(
            backupId: id, challenge: issued.challenge, token: issued.token, expiresAt: expiresAt,
            factors: status.factors)
    }

    /// The backup a token is for, from this console's ledger, checked against the tenant and
    /// the backup the caller names; nothing is sent or written.
    /// - Throws: `invalid_reset_token`; `invalid_challenge_context` for a token of another
    ///   tenant or backup; `unknown_reset_token` for a token this console did not issue when no
    ///   backup is named; `permission_denied`.
    public func plan(token: SecretBytes, backupAccountId: String? = nil, session: Session) async throws(ConsoleError)
        -> ResetPlan
    {
        try await session.require(.resetComplete)
        let tokenHash = try ResetToken.hash(token)
        let expected = try backupAccountId.map { (text) throws(ConsoleError) in try BackupAccountID(typed: text) }
        guard let entry = try await store.resetChallenge(tokenHash: tokenHash) else {
            guard let expected else {
                throw ConsoleError(
                    .notFound, code: "unknown_reset_token",
                    "This console did not issue this reset token; pass --backup-account-id to send it to the Backup Service anyway."
                )
            }
            return ResetPlan(backupId: expected.rawValue, tokenHash: tokenHash, fromLedger: false, sentBefore: false)
        }
        guard entry.tenant == session.tenantName else {
            throw Self.contextMismatch("it was made in another tenant, not \(session.tenantName)")
        }
        if let expected, expected.rawValue != entry.backupId {
            throw Self.contextMismatch("it was made for backup \(entry.backupId), not \(expected)")
        }
        return ResetPlan(
            backupId: entry.backupId, tokenHash: tokenHash, fromLedger: true,
            sentBefore: entry.sentAt != nil && entry.usedAt == nil)
    }

    /// `reset complete`: send `/v1/reset` and, on success only, finish the local part.
    ///
    /// - Throws: the service's code (`jwt_error`, `invalid_challenge_context`, `invalid_signature`,
    ///   `signature_verification_error`, `not_found`, `already_used`, …) with exit 1;
    ///   `reset_not_applied` (exit 2) when the answer was lost and `status` shows the backup's
    ///   metadata is still there (the reset did not happen, or stopped part-way); `reset_outcome_unknown` (exit 2) when even `status` fails. On any error the
    ///   console's data is unchanged apart from the audited refusal.
    public func complete(
        token: SecretBytes, signature: String, backupAccountId: String? = nil, session: Session
    ) async throws(ConsoleError) -> ResetResult {
        let plan = try await plan(token: token, backupAccountId: backupAccountId, session: session)
        let signature = signature.trimmingCharacters(in: .whitespacesAndNewlines)
        guard (1...512).contains(signature.utf8.count) else {
            throw .invalid("invalid_signature", "Invalid signature: expected the base64 text `recovery sign` printed.")
        }
        let backup = try await store.backup(tenant: session.tenantName, id: plan.backupId)
        let subOrgs = backup?.metadata.turnkeySubOrgIds ?? []
        // Counted before the call: on a sandbox tenant the service's delete takes them first.
        let lookupRows = try await store.lookupRows(tenant: session.tenantName, backupId: plan.backupId).count
        // One sender at a time: another console or server sending this token now is refused, so
        // its in-flight send is never taken for a lost earlier one of ours.
        let holder = ProcessHolder.name(session.operatorName.rawValue)
        let sentBefore =
            plan.fromLedger ? try await claimSend(plan, subOrgs: subOrgs, holder: holder, session) : false
        checkpoint(.checked)
        var resolvedBy: String?
        var refused = false
        do throws(ConsoleError) {
            do throws(BackupServiceError) {
                try await service.reset(backupAccountId: plan.backupId, signature: signature, token: token)
            } catch  where error.outcomeUnknown {
                try await resolveLostAnswer(plan, lost: "its answer was lost (\(error.message))", session)
                resolvedBy = "status"
            } catch  where error.serviceCode == "not_found" && sentBefore {
                // An earlier send of this token was never answered (its answer lost, or a console
                // killed after it): the backup being gone now is that reset. Confirm with status.
                try await resolveLostAnswer(
                    plan, lost: "the service answered not_found to a token this console had sent before", session)
                resolvedBy = "status"
            } catch {
                refused = error.definiteRefusal
                try await refuse(plan, await explained(error, plan), session)
            }
        } catch {
            // A send the service refused did nothing there: unless an earlier send is still
            // unanswered, the ledger forgets it, so a later not_found is never taken for our reset.
            if plan.fromLedger {
                try? await store.releaseResetSend(
                    tokenHash: plan.tokenHash, holder: holder, unsent: refused && !sentBefore)
            }
            throw error
        }
        checkpoint(.verified)
        var details = [
            "tokenHashPrefix": ResetToken.auditPrefix(ofHash: plan.tokenHash), "via": "backup_service",
        ]
        if let resolvedBy { details["resolvedBy"] = resolvedBy }
        // The `wiped` checkpoint fires inside the store's transaction (the shared rules' StoreCheckpoint.resetWiped, on every backend).
        let wipe = try await store.recordServiceReset(
            tenant: session.tenantName, tokenHash: plan.fromLedger ? plan.tokenHash : nil, backupId: plan.backupId,
            subOrgIds: subOrgs, now: clock.seconds,
            audit: ResetAuditDraft(
                session.audit("reset.complete", target: plan.backupId, details: details), lookupRowsAtLeast: lookupRows)
        )
        checkpoint(.committed)
        return ResetResult(
            backupId: wipe.backupId, wiped: true, lookupRowsRemoved: max(wipe.lookupRowsRemoved, lookupRows),
            turnkeySubOrgIds: wipe.turnkeySubOrgIds, resolvedBy: resolvedBy)
    }

    /// How long a send may hold its ledger entry before another console may send the token.
    static let sendClaimSeconds: Int64 = 120

    /// Claims the sending of the ledger entry; a claim whose holder was a process on this host
    /// that is gone (killed mid-send) is taken over at once.
    /// - Returns: whether an earlier send was never confirmed.
    /// - Throws: `reset_in_progress` (audited as a refusal) while another sender holds it.
    private func claimSend(_ plan: ResetPlan, subOrgs: [String], holder: String, _ session: Session)
        async throws(ConsoleError) -> Bool
    {
        let now = clock.seconds
        var claim = try await store.claimResetSend(
            tokenHash: plan.tokenHash, subOrgIds: subOrgs, holder: holder, now: now, until: now + Self.sendClaimSeconds,
            takeOver: nil)
        if case .inFlight(let other, _) = claim, ProcessHolder.deadLocalPid(other) != nil {
            claim = try await store.claimResetSend(
                tokenHash: plan.tokenHash, subOrgIds: subOrgs, holder: holder, now: now,
                until: now + Self.sendClaimSeconds, takeOver: other)
        }
        switch claim {
        case .claimed(let sentBefore):
            return sentBefore
        case .inFlight(_, let until):
            try await refuse(
                plan,
                ConsoleError(
                    .conflict, code: "reset_in_progress",
                    "Another `reset complete` of this token is being sent to the Backup Service right now (by another console or server); it decides this reset. Check `show \(plan.backupId)` in a moment. If that console was killed, its claim lapses at \(Timestamp.format(until))."
                ), session)
        }
    }

    /// The service's refusal as the operator reads it. `not_found` from `/v1/reset` means the
    /// service found no sealed blob (it checks the blob, not the metadata): `/v1/backup/status`
    /// tells a backup that is gone from one the service cannot reset.
    private func explained(_ error: BackupServiceError, _ plan: ResetPlan) async -> ConsoleError {
        let base = error.consoleError
        if case .service(let status, _) = error.kind, (500..<600).contains(status) {
            // The service's deletes are not atomic: a failure after it burned the token answers
            // 500 with the backup possibly half deleted.
            return ConsoleError(
                base.kind, code: base.code,
                "\(base.message) The service may have stopped part-way through the reset of \(plan.backupId) (the token burned, the sealed blob deleted); nothing was changed here. Run `reset complete` again with the same token: not_found is then resolved through /v1/backup/status, already_used means begin a new reset."
            )
        }
        guard error.serviceCode == "not_found" else { return base }
        do throws(BackupServiceError) {
            _ = try await service.status(backupId: plan.backupId)
            return ConsoleError(
                base.kind, code: base.code,
                "The Backup Service answered not_found to the reset of \(plan.backupId), yet /v1/backup/status still finds its metadata: the service checks the sealed blob, and this backup has none, so the service cannot reset it. Nothing was changed; escalate to the Backup Service team."
            )
        } catch  where error.serviceCode == "not_found" {
            return ConsoleError(
                base.kind, code: base.code,
                "The Backup Service has no backup \(plan.backupId) (deleted, or reset with another token); this reset was not applied and nothing was changed here. `show \(plan.backupId)` shows the console's copy, which the next snapshot import retires."
            )
        } catch {
            return base
        }
    }

    /// The answer to `/v1/reset` never arrived: ask `/v1/backup/status`. `not_found` means the
    /// reset happened (return, so the local part runs); the backup still there means it did not.
    private func resolveLostAnswer(_ plan: ResetPlan, lost: String, _ session: Session) async throws(ConsoleError) {
        do throws(BackupServiceError) {
            _ = try await service.status(backupId: plan.backupId)
        } catch  where error.serviceCode == "not_found" {
            return
        } catch {
            try await refuse(
                plan,
                ConsoleError(
                    .remote, code: "reset_outcome_unknown",
                    "The outcome of the reset of \(plan.backupId) is unknown: \(lost), and /v1/backup/status failed too (\(error.message)). Nothing was changed here; run `reset complete` again with the same token once the service answers: it will say not_found if the reset went through."
                ), session)
        }
        try await refuse(
            plan,
            ConsoleError(
                .remote, code: "reset_not_applied",
                "The reset of \(plan.backupId) is not done: \(lost), and /v1/backup/status still finds the backup's metadata. Nothing was changed here. The service may have failed part-way (it deletes the sealed blob before the metadata and the lookup rows, and those deletes are not atomic), so the blob may already be gone. Run `reset complete` again with the same token: already_used means the token was burned, begin a new reset; not_found means the blob is gone but its metadata remains, which the service cannot reset: escalate to the Backup Service team."
            ), session)
    }

    /// Audits a refusal (its code, never as the reset) and throws it.
    private func refuse(_ plan: ResetPlan, _ error: ConsoleError, _ session: Session) async throws(ConsoleError)
        -> Never
    {
        try await store.appendAudit(
            session.audit(
                "reset.refused", target: plan.backupId,
                details: ["code": error.code, "tokenHashPrefix": ResetToken.auditPrefix(ofHash: plan.tokenHash)]))
        throw error
    }

    /// The service's rules for a signature, checked locally: standard base64, strict DER, valid
    /// low-S ECDSA over SHA-256 of the raw challenge with the key inside the Backup Account ID.
    /// The walkthrough uses it to refuse a mistyped signature before anything is sent.
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
}
