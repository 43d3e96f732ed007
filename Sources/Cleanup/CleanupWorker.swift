import Access
import BackupModel
import ConsoleStore
import Synchronization
import Turnkey

/// Deletes one journaled sub-org: re-verify, journal the body, try each signer, record.
struct CleanupWorker: Sendable {
    let service: CleanupService
    let session: Session
    let client: TurnkeyClient
    let flags: RunFlags
    let maxPolls: Int
    /// Re-checked on each item right before its deletion.
    let proof: SnapshotProof?
    /// Asked after each deletion attempt's rate slot, right before it is sent: a queue worker
    /// confirms there that the queuer may still run cleanup. A `permissionDenied` or `notFound`
    /// withdraws the item unsent (``withdrawn``); any other error is a store failure, thrown.
    var beforeSend: (@Sendable () async throws(ConsoleError) -> Void)? = nil
    /// The run or the worker was asked to stop: no attempt is sent after that.
    var shouldStop: (@Sendable () -> Bool)? = nil

    var store: any CleanupJournalStore { service.store }
    var tenant: TenantName { session.tenantName }

    /// The outcome of an attempt whose failure may pass on a later pass of the run.
    static let retryLater = "retryLater"
    /// The outcome of an item whose proof no longer holds (reported `skipped`, left `pending`).
    static let notEligible = "skipped"
    /// The outcome of an item ``beforeSend`` refused (left `pending`, its body journaled).
    static let withdrawn = "withdrawn"

    /// Processes `subOrgId` and returns its outcome; throws only for store failures.
    /// - Parameter finalPass: a retryable failure is `failed` on the final pass; before it the
    ///   item stays pending and the outcome is ``retryLater`` (the run re-queues it).
    func process(_ subOrgId: String, finalPass: Bool = true) async throws(ConsoleError) -> RunReport.Item {
        let now = service.nowSeconds
        guard var item = try await store.cleanupItem(tenant: tenant, subOrgId: subOrgId) else {
            throw .notFound("Sub-org \(subOrgId) vanished from the cleanup journal of \(tenant) during the run.")
        }
        if item.state == .deleted || item.state == .alreadyGone {
            return RunReport.Item(subOrgId: subOrgId, outcome: item.state.rawValue, attempts: item.attempts, error: nil)
        }
        // Re-read right before the call: a backup imported since the scan wins.
        if let backup = try await store.subOrgReference(tenant: tenant, subOrgId: subOrgId) {
            return try await recordReferenced(&item, by: backup)
        }
        // And its proof, on the item as it is now: a reset or retirement since the scan restarted
        // its clock, a snapshot may have aged, a retired backup may still be at the service.
        if let proof, let waitingFor = await proof.verdict(item, at: now).waitingFor {
            var left = try await record(
                &item, .pending, error: "not deleted: not eligible now, waiting for \(waitingFor)", audit: nil)
            left.outcome = Self.notEligible
            return left
        }
        if item.body == nil {
            item.body = try TurnkeyActivityBody.deleteSubOrganization(
                subOrgId: subOrgId, timestampMs: service.timing.clock.millis()
            ).text
            item.updatedAt = now
            item = try await store.updateCleanupItem(tenant: tenant, item, audit: nil)  // journaled before it is sent
            service.checkpoint(.journaled, subOrgId)
        }
        var signers: [(name: String, body: String, signer: TurnkeySigner)] = []
        if let key = service.connection.cleanupKey, let body = item.body {
            signers.append(("cleanup_key", body, .apiKey(key)))
        }
        if let stamped = try await store.stampedTeardown(tenant: tenant, subOrgId: subOrgId) {
            signers.append(("break_glass", stamped.body, .prestamped(stamped.stamp)))
        }
        var lastError = "no signer: the tenant has no cleanup key and no break-glass request was submitted"
        // Right before each attempt is sent — after its rate slot and any back-off, which can
        // take minutes under a flaky Turnkey — everything checked above is checked again.
        let refusal = Refusal()
        let gate = { @Sendable (_: Int) async throws(TurnkeyError) in
            guard let withdrawal = await recheck(subOrgId) else { return }
            refusal.withdrawal.withLock { $0 = withdrawal }
            throw TurnkeyError(.cancelled, message: "not sent: \(withdrawal.message)")
        }
        for (name, body, signer) in signers {
            let result: Result<(outcome: TurnkeyDeleteOutcome, attempts: Int), TurnkeyError>
            do throws(TurnkeyError) {
                result = .success(
                    try await client.deleteSubOrganization(
                        subOrgId: subOrgId, body: body, signer: signer, pollSigner: .apiKey(service.connection.apiKey),
                        maxPolls: maxPolls, onAttempt: gate))
            } catch {
                result = .failure(error)
            }
            switch result {
            case .success(let (outcome, attempts)):
                item.attempts += attempts
                return try await record(&item, outcome: outcome, signer: name)
            case .failure(let error):
                item.attempts += error.attempts
                switch error.kind {
                case .publicKeyNotFound:
                    lastError = "\(name) is not a user of the sub-org (PUBLIC_KEY_NOT_FOUND)"
                    continue
                case .retryBudgetExhausted:
                    flags.markOutage(error.description)
                    return try await record(&item, .pending, error: error.description, audit: nil)
                case .cancelled:
                    switch refusal.withdrawal.withLock({ $0 }) {
                    case .referenced(let backup)?:
                        return try await recordReferenced(&item, by: backup)
                    case .notEligible(let waitingFor)?:
                        var left = try await record(
                            &item, .pending, error: "not deleted: not eligible now, waiting for \(waitingFor)",
                            audit: nil)
                        left.outcome = Self.notEligible
                        return left
                    case .refused?:
                        var left = try await record(&item, .pending, error: error.message, audit: nil)
                        left.outcome = Self.withdrawn
                        return left
                    case .storeFailed(let failure)?:
                        throw failure
                    case .stopped?, nil:
                        return try await record(&item, .pending, error: error.description, audit: nil)
                    }
                default:
                    if error.isTransient && !finalPass {
                        // The next pass honours Turnkey's Retry-After (longer than the client waits in place).
                        if let wait = error.retryAfterMillis { flags.noteRetryAfter(subOrgId, millis: wait) }
                        var pending = try await record(&item, .pending, error: error.description, audit: nil)
                        pending.outcome = Self.retryLater
                        return pending
                    }
                    return try await record(&item, .failed, error: error.description, audit: nil)
                }
            }
        }
        return try await record(
            &item, .needsUser,
            error: lastError + "; ask the user to stamp `cleanup teardown-request \(subOrgId)` and `cleanup submit` it",
            audit: nil)
    }

