import ArgumentParser
import BackupModel
import ConsoleService

struct TenantCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tenant", abstract: "Create, update, list and delete tenants (deployments).",
        subcommands: [Create.self, Update.self, List.self, Delete.self])

    struct Create: ConsoleCommand {
        static let configuration = CommandConfiguration(
            abstract: "Create a tenant: a sandbox, or a live deployment with its Turnkey parent org.")

        @Argument(help: "Tenant name: a-z, 0-9, '-', starting with a letter.") var name: String
        @Flag(help: "A sandbox tenant: in-process Turnkey sandbox, seedable.") var sandbox = false
        @Option(help: "Turnkey API base URL (live tenants).") var turnkeyUrl: String?
        @Option(help: "Turnkey parent organization id (live tenants).") var turnkeyOrg: String?
        @Option(
            help: "File with the tenant's Turnkey API key, on the console's machine (the server's); mode 0600 or 0400.")
        var turnkeyApiKeyFile: String?
        @Option(help: "File with the deletion-only cleanup key, on the console's machine; mode 0600 or 0400.")
        var cleanupKeyFile: String?
        @Option(help: "The live Backup Service (https://…); resets go through its /v1/reset.")
        var backupServiceUrl: String?

        func execute(_ ctx: CommandContext) async throws -> CommandOutput {
            let spec = TenantSpec(
                name: name, sandbox: sandbox, turnkeyURL: turnkeyUrl, turnkeyOrg: turnkeyOrg,
                apiKeyFile: turnkeyApiKeyFile, cleanupKeyFile: cleanupKeyFile, backupServiceURL: backupServiceUrl)
            let created = try await ctx.performJob(TenantCreateOperation(spec), label: "tenant create")
            return .message(
                "Created \(created.sandbox ? "sandbox" : "live") tenant \(created.tenant); you are its admin.",
                json: created)
        }
    }

    struct Update: ConsoleCommand {
        static let configuration = CommandConfiguration(
            abstract:
                "Point a live tenant at its Backup Service (checked with /health first), rotate its Turnkey credentials, or set its snapshot retire threshold.",
            discussion: """
                A complete snapshot that would retire more than the threshold — --retire-max-percent of the \
                tenant's backups (at least one) and at most --retire-max-count (defaults 1 and 100) — changes \
                nothing unless imported with --retire-at-most N. The URL, the Turnkey credentials and the \
                threshold are changed by separate commands.
                Examples: tenant update prod --backup-service-url https://backup.example.com
                tenant update prod --turnkey-api-key-file /etc/backupctl/prod-api-2.key   (checked with Turnkey's whoami; \
                needs tenants:create, since the files are the server's)
                """)

        @Argument(help: "The tenant.") var name: String
        @Option(help: "The live Backup Service (https://…, http only on loopback).") var backupServiceUrl: String?
        @Flag(help: "Forget the Backup Service URL (resets are refused until one is set).")
        var clearBackupServiceUrl = false
        @Option(
            help: ArgumentHelp("A snapshot may retire at most this percentage of the backups (0…100).", valueName: "p"))
        var retireMaxPercent: Int?
        @Option(help: ArgumentHelp("… and at most this many backups (0…1000000000).", valueName: "n"))
        var retireMaxCount: Int?
        @Option(help: "The Turnkey API's URL.") var turnkeyUrl: String?
        @Option(help: "A new Turnkey API key file (mode 0600, on the console's host).") var turnkeyApiKeyFile: String?
        @Option(help: "A new cleanup key file (mode 0600, on the console's host).") var cleanupKeyFile: String?

        func execute(_ ctx: CommandContext) async throws -> CommandOutput {
            let serviceURL = backupServiceUrl != nil || clearBackupServiceUrl
            let threshold = retireMaxPercent != nil || retireMaxCount != nil
            let turnkey = turnkeyUrl != nil || turnkeyApiKeyFile != nil || cleanupKeyFile != nil
            guard [serviceURL, threshold, turnkey].filter({ $0 }).count <= 1 else {
                throw ConsoleError.usage(
                    "Change the Backup Service URL, the Turnkey credentials and the retire threshold in separate commands."
                )
            }
            if threshold {
                let updated = try await ctx.perform(
                    TenantRetireThresholdOperation(
                        tenant: name, retireMaxPercent: retireMaxPercent, retireMaxCount: retireMaxCount))
                return .message(
                    "A complete snapshot may now retire at most \(updated.retireMaxPercent)% of tenant \(name)'s backups (at least one), and at most \(updated.retireMaxCount), without --retire-at-most.",
                    json: updated)
            }
            if turnkey {
                let updated = try await ctx.performJob(
                    TenantTurnkeyUpdateOperation(
                        tenant: name, turnkeyURL: turnkeyUrl, apiKeyFile: turnkeyApiKeyFile,
                        cleanupKeyFile: cleanupKeyFile
                    ), label: "tenant update")
                return .message(
                    "Tenant \(name) now uses the Turnkey credentials given (checked with whoami).", json: updated)
            }
            guard (backupServiceUrl != nil) != clearBackupServiceUrl else {
                throw ConsoleError.usage(
                    "Give --backup-service-url URL or --clear-backup-service-url, new Turnkey credentials, or --retire-max-percent / --retire-max-count."
                )
            }
            let updated = try await ctx.perform(TenantUpdateOperation(tenant: name, backupServiceURL: backupServiceUrl))
            let url = updated.backupServiceUrl
            return .message(
                url.isEmpty
                    ? "Tenant \(name) has no Backup Service URL now; resets are refused until one is set."
                    : "Tenant \(name) now resets through the Backup Service at \(url).",
                json: updated)
        }
    }

    struct List: ConsoleCommand, ListsRecords {
        static let configuration = CommandConfiguration(abstract: "List the tenants you hold a role in.")

        func execute(_ ctx: CommandContext) async throws -> CommandOutput {
            let listing = try await ctx.perform(TenantListOperation())
            let rows = listing.tenants
            let current = ctx.tenantName
            var output = CommandOutput(json: listing) { style in
                TextTable(
                    ["", "TENANT", "KIND", "ROLE", "TURNKEY ORG", "BACKUP SERVICE", "RETIRE AT MOST", "KEYS"],
                    rows.map {
                        [
                            $0.name == current ? "*" : "", $0.name, $0.sandbox ? "sandbox" : "live", $0.role,
                            $0.turnkeyOrg ?? "-", $0.sandbox ? "(sandbox)" : ($0.backupServiceUrl ?? "-"),
                            Self.retire($0), Self.keys($0),
                        ]
                    }
                ).render(style)
            }
            output.records = ListRecords(
                [
                    "name", "sandbox", "role", "turnkeyOrg", "backupServiceUrl", "turnkeyApiKey", "cleanupKey",
                    "retireMaxPercent", "retireMaxCount",
                ],
                rows.map {
                    [
                        $0.name, "\($0.sandbox)", $0.role, $0.turnkeyOrg ?? "", $0.backupServiceUrl ?? "",
                        "\($0.turnkeyApiKey)", "\($0.cleanupKey)", $0.retireMaxPercent.map(String.init) ?? "",
                        $0.retireMaxCount.map(String.init) ?? "",
                    ]
                })
            return output
        }

        /// The retire threshold: `1% ≤ 100` (`-` from a server that does not say).
        static func retire(_ row: TenantListOperation.Row) -> String {
            guard let percent = row.retireMaxPercent, let count = row.retireMaxCount else { return "-" }
            return "\(percent)% ≤ \(count)"
        }

        /// Which key files the tenant has (their paths stay with the console that reads them).
        static func keys(_ row: TenantListOperation.Row) -> String {
            if row.sandbox { return "(sandbox)" }
            let keys = [row.turnkeyApiKey ? "api" : nil, row.cleanupKey ? "cleanup" : nil].compactMap { $0 }
            return keys.isEmpty ? "-" : keys.joined(separator: "+")
        }
    }
}
