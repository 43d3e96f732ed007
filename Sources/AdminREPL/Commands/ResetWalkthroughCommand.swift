import ArgumentParser
import BackupModel
import ConsoleService
import Foundation
import Recovery

/// `reset walkthrough`: the guided reset for a support session. The flow lives in
/// ``ResetWalkthrough``; this type only prompts, reads and prints.
struct ResetWalkthroughCommand: ConsoleCommand {
    static let configuration = CommandConfiguration(
        commandName: "walkthrough",
        abstract: "Guided reset: find the backup, review, proof, confirm, wipe, Turnkey teardown, summary.")

    func execute(_ ctx: CommandContext) async throws -> CommandOutput {
        guard ctx.interactive else {
            throw ConsoleError.usage(
                "reset walkthrough is interactive; in batch use `reset begin` and `reset complete --yes`.")
        }
        let who = try await ctx.perform(ResetWalkthroughOperation())
        var walk = ResetWalkthrough(
            backend: ConsoleResetBackend(api: try ctx.console, caller: try ctx.caller), tenant: who.tenant,
            operatorName: who.operator, clock: ctx.clock)
        let style = ctx.style
        var prompt = walk.firstPrompt
        while true {
            switch prompt {
            case .summary(var s):
                s.teardownStatus = await Self.submitTeardown(s, ctx: ctx)
                return CommandOutput(json: Self.json(s)) { style in Self.render(s, style) }
            case .aborted(let step):
                return .message("Walkthrough aborted at \(step); nothing was changed.", json: ["aborted": step])
            default:
                break
            }
            do {
                prompt = try await walk.handle(try nextInput(prompt, style))
            } catch {
                // A confirmation mismatch ends the walk, as every destructive confirmation does;
                // so does the end of input. Anything else may be retried (or answered with abort).
                // A refused reset ends it too: the wipe step has no input to correct.
                if error.code == "not_confirmed" || error.kind == .usage || walk.step == .wipe { throw error }
                Terminal.writeErr(
                    style.red("error[\(error.code)]:") + " " + SafeText.message(error.message)
                        + " Try again, or type abort.")
            }
        }
    }

    /// Shows `prompt` and reads the operator's (or the user's) answer to it.
    private func nextInput(_ prompt: WalkthroughPrompt, _ style: RenderStyle) throws(ConsoleError)
        -> ResetWalkthrough.Input
    {
        switch prompt {
        case .askIdentity:
            say(
                style.bold("1. Find the backup")
                    + ": a Backup Account ID, or a factor: passkey ID | google SUB | apple SUB | oidc ISSUER SUB | keypair KEY [--sync]"
            )
            let answer = try ask("backup or factor")
            return answer == "abort" ? .abort : .identify(answer)
        case .review(let r):
            say(Self.render(r, style))
            // The runbook's "no reset" test: a user who still has any listed factor recovers with it.
            let still = try ask("Does the user still have ANY factor listed above? (yes/no)").lowercased()
            if still.hasPrefix("y") {
                say("No reset: the user restores with that factor in World App; nothing was changed.")
                return .abort
            }
            return try ask("Issue a reset challenge? (yes/no)").lowercased().hasPrefix("y") ? .proceed : .abort
        case .proof(let id, let challenge, let expiresAt):
            say(style.bold("2. Proof") + " for \(id) (challenge valid until \(expiresAt))")
            say("  challenge: \(challenge)")
            say(
                "  a) user elsewhere: they run `backupctl recovery sign --challenge \(challenge)` and read out the signature"
            )
            say("  b) user present: they type the Root Key into a hidden prompt here")
            // Anything else is asked again: a key typed here by mistake must not be taken (and shown)
            // as a signature. Bounded: five answers.
            for _ in 0..<5 {
                switch try ask("a, b or abort").lowercased() {
                case "abort": return .abort
                case "a": return .remoteProof(signature: try ask("signature"))
                case "b":
                    return .presentProof(
                        try RootKeyInput.read(file: nil, prompt: "Root Key JSON (user types, hidden): "))
                default: say("Answer a, b or abort.")
                }
            }
            throw ConsoleError.usage("No answer among a, b or abort; the walkthrough stopped.")
        case .confirm(let tenant, let id):
            say(style.bold("3. Confirm") + ": this wipes \(id). Type the tenant name (\(tenant)) to confirm.")
            let answer = try ask("tenant")
            return answer == "abort" ? .abort : .confirm(tenantName: answer)
        case .readyToWipe(let id):
            say("Wiping \(id) ...")
            return .wipe
        case .teardown(let result, let items, let needStamps):
            say(style.green("Wiped") + " \(result.backupId): \(result.lookupRowsRemoved) lookup rows removed.")
            return try teardownInput(items, needStamps: needStamps, style)
        case .summary, .aborted:
            throw ConsoleError.usage("The walkthrough has ended.")
        }
    }