    /// Why an attempt is not sent after all (``recheck(_:)``).
    enum Withdrawal: Sendable {
        /// A backup references the sub-org now (imported while the item waited).
        case referenced(String)
        /// Its proof no longer holds (a snapshot aged, a reset restarted its clock).
        case notEligible(String)
        /// The run or worker was asked to stop.
        case stopped
        /// ``beforeSend`` refused: the operator may no longer run cleanup.
        case refused(ConsoleError)
        /// The store could not answer; the item stays as it is.
        case storeFailed(ConsoleError)

        var message: String {
            switch self {
            case .referenced(let backup): "referenced by \(backup)"
            case .notEligible(let waitingFor): "not eligible now, waiting for \(waitingFor)"
            case .stopped: "the run was asked to stop"
            case .refused(let error), .storeFailed(let error): error.message
            }
        }
    }

    /// What would stop an attempt now: a stop, a lapsed proof (judged at the clock's time), a
    /// lost right, a reference. The reference is read last, nearest the send: the other checks
    /// may ask the Backup Service or the store's access over the network.
    func recheck(_ subOrgId: String) async -> Withdrawal? {
        if shouldStop?() == true { return .stopped }
        do throws(ConsoleError) {
            if let proof, let item = try await store.cleanupItem(tenant: tenant, subOrgId: subOrgId),
                let waitingFor = await proof.verdict(item, at: service.nowSeconds).waitingFor
            {
                return .notEligible(waitingFor)
            }
            try await beforeSend?()
            if let backup = try await store.subOrgReference(tenant: tenant, subOrgId: subOrgId) {
                return .referenced(backup)
            }
            return nil
        } catch {
            return error.kind == .permissionDenied || error.kind == .notFound ? .refused(error) : .storeFailed(error)
        }
    }

