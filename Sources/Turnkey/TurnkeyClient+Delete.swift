import BackupModel
import Foundation

/// How a `delete_sub_organization` ended.
public enum TurnkeyDeleteOutcome: Sendable, Equatable {
    /// COMPLETED: the sub-org is deleted (by this call or an identical earlier one).
    case deleted(activityId: String)
    /// 404 ORGANIZATION_NOT_FOUND: nothing left to delete.
    case alreadyGone
    /// Still PENDING/CREATED after the bounded polling; resend the same body later.
    case pending(activityId: String)
    /// CONSENSUS_NEEDED: a human must approve it in Turnkey; not waited on.
    case consensusNeeded(activityId: String)
    /// REJECTED or FAILED.
    case refused(activityId: String, status: String, message: String)
}

extension TurnkeyClient {
    /// Sends a journaled deletion body (unchanged on every attempt) and polls a PENDING activity.
    ///
    /// - Parameters:
    ///   - body: the body exactly as journaled; its `organizationId` is the sub-org.
    ///   - pollSigner: signs `get_activity` (the parent API key can read sub-org activities).
    ///   - maxPolls: bound on `get_activity` calls while PENDING/CREATED.
    ///   - onAttempt: asked right before each submit attempt is sent (not before polls); what
    ///     it throws withdraws the attempt (``call(path:body:signer:onAttempt:)``).
    /// - Returns: the outcome and the number of attempts the submit took.
    /// - Throws: ``TurnkeyError`` for everything but 404 ORGANIZATION_NOT_FOUND, notably
    ///   `.publicKeyNotFound` (try the next signer) and `.retryBudgetExhausted` (stop the run).
    public func deleteSubOrganization(
        subOrgId: String, body: String, signer: TurnkeySigner, pollSigner: TurnkeySigner, maxPolls: Int = 5,
        onAttempt: (@Sendable (Int) async throws(TurnkeyError) -> Void)? = nil
    ) async throws(TurnkeyError) -> (outcome: TurnkeyDeleteOutcome, attempts: Int) {
        let answer: Answer
        do {
            answer = try await call(
                path: TurnkeyWire.deleteSubOrganizationPath, body: Array(body.utf8), signer: signer,
                onAttempt: onAttempt)
        } catch  where error.kind == .organizationNotFound {
            return (.alreadyGone, error.attempts)
        }
        guard var activity = TurnkeyWire.decode(TurnkeyWire.ActivityResponse.self, answer.body)?.activity else {
            throw TurnkeyError(
                .transport, message: "unreadable activity from delete_sub_organization", attempts: answer.attempts)
        }
        var polls = 0
        while activity.status == TurnkeyActivityStatus.pending || activity.status == TurnkeyActivityStatus.created {
            guard polls < maxPolls else { return (.pending(activityId: activity.id), answer.attempts) }
            polls += 1
            let wait = policy.ceilingMillis(retry: polls - 1)
            do {
                try await timing.sleep(wait)
            } catch {
                return (.pending(activityId: activity.id), answer.attempts)
            }
            do {
                activity = try await getActivity(organizationId: subOrgId, activityId: activity.id, signer: pollSigner)
            } catch  where error.kind == .organizationNotFound {
                // The org vanished while we polled: the deletion went through.
                return (.deleted(activityId: activity.id), answer.attempts)
            }
        }
        switch activity.status {
        case TurnkeyActivityStatus.completed: return (.deleted(activityId: activity.id), answer.attempts)
        case TurnkeyActivityStatus.consensusNeeded: return (.consensusNeeded(activityId: activity.id), answer.attempts)
        default:
            return (
                .refused(
                    activityId: activity.id, status: activity.status,
                    message: activity.failure?.message ?? "activity \(activity.status)"), answer.attempts
            )
        }
    }
}
