import Access
import ArgumentParser
import BackupModel
import ConsoleStore
import Inspect

/// `lookup passkey|oidc|keypair|account …`: which backup a factor opens.
struct LookupCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "lookup", abstract: "Find the backup a factor or Backup Account ID belongs to (viewer).",
        subcommands: [Passkey.self, Oidc.self, Keypair.self, Account.self])

    struct Passkey: ConsoleCommand {
        static let configuration = CommandConfiguration(
            abstract: "By WebAuthn credential id (base64url, padded or not, standard base64 or hex).")
        @Argument(help: "The credential id.") var credentialId: String

        func execute(_ ctx: CommandContext) async throws -> CommandOutput {
            try LookupCommand.run(.passkey(credentialId: credentialId), ctx)
        }
    }

    struct Oidc: ConsoleCommand {
        static let configuration = CommandConfiguration(abstract: "By OIDC account: provider and subject.")
        @Argument(help: "google, apple, or the issuer URL.") var provider: String
        @Argument(help: "The account's sub.") var sub: String

        func execute(_ ctx: CommandContext) async throws -> CommandOutput {
            try LookupCommand.run(.oidc(provider: provider, sub: sub), ctx)
        }
    }

    struct Keypair: ConsoleCommand {
        static let configuration = CommandConfiguration(
            abstract: "By P-256 public key (33 or 65 bytes, base64 or hex): iCloud Keychain, or a device with --sync.")
        @Argument(help: "The public key.") var publicKey: String
        @Flag(help: "Look in the SYNC scope (device keys) instead of MAIN.") var sync = false

        func execute(_ ctx: CommandContext) async throws -> CommandOutput {
            try LookupCommand.run(.keypair(publicKey: publicKey, sync: sync), ctx)
        }
    }

    struct Account: ConsoleCommand {
        static let configuration = CommandConfiguration(abstract: "By Backup Account ID (the backup's id).")
        @Argument(help: "backup_account_<66 hex>.") var backupAccountId: String

        func execute(_ ctx: CommandContext) async throws -> CommandOutput {
            try LookupCommand.run(.account(backupAccountId), ctx)
        }
    }

    @MainActor static func run(_ query: LookupQuery, _ ctx: CommandContext) throws -> CommandOutput {
        let service = LookupService(store: try ctx.existingStore())
        let session = try ctx.session()
        let result: LookupResult
        do {
            result = try service.lookup(query, session: session)
        } catch  where error.code == "not_found" {
            throw Self.scopeHint(error, query: query, service: service, session: session)
        }
        return CommandOutput(json: result) { style in
            keyValueBlock(
                [("backup", style.cyan(result.backupId)), ("scope", result.scope), ("lookup key", result.lookupKey)]
                    + (result.factorId.map { [("factor", $0)] } ?? []), style)
        }
    }
}

extension LookupCommand {
    /// A keypair miss in one scope that the other scope would hit says so ("did you mean
    /// --sync?"); the probe neither shows nor audits the backup (the operator must ask for it).
    static func scopeHint(
        _ error: ConsoleError, query: LookupQuery, service: LookupService, session: Session
    ) -> ConsoleError {
        guard case .keypair(let key, let sync) = query,
            (try? service.resolve(.keypair(publicKey: key, sync: !sync), tenant: session.tenantName)) != nil
        else { return error }
        let hint =
            sync
            ? " It is in the MAIN scope (an iCloud Keychain key): did you mean `lookup keypair` without --sync?"
            : " It is in the SYNC scope (a device key): did you mean `lookup keypair \(key) --sync`?"
        return ConsoleError(error.kind, code: error.code, error.message + hint)
    }
}

/// `show BACKUP_ID`: one backup's factors, keys, blob and health.
struct ShowCommand: ConsoleCommand {
    static let configuration = CommandConfiguration(
        commandName: "show", abstract: "Show a backup: factors, devices, key kinds, sub-orgs, blob and health (viewer)."
    )
    @Argument(help: "The backup id (its Backup Account ID), or a unique prefix of it.") var backupId: String

    func execute(_ ctx: CommandContext) async throws -> CommandOutput {
        let report = try BackupInspector(store: try ctx.existingStore(), clock: ctx.clock).show(
            backupId: backupId, session: try ctx.session())
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

    func execute(_ ctx: CommandContext) async throws -> CommandOutput {
        var scan = HealthScan(store: try ctx.existingStore())
        guard (1...100_000).contains(limit) else {
            throw ConsoleError.invalid("invalid_limit", "--limit must be between 1 and 100000, got \(limit).")
        }
        scan.findingLimit = limit
        scan.filter = FindingFilter(minimum: failing ? .fail : .warn, check: try check.map(Self.checkName))
        let progress = Progress(label: "check")
        defer { progress.finish() }
        let onProgress: ((Int) throws(ConsoleError) -> Void)? =
            backupId == nil ? { done throws(ConsoleError) in try progress.update(done) } : nil
        let report = try scan.check(backupId: backupId, session: try ctx.session(), progress: onProgress)
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
                "Unknown check \"\(text.prefix(40))\"; the checks are "
                    + HealthCheckName.allCases.map(\.rawValue).joined(separator: ", ") + ".")
        }
        return name
    }
}

/// `stats`: the tenant by factor mix, devices, blob sizes and sub-orgs.
struct StatsCommand: ConsoleCommand {
    static let configuration = CommandConfiguration(
        commandName: "stats", abstract: "Counts by factor mix, devices per backup, blob sizes and sub-orgs (viewer).")

    func execute(_ ctx: CommandContext) async throws -> CommandOutput {
        let stats = try StatsService(store: try ctx.existingStore(), clock: ctx.clock).stats(session: try ctx.session())
        return CommandOutput(json: stats) { style in InspectRender.stats(stats, style) }
    }
}