    /// A sub-org a backup references now. Without a journaled deletion nothing was sent: it is
    /// `skipped`. With one, an earlier attempt (or a killed run's) may have gone through before
    /// the backup was imported, so Turnkey is asked: a sub-org it no longer has is recorded as
    /// what happened (`alreadyGone`, audited with the backup, logged as an error: that backup's
    /// Turnkey key is gone), never as "not deleted"; one it cannot say about stays `pending`
    /// for the next run to ask again.
    func recordReferenced(_ item: inout CleanupItemRecord, by backup: String) async throws(ConsoleError)
        -> RunReport.Item
    {
        item.lastBackupId = backup
        guard item.body != nil else {
            return try await record(&item, .skipped, error: "referenced by \(backup)", audit: nil)
        }
        let exists: Result<Void, TurnkeyError>
        do throws(TurnkeyError) {
            _ = try await client.whoami(organizationId: item.subOrgId, signer: .apiKey(service.connection.apiKey))
            exists = .success(())
        } catch {
            exists = .failure(error)
        }
        switch exists {
        case .success:
            return try await record(&item, .skipped, error: "referenced by \(backup)", audit: nil)
        case .failure(let error) where error.kind == .organizationNotFound:
            service.logger.error(
                "sub-org \(item.subOrgId) of \(tenant) was deleted by an earlier attempt of its journaled deletion, and backup \(backup) references it now (imported while the deletion was in flight): that backup's Turnkey key is gone"
            )
            return try await record(
                &item, .alreadyGone,
                error: "deleted by an earlier attempt; \(backup) came to reference it meanwhile and has lost this key",
                audit: session.audit(
                    "cleanup.already_gone", target: item.subOrgId, details: ["referencedBy": backup, "via": "recheck"]))
        case .failure(let error):
            return try await record(
                &item, .pending,
                error:
                    "referenced by \(backup) after its deletion was journaled; Turnkey could not say whether an earlier attempt deleted it (\(error.summary)); the next run asks again",
                audit: nil)
        }
    }

    /// Marks a re-queued item `failed` when the run's retry budget cannot pay for another pass.
    func giveUp(_ subOrgId: String, error: String?) async throws(ConsoleError) -> RunReport.Item {
        guard var item = try await store.cleanupItem(tenant: tenant, subOrgId: subOrgId) else {
            throw .notFound("Sub-org \(subOrgId) vanished from the cleanup journal of \(tenant) during the run.")
        }
        return try await record(
            &item, .failed, error: (error ?? "failed") + "; the run's retry budget is spent", audit: nil)
    }

    func record(_ item: inout CleanupItemRecord, outcome: TurnkeyDeleteOutcome, signer: String)
        async throws(ConsoleError)
        -> RunReport.Item
    {
        switch outcome {
        case .deleted(let activity):
            return try await record(
                &item, .deleted, error: nil,
                audit: session.audit(
                    "cleanup.delete", target: item.subOrgId,
                    details: ["activityId": activity, "signer": signer, "attempts": "\(item.attempts)"]))
        case .alreadyGone:
            return try await record(
                &item, .alreadyGone, error: nil,
                audit: session.audit("cleanup.already_gone", target: item.subOrgId, details: ["signer": signer]))
        case .pending(let activity):
            return try await record(
                &item, .pending, error: "activity \(activity) still pending; the next run re-sends the same body",
                audit: nil)
        case .consensusNeeded(let activity):
            return try await record(
                &item, .needsUser, error: "activity \(activity) needs consensus approval in Turnkey", audit: nil)
        case .refused(let activity, let status, let message):
            return try await record(&item, .failed, error: "activity \(activity) \(status): \(message)", audit: nil)
        }
    }

    func record(_ item: inout CleanupItemRecord, _ state: CleanupItemRecord.State, error: String?, audit: AuditDraft?)
        async throws(ConsoleError) -> RunReport.Item
    {
        item.state = state
        item.lastError = error
        item.updatedAt = service.nowSeconds
        item = try await store.updateCleanupItem(tenant: tenant, item, audit: audit)
        return RunReport.Item(subOrgId: item.subOrgId, outcome: state.rawValue, attempts: item.attempts, error: error)
    }
}

/// Why the gate withdrew an attempt, kept for the item's outcome.
private final class Refusal: Sendable {
    let withdrawal = Mutex<CleanupWorker.Withdrawal?>(nil)
}