    private func teardownInput(_ items: [TeardownItem], needStamps: Bool, _ style: RenderStyle) throws(ConsoleError)
        -> ResetWalkthrough.Input
    {
        guard !items.isEmpty else { return .skipStamps }
        say(style.bold("4. Turnkey teardown") + ": one delete_sub_organization body per sub-org.")
        for item in items {
            say("  \(item.subOrgId)\n    body:  \(item.body.text)" + (item.stamp.map { "\n    stamp: \($0)" } ?? ""))
        }
        guard needStamps else { return .skipStamps }
        say("The user saves each body to a file byte for byte and runs `backupctl recovery stamp --body-file FILE`.")
        var stamps: [String: String] = [:]
        for item in items where item.stamp == nil {
            let answer = try ask("stamp for \(item.subOrgId) (empty to skip)")
            if !answer.isEmpty { stamps[item.subOrgId] = answer }
        }
        return stamps.isEmpty ? .skipStamps : .stamps(stamps)
    }

    /// Step 4's sending: each break-glass-stamped body goes to Turnkey through the cleanup
    /// service, which journals it first; whatever is not sent stays queued for `cleanup`.
    /// Submitting is a cleaner's action (the service decides), so a support operator gets the
    /// exact next step instead.
    static func submitTeardown(_ s: WalkthroughSummary, ctx: CommandContext) async -> String {
        let stamped = s.teardown.compactMap { item in
            item.stamp.map { ResetTeardownOperation.Item(subOrgId: item.subOrgId, body: item.body.text, stamp: $0) }
        }
        guard !stamped.isEmpty else {
            return s.teardownStatus
                + " Without break-glass stamps, `cleanup run` tries the tenant's cleanup key; else the user stamps `cleanup teardown-request` bodies later."
        }
        let sent: ResetTeardownOperation.Output
        do {
            sent = try await ctx.perform(ResetTeardownOperation(items: stamped))
        } catch {
            return s.teardownStatus + " Not sent: \(error.message) The sub-orgs stay queued for cleanup."
        }
        guard sent.permitted else {
            return s.teardownStatus
                + " Not sent: submitting needs the cleaner role; a cleaner runs `cleanup submit --body-file FILE --stamp STAMP` with the bodies and stamps below."
        }
        let outcomes = sent.outcomes.map { item in
            if let reason = item.notSent { return "\(item.subOrgId): not sent (\(reason)); stays queued for cleanup" }
            if item.outcome == "skipped" {
                return
                    "\(item.subOrgId): stamped and journaled, not sent yet; the first `cleanup run --execute` after the grace period sends it"
            }
            return "\(item.subOrgId): \(item.outcome ?? "sent")"
        }
        return "Teardown: " + outcomes.joined(separator: "; ")
    }

    /// Walkthrough text holds imported strings (labels, masked emails): escaped, the console's
    /// own colours kept.
    private func say(_ text: String) { Terminal.writeErr(SafeText.output(text, keepStyle: true)) }

    private func ask(_ label: String) throws(ConsoleError) -> String {
        FileHandle.standardError.write(Data("\(label)> ".utf8))
        guard let line = try Terminal.readAnswer() else {
            throw ConsoleError.usage("Input ended; the walkthrough stopped.")
        }
        return line.trimmingCharacters(in: .whitespaces)
    }

    static func render(_ r: WalkthroughReview, _ style: RenderStyle) -> String {
        var lines = [style.bold("Backup \(r.backupId)"), "Will be wiped:"]
        lines += r.factors.map { "  factor  \($0)" }
        lines += r.devices.map { "  device  \($0)" }
        lines.append(
            "  \(r.lookupRows) lookup rows, sealed blob \(r.sealedBlobBytes.map { "\($0) bytes" } ?? "absent")")
        lines += r.turnkeySubOrgIds.map { "  Turnkey sub-org \($0) (queued for teardown)" }
        lines.append("Will NOT be wiped:")
        lines += r.notWiped.map { "  \($0)" }
        return lines.joined(separator: "\n")
    }

    struct SummaryJSON: Encodable {
        var tenant, `operator`, backupId, proof, teardownStatus: String
        var lookupRowsRemoved: Int
        var turnkeySubOrgIds: [String]
        var teardown: [[String: String]]
        var nextSteps: [String]
    }

    static func json(_ s: WalkthroughSummary) -> SummaryJSON {
        SummaryJSON(
            tenant: s.tenant, operator: s.operatorName, backupId: s.backupId, proof: s.proof.rawValue,
            teardownStatus: s.teardownStatus, lookupRowsRemoved: s.result.lookupRowsRemoved,
            turnkeySubOrgIds: s.result.turnkeySubOrgIds,
            teardown: s.teardown.map { ["subOrgId": $0.subOrgId, "body": $0.body.text, "stamp": $0.stamp ?? ""] },
            nextSteps: s.nextSteps)
    }

    static func render(_ s: WalkthroughSummary, _ style: RenderStyle) -> String {
        var out = style.bold("Reset summary (for the ticket)") + "\n"
        out += keyValueBlock(
            [
                ("tenant", s.tenant), ("operator", s.operatorName), ("backup", s.backupId),
                (
                    "proof",
                    s.proof == .present ? "user present, Root Key typed at the console" : "user signed elsewhere"
                ),
                ("wiped", "metadata, sealed blob, \(s.result.lookupRowsRemoved) lookup rows"),
                (
                    "sub-orgs",
                    s.result.turnkeySubOrgIds.isEmpty ? "none" : s.result.turnkeySubOrgIds.joined(separator: ", ")
                ),
                ("teardown", s.teardownStatus),
            ], style)
        out +=
            "\n" + style.bold("Next steps for the user") + "\n"
            + s.nextSteps.map { "  - \($0)" }.joined(separator: "\n")
        return out
    }
}
