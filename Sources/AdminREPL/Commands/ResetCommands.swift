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
            abstract: "Ask the tenant's Backup Service for the live backup's factors and a reset challenge.",
            discussion: """
                Calls /v1/backup/status (a backup the service does not have stops here with not_found),
                then /v1/reset/challenge/keypair. Prints the challenge for the user to sign and the
                single-use token (15 minutes) that `reset complete` takes back.
                Example: reset begin backup_account_02ab…
                """)

        @Argument(help: "The Backup Account ID (backup_account_<66 hex>).") var backupAccountId: String
        @Option(help: "Write the token to this new file (mode 0600) instead of printing it.") var tokenOut: String?

        struct Result: Encodable {
            var challenge: String
            /// Absent when the token went to `--token-out`.
            var token: String?
            var tokenFile: String?
            var expiresAt: String
            var liveFactors: [String]
        }

        func execute(_ ctx: CommandContext) async throws -> CommandOutput {
            let session = try ctx.session()
            // Refuse an unusable --token-out before a challenge (and its token) is issued.
            let out = try tokenOut.map { (path) throws(ConsoleError) in try SecretFile.create(path, what: "--token-out")
            }
            let service = try await BackupServiceWiring.resetService(ctx, session)
            let begun: ResetChallenge
            do { begun = try await service.begin(backupAccountId: backupAccountId, session: session) } catch {
                out?.discard()
                throw error
            }
            let token = begun.token.withUnsafeBytes { String(decoding: $0, as: UTF8.self) }
            try out?.write(Array(token.utf8) + [0x0A])
            let factors = begun.factors.map { f in f.accountKind.map { "\(f.kind) (\($0))" } ?? f.kind }
            let result = Result(
                challenge: begun.challengeBase64, token: out == nil ? token : nil, tokenFile: out?.path,
                expiresAt: begun.expiresAtRFC3339, liveFactors: factors)
            let tokenFlag = out.map { "--token-file \($0.path)" } ?? "--token-file FILE"
            return CommandOutput(json: result) { style in
                keyValueBlock(
                    [
                        ("backup", begun.backupId.rawValue),
                        ("live main factors", factors.isEmpty ? "none" : factors.joined(separator: ", ")),
                        ("challenge", result.challenge),
                        ("token", out.map { "written to \($0.path) (mode 0600)" } ?? token),
                        ("expiresAt", result.expiresAt),
                    ], style) + "\n"
                    + style.dim(
                        "If the user still has any listed factor, stop: no reset is needed. Otherwise the user runs `backupctl recovery sign --challenge \(result.challenge)` and reads you the signature; then run `reset complete \(tokenFlag) --signature-file FILE`. The token is single use."
                    )
            }
        }
    }

    struct Complete: ConsoleCommand {
        static let configuration = CommandConfiguration(
            abstract:
                "Send the user's signature to the Backup Service's /v1/reset; on success wipe the console's copy.",
            discussion: """
                The token and signature are read from files (--token-file, --signature-file; - is stdin)
                or, on a terminal, from prompts (the token hidden), so they never appear in argv.
                Only on the service's 204 does the console audit the reset, delete its copy and queue the
                backup's Turnkey sub-orgs for cleanup. A lost answer is resolved with /v1/backup/status.
                Example: reset complete --token-file token.txt --signature-file sig.txt
                """)

        @Option(help: "The token printed by `reset begin` (prefer --token-file: argv is world-readable).")
        var token: String?
        @Option(help: "A file holding the token; - reads stdin.") var tokenFile: String?
        @Option(help: "The signature from `backupctl recovery sign` (standard base64 DER).") var signature: String?
        @Option(help: "A file holding the signature; - reads stdin.") var signatureFile: String?
        @Option(help: "The backup you mean to reset; required for a token this console did not issue.")
        var backupAccountId: String?

        struct Result: Encodable {
            var backupId: String
            var wiped: Bool
            var lookupRowsRemoved: Int
            var turnkeySubOrgIds: [String]
            var resolvedBy: String?
        }

        func execute(_ ctx: CommandContext) async throws -> CommandOutput {
            let session = try ctx.session()
            if tokenFile == "-" && signatureFile == "-" {
                throw ConsoleError.usage("Only one of --token-file and --signature-file can be - (stdin).")
            }
            let secret = try SecretInput.read(
                value: token, file: tokenFile, what: "reset token", flag: "token", hidden: true)
            let service = try await BackupServiceWiring.resetService(ctx, session)
            let plan = try service.plan(token: secret, backupAccountId: backupAccountId, session: session)
            let sig = try SecretInput.read(
                value: signature, file: signatureFile, what: "signature", flag: "signature", hidden: false)
            let sigText = sig.withUnsafeBytes { String(decoding: $0, as: UTF8.self) }
            try ctx.confirmDestructive(
                "Resetting \(plan.backupId) through the Backup Service deletes the user's backup there and here",
                tenant: session.tenantName)
            let r = try await service.complete(
                token: secret, signature: sigText, backupAccountId: backupAccountId, session: session)
            let result = Result(
                backupId: r.backupId, wiped: r.wiped, lookupRowsRemoved: r.lookupRowsRemoved,
                turnkeySubOrgIds: r.turnkeySubOrgIds, resolvedBy: r.resolvedBy)
            return CommandOutput(json: result) { style in Self.render(result, style) }
        }

        static func render(_ r: Result, _ style: RenderStyle) -> String {
            var rows = [
                ("backup", r.backupId), ("wiped", style.green("by the Backup Service; the console's copy too")),
                ("lookup rows removed", "\(r.lookupRowsRemoved)"),
                ("sub-orgs queued", r.turnkeySubOrgIds.isEmpty ? "none" : r.turnkeySubOrgIds.joined(separator: ", ")),
            ]
            if r.resolvedBy != nil {
                rows.append(("note", "the service's answer was lost; /v1/backup/status showed the backup gone"))
            }
            return keyValueBlock(rows, style) + "\n"
                + style.dim(
                    "The Turnkey sub-orgs stay queued for `cleanup` (reason reset, no snapshot needed); the user re-enrolls factors in the app."
                )
        }
    }
}
