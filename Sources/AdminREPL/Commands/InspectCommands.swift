import Access
import ArgumentParser
import BackupModel
import ConsoleService
import ConsoleStore
import Inspect

/// A read whose audit entry a script may commit behind it, holding its output until then
/// (``CommandContext/auditDeferral``): lookups and `show`.
///
/// Its one service call is ``readOperation``: a script runs the operations of consecutive
/// reads ahead of their lines, in one call (``BatchRunner``), and each line's `execute` then
/// takes its answer from ``CommandContext/perform(_:progress:)``.
protocol GroupsReadAudit: ConsoleCommand {
    var readOperation: any ConsoleOperation { get }
}

/// `lookup passkey|oidc|keypair|account …`: which backup a factor opens.
struct LookupCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "lookup", abstract: "Find the backup a factor or Backup Account ID belongs to (viewer).",
        subcommands: [Passkey.self, Oidc.self, Keypair.self, Account.self])

    struct Passkey: ConsoleCommand, GroupsReadAudit {
        static let configuration = CommandConfiguration(
            abstract: "By WebAuthn credential id (base64url, padded or not, standard base64 or hex).")
        @Argument(help: "The credential id.") var credentialId: String

        var readOperation: any ConsoleOperation { LookupOperation(.passkey(credentialId: credentialId)) }

        func execute(_ ctx: CommandContext) async throws -> CommandOutput {
            try await LookupCommand.run(.passkey(credentialId: credentialId), ctx)
        }
    }

    struct Oidc: ConsoleCommand, GroupsReadAudit {
        static let configuration = CommandConfiguration(abstract: "By OIDC account: provider and subject.")
        @Argument(help: "google, apple, or the issuer URL.") var provider: String
        @Argument(help: "The account's sub.") var sub: String

        var readOperation: any ConsoleOperation { LookupOperation(.oidc(provider: provider, sub: sub)) }

        func execute(_ ctx: CommandContext) async throws -> CommandOutput {
            try await LookupCommand.run(.oidc(provider: provider, sub: sub), ctx)
        }
    }

    struct Keypair: ConsoleCommand, GroupsReadAudit {
        static let configuration = CommandConfiguration(
            abstract: "By P-256 public key (33 or 65 bytes, base64 or hex): iCloud Keychain, or a device with --sync.")
        @Argument(help: "The public key.") var publicKey: String
        @Flag(help: "Look in the SYNC scope (device keys) instead of MAIN.") var sync = false

        var readOperation: any ConsoleOperation { LookupOperation(.keypair(publicKey: publicKey, sync: sync)) }

        func execute(_ ctx: CommandContext) async throws -> CommandOutput {
            try await LookupCommand.run(.keypair(publicKey: publicKey, sync: sync), ctx)
        }
    }

    struct Account: ConsoleCommand, GroupsReadAudit {
        static let configuration = CommandConfiguration(abstract: "By Backup Account ID (the backup's id).")
        @Argument(help: "backup_account_<66 hex>.") var backupAccountId: String

        var readOperation: any ConsoleOperation { LookupOperation(.account(backupAccountId)) }

        func execute(_ ctx: CommandContext) async throws -> CommandOutput {
            try await LookupCommand.run(.account(backupAccountId), ctx)
        }
    }

    @MainActor static func run(_ query: LookupQuery, _ ctx: CommandContext) async throws -> CommandOutput {
        let result = try await ctx.perform(LookupOperation(query))
        return CommandOutput(json: result) { style in
            keyValueBlock(
                [("backup", style.cyan(result.backupId)), ("scope", result.scope), ("lookup key", result.lookupKey)]
                    + (result.factorId.map { [("factor", $0)] } ?? []), style)
        }
    }
}

/// A lookup's line is written without the encoder (``FlatJSONObject``): a script prints one per
/// lookup.
extension LookupResult: FlatJSONObject {
    var flatMembers: [(key: String, value: String?)] {
        [("backupId", backupId), ("factorId", factorId), ("kind", kind), ("lookupKey", lookupKey), ("scope", scope)]
    }
}

