import Access
import ArgumentParser
import BackupModel
import ConsoleStore
import Foundation
import Recovery

/// `reset begin|complete|walkthrough`: the operator side of /reset (role support).
struct ResetCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "reset",
        abstract: "Reset a backup whose owner lost every factor but still has the Root Key.",
        subcommands: [Begin.self, Complete.self, ResetWalkthroughCommand.self])

    struct Begin: ConsoleCommand {
        static let configuration = CommandConfiguration(
            abstract: "Issue a reset challenge (32 random bytes) and a single-use token for a backup.")

        @Argument(help: "The Backup Account ID (backup_account_<66 hex>).") var backupAccountId: String

        struct Result: Encodable {
            var challenge: String
            var token: String
            var expiresAt: String
        }

        func execute(_ ctx: CommandContext) async throws -> CommandOutput {
            let session = try ctx.session()
            let service = ResetService(store: try ctx.existingStore(), clock: ctx.clock, random: ctx.random)
            let begun = try service.begin(backupAccountId: backupAccountId, session: session)
            let token = begun.token.withUnsafeBytes { String(decoding: $0, as: UTF8.self) }
            let result = Result(challenge: begun.challengeBase64, token: token, expiresAt: begun.expiresAtRFC3339)
            return CommandOutput(json: result) { style in
                keyValueBlock(
                    [
                        ("backup", begun.backupId.rawValue), ("challenge", result.challenge), ("token", token),
                        ("expiresAt", result.expiresAt),
                    ], style) + "\n"
                    + style.dim(
                        "The user runs `backupctl recovery sign --challenge \(result.challenge)` and reads you the signature; then run `reset complete --token … --signature …`. The token is single use."
                    )
            }
        }
    }

    struct Complete: ConsoleCommand {
        static let configuration = CommandConfiguration(
            abstract: "Verify the user's signature and wipe the backup in one transaction (destructive).")

        @Option(help: "The token printed by `reset begin`.") var token: String
        @Option(help: "The signature from `backupctl recovery sign` (standard base64 DER).") var signature: String
        @Option(help: "Optional: the backup you mean to reset; refused unless the token was made for it.")
        var backupAccountId: String?

        struct Result: Encodable {
            var backupId: String
            var wiped: Bool
            var lookupRowsRemoved: Int
            var turnkeySubOrgIds: [String]
        }

        func execute(_ ctx: CommandContext) async throws -> CommandOutput {
            let session = try ctx.session()
            let service = ResetService(
                store: try ctx.existingStore(), clock: ctx.clock, random: ctx.random,
                checkpoint: CrashHook.checkpoint(environment: ctx.environment))
            let secret = SecretBytes(Array(token.utf8))
            let plan = try service.preflight(
                token: secret, signature: signature, backupAccountId: backupAccountId, session: session)
            try ctx.confirmDestructive(
                "Resetting \(plan.backupId) wipes its metadata, blob and lookup rows", tenant: session.tenantName)
            let r = try service.complete(
                token: secret, signature: signature, backupAccountId: backupAccountId, session: session)
            let result = Result(
                backupId: r.backupId, wiped: r.wiped, lookupRowsRemoved: r.lookupRowsRemoved,
                turnkeySubOrgIds: r.turnkeySubOrgIds)
            return CommandOutput(json: result) { style in Self.render(result, style) }
        }

        static func render(_ r: Result, _ style: RenderStyle) -> String {
            keyValueBlock(
                [
                    ("backup", r.backupId), ("wiped", style.green("metadata, sealed blob, lookup rows")),
                    ("lookup rows removed", "\(r.lookupRowsRemoved)"),
                    (
                        "sub-orgs queued",
                        r.turnkeySubOrgIds.isEmpty ? "none" : r.turnkeySubOrgIds.joined(separator: ", ")
                    ),
                ],
                style) + "\n"
                + style.dim(
                    "The Turnkey sub-orgs stay queued for `cleanup` (reason reset); the user re-enrolls factors in the app."
                )
        }
    }
}

/// Debug builds only: `BACKUPCTL_CRASH_AT=<checkpoint>` makes `reset complete` die with
/// `_exit(137)` at that ``ResetCheckpoint``, for the crash-atomicity test. Release builds
/// compile the no-op, so the variable means nothing there.
enum CrashHook {
    static func checkpoint(environment: [String: String]) -> @Sendable (ResetCheckpoint) -> Void {
        #if DEBUG
            guard let name = environment["BACKUPCTL_CRASH_AT"], let target = ResetCheckpoint(rawValue: name) else {
                return { _ in }
            }
            return { point in if point == target { _exit(137) } }
        #else
            return { _ in }
        #endif
    }
}
