import Access
import BackupCrypto
import BackupModel
import ConsoleStore
import Turnkey

/// `reset walkthrough` as a state machine: find → review → proof → confirm → wipe → teardown →
/// summary. It does no terminal I/O: the console feeds ``Input`` values and renders the
/// ``WalkthroughPrompt`` each step returns, so tests drive it with scripted inputs.
///
/// A refused input throws and leaves the state where it was (a mistyped signature can be
/// pasted again); ``Input/abort`` ends the walk at any step before the wipe without changes.
public struct ResetWalkthrough: Sendable {
    public enum Step: String, Sendable {
        case find, review, proof, confirm, wipe, teardown, summary, finished
    }

    public enum Input: Sendable {
        /// At `find`: a Backup Account ID or a factor (see ``BackupFinder``).
        case identify(String)
        /// At `review`: go on; a challenge is issued.
        case proceed
        /// At `proof`: the signature the user made elsewhere with `backupctl recovery sign`.
        case remoteProof(signature: String)
        /// At `proof`: the Root Key typed at the console; the console signs.
        case presentProof(RootKey)
        /// At `confirm`: the tenant name as typed.
        case confirm(tenantName: String)
        /// At `wipe`: do it.
        case wipe
        /// At `teardown`: stamps pasted by the user, by sub-org id (remote mode); may be partial.
        case stamps([String: String])
        /// At `teardown`: go on without (more) stamps.
        case skipStamps
        case abort
    }

    public private(set) var step: Step = .find
    let backend: any ResetBackend
    /// The tenant the reset happens in (what the operator types to confirm).
    let tenant: String
    let operatorName: String
    let clock: WallClock

    private var backupId: String?
    private var challenge: ResetChallenge?
    private var signature: String?
    private var mode: ProofMode = .remote
    private var signer: Secp256k1StampSigner?
    private var result: ResetResult?
    private var teardown: [TeardownItem] = []

    /// A walkthrough over `backend`, for an operator the services already allowed to reset
    /// (the console's `reset.walkthrough` operation checks the role).
    /// - Parameters:
    ///   - tenant: the tenant the backend works in.
    ///   - operatorName: who runs it, for the ticket summary.
    public init(backend: any ResetBackend, tenant: String, operatorName: String, clock: WallClock = .system) {
        self.backend = backend
        self.tenant = tenant
        self.operatorName = operatorName
        self.clock = clock
    }

    /// An in-process walkthrough on `store`.
    /// - Parameters:
    ///   - service: the reset service of the session's tenant (its Backup Service).
    ///   - finder: how `find` resolves what the user knows (the lookup service's rules).
    /// - Throws: `permission_denied` unless the session may run a reset (support).
    public init(
        store: any ConsoleStore, session: Session, service: ResetService, finder: any BackupFinder,
        clock: WallClock = .system
    ) async throws(ConsoleError) {
        try await session.require(.resetBegin)
        try await session.require(.resetComplete)
        self.init(
            backend: LocalResetBackend(store: store, session: session, service: service, finder: finder),
            tenant: session.tenantName.rawValue, operatorName: session.operatorName.rawValue, clock: clock)
    }

    /// The first prompt.
    public var firstPrompt: WalkthroughPrompt { .askIdentity }

    /// Feeds one input; returns what to show next.
    /// - Throws: ``ConsoleError`` for a refused input (the step does not change), or
    ///   `usage` for an input that does not belong to the current step.
    public mutating func handle(_ input: Input) async throws(ConsoleError) -> WalkthroughPrompt {
        switch (step, input) {
        case (.find, .abort), (.review, .abort), (.proof, .abort), (.confirm, .abort), (.wipe, .abort):
            let was = step
            step = .finished
            return .aborted(step: was.rawValue)
        case (.find, .identify(let query)):
            let review = try await backend.review(query)
            backupId = review.backupId
            step = .review
            return .review(review)
        case (.review, .proceed):
            guard let backupId else { throw Self.outOfOrder(step) }
            let begun = try await backend.begin(backupAccountId: backupId)
            challenge = begun
            step = .proof
            return .proof(
                backupId: begun.backupId.rawValue, challengeBase64: begun.challengeBase64,
                expiresAt: begun.expiresAtRFC3339)
        case (.proof, .remoteProof(let text)):
            let sig = text.trimmingCharacters(in: .whitespacesAndNewlines)
            try preflight(signature: sig)
            signature = sig
            mode = .remote
            return toConfirm()
        case (.proof, .presentProof(let rootKey)):
            guard let challenge else { throw Self.outOfOrder(step) }
            let id = try UserRecovery.backupAccountID(rootKey: rootKey)
            guard id == challenge.backupId else {
                throw ConsoleError(
                    .verificationFailed, code: "signature_verification_error",
                    "This Root Key belongs to \(id.abbreviated), not to \(challenge.backupId.abbreviated).")
            }
            let sig = try UserRecovery.signChallenge(challenge.challenge, rootKey: rootKey)
            try preflight(signature: sig)
            signature = sig
            signer = try Secp256k1StampSigner(rootKey: rootKey)
            mode = .present
            return toConfirm()
        case (.confirm, .confirm(let typed)):
            guard let backupId else { throw Self.outOfOrder(step) }
            guard typed.trimmingCharacters(in: .whitespaces) == tenant else {
                throw ConsoleError(
                    .conflict, code: "not_confirmed", "The tenant name did not match \(tenant); nothing was changed.")
            }
            step = .wipe
            return .readyToWipe(backupId: backupId)
        case (.wipe, .wipe):
            guard let challenge, let signature else { throw Self.outOfOrder(step) }
            let done = try await backend.complete(
                token: challenge.token, signature: signature, backupAccountId: challenge.backupId.rawValue)
            result = done
            teardown = try teardownItems(done.turnkeySubOrgIds)
            signer = nil
            step = .teardown
            let needStamps = teardown.contains { $0.stamp == nil }
            return .teardown(result: done, items: teardown, needStamps: needStamps)
        case (.teardown, .stamps(let pasted)):
            try accept(pasted)
            return finish()
        case (.teardown, .skipStamps):
            return finish()
        default:
            throw Self.outOfOrder(step)
        }
    }