/// `show BACKUP_ID`: one backup's factors, keys, blob and health.
struct ShowCommand: ConsoleCommand, GroupsReadAudit {
    static let configuration = CommandConfiguration(
        commandName: "show", abstract: "Show a backup: factors, devices, key kinds, sub-orgs, blob and health (viewer)."
    )
    @Argument(help: "The backup id (its Backup Account ID), or a unique prefix of it.") var backupId: String

    var readOperation: any ConsoleOperation { ShowOperation(backupId: backupId) }

    func execute(_ ctx: CommandContext) async throws -> CommandOutput {
        let report = try await ctx.perform(ShowOperation(backupId: backupId))
        return CommandOutput(json: report) { style in InspectRender.show(report, style) }
    }
}

/// `check [BACKUP_ID]`: health checks over one backup or the whole tenant.
struct CheckCommand: ConsoleCommand, ListsRecords {
    static let configuration = CommandConfiguration(
        commandName: "check", abstract: "Run the health checks over one backup or the whole tenant (viewer).")
    @Argument(help: "One backup id or a unique prefix of it; all backups of the tenant when omitted.")
    var backupId: String?
    @Flag(help: "List only failing findings (warnings are still counted).") var failing = false
    @Option(help: "List only the findings of this check, e.g. factor_shared.") var check: String?
    @Option(help: "List at most N findings (default 100); the rest are counted.") var limit: Int = 100
    @Flag(
        help:
            "Also read each backup's Turnkey sub-org (within the tenant's rate limit): the sub-org gone, OIDC factors without their provider, sync factors without an API key."
    ) var turnkey = false

    func execute(_ ctx: CommandContext) async throws -> CommandOutput {
        var filter = FindingFilter(minimum: failing ? .fail : .warn)
        if let check {
            if turnkey, let live = LiveCheckName(rawValue: check) {
                filter.liveCheck = live
            } else {
                filter.check = try Self.checkName(check)
            }
        }
        let operation = CheckOperation(backupId: backupId, filter: filter, limit: limit, turnkey: turnkey)
        let report = try await ctx.performJob(operation, label: "check")
        var output = CommandOutput(json: report) { style in InspectRender.check(report, style) }
        output.records = ListRecords(
            ["backupId", "check", "status", "detail"],
            report.findings.map { [$0.backupId, $0.check, $0.status.rawValue, $0.detail] })
        // Failing checks make the command fail (exit 1) after the report, so scripts can stop on it.
        if report.backupsFailing > 0 {
            output.failure = ConsoleError(
                .verificationFailed, code: "health_check_failed",
                "\(report.backupsFailing) of \(report.backups) backup(s) fail a health check; see the findings above.")
        }
        return output
    }

    static func checkName(_ text: String) throws(ConsoleError) -> HealthCheckName {
        guard let name = HealthCheckName(rawValue: text) else {
            throw ConsoleError.invalid(
                "unknown_check",
                "Unknown check \(SecretShape.quoted(text, limit: 40)); the checks are "
                    + HealthCheckName.allCases.map(\.rawValue).joined(separator: ", ") + " (with --turnkey also "
                    + LiveCheckName.allCases.map(\.rawValue).joined(separator: ", ") + ").")
        }
        return name
    }
}

/// `stats`: the tenant by factor mix, devices, blob sizes and sub-orgs.
struct StatsCommand: ConsoleCommand {
    static let configuration = CommandConfiguration(
        commandName: "stats", abstract: "Counts by factor mix, devices per backup, blob sizes and sub-orgs (viewer).")

    func execute(_ ctx: CommandContext) async throws -> CommandOutput {
        let stats = try await ctx.perform(StatsOperation())
        return CommandOutput(json: stats) { style in InspectRender.stats(stats, style) }
    }
}