    // MARK: - Steps

    private mutating func toConfirm() -> WalkthroughPrompt {
        step = .confirm
        return .confirm(tenant: tenant, backupId: backupId ?? "")
    }

    /// The service's signature rules, checked here so a mistyped signature is refused before
    /// anything is sent (the service would refuse it too, without burning the token).
    private func preflight(signature: String) throws(ConsoleError) {
        guard let challenge else { throw Self.outOfOrder(step) }
        try ResetService.verify(
            signature: signature, challenge: challenge.challenge, publicKey: challenge.backupId.publicKey)
    }

    /// Bodies for every sub-org, stamped locally when the Root Key was typed here.
    private func teardownItems(_ subOrgs: [String]) throws(ConsoleError) -> [TeardownItem] {
        let now = clock.millis()
        var items: [TeardownItem] = []
        for id in subOrgs {
            let body = try TurnkeyActivityBody.deleteSubOrganization(subOrgId: id, timestampMs: now)
            let stamp = try signer.map { (s) throws(ConsoleError) in
                try TurnkeyStamp.sign(body: body.bytes, with: s).headerValue
            }
            items.append(TeardownItem(subOrgId: id, body: body, stamp: stamp))
        }
        return items
    }

    /// A pasted stamp must be the break-glass scheme, by this backup's key, over that exact body.
    private mutating func accept(_ pasted: [String: String]) throws(ConsoleError) {
        guard let backupKey = challenge?.backupId.publicKey else { throw Self.outOfOrder(step) }
        var updated = teardown
        for (subOrgId, header) in pasted {
            guard let index = updated.firstIndex(where: { $0.subOrgId == subOrgId }) else {
                throw .invalid(
                    "invalid_stamp", "Sub-org \(SecretShape.excerpt(subOrgId, limit: 64)) is not part of this reset.")
            }
            let stamp = try TurnkeyStamp(headerValue: header)
            guard stamp.scheme == .secp256k1, stamp.publicKey == backupKey else {
                throw .invalid("invalid_stamp", "The stamp for \(subOrgId) is not by this backup's Backup Account Key.")
            }
            guard stamp.verify(body: updated[index].body.bytes) == .valid else {
                throw .invalid(
                    "invalid_stamp",
                    "The stamp for \(subOrgId) does not verify over its body; stamp the exact body file.")
            }
            updated[index].stamp = header.trimmingCharacters(in: .whitespacesAndNewlines)
        }
        teardown = updated
    }

    private mutating func finish() -> WalkthroughPrompt {
        step = .summary
        let stamped = teardown.filter { $0.stamp != nil }.count
        let status: String
        if teardown.isEmpty {
            status = "No Turnkey sub-orgs were referenced; nothing to tear down."
        } else {
            status =
                "\(teardown.count) sub-org(s) queued for `cleanup` with reason reset; \(stamped) break-glass stamp(s) ready to submit."
        }
        let summary = WalkthroughSummary(
            tenant: tenant, operatorName: operatorName, backupId: result?.backupId ?? backupId ?? "", proof: mode,
            result: result ?? ResetResult(backupId: "", wiped: false, lookupRowsRemoved: 0, turnkeySubOrgIds: []),
            teardown: teardown, teardownStatus: status,
            nextSteps: [
                "The user opens World App and creates a new backup with the same Root Key (same Backup Account ID).",
                "Re-enroll factors in the app: a passkey, Google or Apple sign-in, or iCloud Keychain.",
                "Each device re-adds itself as a sync factor the next time it syncs.",
            ])
        step = .finished
        return .summary(summary)
    }

    static func describe(_ factor: Factor) -> String {
        let since = "enrolled \(factor.createdAt.description.prefix(10))"
        switch factor.kind {
        case .passkey(let p): return "PASSKEY \"\(p.label ?? "unnamed")\" (\(since))"
        case .oidcAccount(let o):
            return "OIDC \(o.provider.rawValue) \(o.account.maskedEmail ?? "(no email)") (\(since))"
        case .ecKeypair(let key): return "EC_KEYPAIR \(key.prefix(12))… (\(since))"
        }
    }

    static func outOfOrder(_ step: Step) -> ConsoleError {
        .usage("That input does not belong to the \(step.rawValue) step of the walkthrough.")
    }
}
