import Access
import ArgumentParser
import BackupModel
import BackupService
import ConsoleStore
import Foundation
import Turnkey

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
        @Option(help: "File with the tenant's Turnkey API key; mode 0600 or 0400.") var turnkeyApiKeyFile: String?
        @Option(help: "File with the deletion-only cleanup key; mode 0600 or 0400.") var cleanupKeyFile: String?
        @Option(help: "The live Backup Service (https://…); resets go through its /v1/reset.")
        var backupServiceUrl: String?

        func execute(_ ctx: CommandContext) async throws -> CommandOutput {
            let record = try TenantSpec(
                name: name, sandbox: sandbox, turnkeyURL: turnkeyUrl, turnkeyOrg: turnkeyOrg,
                apiKeyFile: turnkeyApiKeyFile, cleanupKeyFile: cleanupKeyFile, backupServiceURL: backupServiceUrl
            ).record(createdAt: ctx.clock.seconds)
            try await ctx.access.createTenant(record, by: try ctx.currentOperator()) { tenant throws(ConsoleError) in
                // A live tenant is saved only once Turnkey accepts its URL, parent org and API key,
                // and its Backup Service answers /health.
                guard !tenant.isSandbox, let url = tenant.turnkeyURL, let org = tenant.turnkeyOrgId,
                    let keyFile = tenant.turnkeyAPIKeyFile
                else { return }
                if let service = tenant.backupServiceURL {
                    try await Progress.waiting("checking the Backup Service") { () async throws(ConsoleError) in
                        try await BackupServiceHealth.check(service)
                    }
                }
                _ = try await Progress.waiting("checking Turnkey") { () async throws(ConsoleError) in
                    try await TurnkeyClient.verifyTenant(url: url, organizationId: org, apiKeyFile: keyFile)
                }
            }
            struct Created: Encodable {
                var tenant: String
                var sandbox: Bool
                var role: String
            }
            return .message(
                "Created \(record.isSandbox ? "sandbox" : "live") tenant \(record.name); you are its admin.",
                json: Created(tenant: record.name.rawValue, sandbox: record.isSandbox, role: Role.admin.name))
        }
    }

    struct Update: ConsoleCommand {
        static let configuration = CommandConfiguration(
            abstract: "Point a live tenant at its Backup Service (checked with /health first).",
            discussion: "Example: tenant update prod --backup-service-url https://backup.example.com")

        @Argument(help: "The tenant.") var name: String
        @Option(help: "The live Backup Service (https://…, http only on loopback).") var backupServiceUrl: String?
        @Flag(help: "Forget the Backup Service URL (resets are refused until one is set).")
        var clearBackupServiceUrl = false

        func execute(_ ctx: CommandContext) async throws -> CommandOutput {
            guard (backupServiceUrl != nil) != clearBackupServiceUrl else {
                throw ConsoleError.usage("Give --backup-service-url URL or --clear-backup-service-url.")
            }
            let url = try backupServiceUrl.map { (text) throws(ConsoleError) in try TenantSpec.serviceURL(text) }
            let session = try ctx.access.session(operator: try ctx.currentOperator(), tenant: try TenantName(name))
            try await ctx.access.setBackupServiceURL(url, session: session) { url throws(ConsoleError) in
                try await BackupServiceHealth.check(url)
            }
            return .message(
                url.map { "Tenant \(name) now resets through the Backup Service at \($0)." }
                    ?? "Tenant \(name) has no Backup Service URL now; resets are refused until one is set.",
                json: ["tenant": name, "backupServiceUrl": url ?? ""])
        }
    }

    struct List: ConsoleCommand, ListsRecords {
        static let configuration = CommandConfiguration(abstract: "List the tenants you hold a role in.")

        struct Row: Encodable {
            var name: String
            var sandbox: Bool
            var role: String
            var turnkeyOrg: String?
            var backupServiceUrl: String?
        }

        func execute(_ ctx: CommandContext) async throws -> CommandOutput {
            let rows = try ctx.access.tenants(visibleTo: try ctx.currentOperator()).map {
                Row(
                    name: $0.0.name.rawValue, sandbox: $0.0.isSandbox, role: $0.1.name, turnkeyOrg: $0.0.turnkeyOrgId,
                    backupServiceUrl: $0.0.backupServiceURL)
            }
            let current = ctx.tenantName
            var output = CommandOutput(json: ["tenants": rows]) { style in
                TextTable(
                    ["", "TENANT", "KIND", "ROLE", "TURNKEY ORG", "BACKUP SERVICE"],
                    rows.map {
                        [
                            $0.name == current ? "*" : "", $0.name, $0.sandbox ? "sandbox" : "live", $0.role,
                            $0.turnkeyOrg ?? "-", $0.sandbox ? "(sandbox)" : ($0.backupServiceUrl ?? "-"),
                        ]
                    }
                ).render(style)
            }
            output.records = ListRecords(
                ["name", "sandbox", "role", "turnkeyOrg", "backupServiceUrl"],
                rows.map { [$0.name, "\($0.sandbox)", $0.role, $0.turnkeyOrg ?? "", $0.backupServiceUrl ?? ""] })
            return output
        }
    }
}

/// Validation of `tenant create` flags into a record. Key files must exist and be readable
/// by their owner only; their contents are never read here.
struct TenantSpec {
    var name: String
    var sandbox: Bool
    var turnkeyURL: String?
    var turnkeyOrg: String?
    var apiKeyFile: String?
    var cleanupKeyFile: String?
    var backupServiceURL: String?

    /// An https URL (http only on loopback), normalised without a trailing slash.
    static func serviceURL(_ text: String) throws(ConsoleError) -> String {
        let url = try BackupServiceClient.normalize(text)
        guard let parsed = URL(string: url),
            parsed.scheme == "https"
                || ["127.0.0.1", "localhost", "::1", "[::1]"].contains(parsed.host ?? "")
        else {
            throw .invalid(
                "invalid_url", "--backup-service-url must be an https URL (http only on loopback), got \(url).")
        }
        return url
    }

    func record(createdAt: Int64) throws(ConsoleError) -> TenantRecord {
        let tenant = try TenantName(name)
        if sandbox {
            guard turnkeyURL == nil, turnkeyOrg == nil, apiKeyFile == nil, backupServiceURL == nil else {
                throw .usage(
                    "A --sandbox tenant uses the in-process Turnkey and Backup Service sandboxes; drop the --turnkey-* and --backup-service-url options."
                )
            }
        } else {
            guard let url = turnkeyURL, let org = turnkeyOrg, let key = apiKeyFile else {
                throw .usage(
                    "A live tenant needs --turnkey-url, --turnkey-org and --turnkey-api-key-file (or pass --sandbox).")
            }
            guard let parsed = URL(string: url), let scheme = parsed.scheme, parsed.host != nil,
                scheme == "https"
                    || (scheme == "http" && ["127.0.0.1", "localhost", "::1"].contains(parsed.host ?? ""))
            else {
                throw .invalid(
                    "invalid_turnkey_url", "--turnkey-url must be an https URL (http only on loopback), got \(url).")
            }
            guard !org.isEmpty, org.count <= 64, org.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "-" }) else {
                throw .invalid("invalid_turnkey_org", "--turnkey-org must be an organization id (a uuid).")
            }
            try Self.checkKeyFile(key, option: "--turnkey-api-key-file")
        }
        if let cleanupKeyFile { try Self.checkKeyFile(cleanupKeyFile, option: "--cleanup-key-file") }
        return TenantRecord(
            name: tenant, isSandbox: sandbox, turnkeyURL: turnkeyURL, turnkeyOrgId: turnkeyOrg,
            turnkeyAPIKeyFile: apiKeyFile.map(Self.absolute), cleanupKeyFile: cleanupKeyFile.map(Self.absolute),
            backupServiceURL: try backupServiceURL.map { (text) throws(ConsoleError) in try Self.serviceURL(text) },
            createdAt: createdAt)
    }

    static func absolute(_ path: String) -> String {
        URL(fileURLWithPath: path).standardizedFileURL.path
    }

    /// The key file must exist, be readable by its owner only, and hold a P-256 key.
    static func checkKeyFile(_ path: String, option: String) throws(ConsoleError) {
        do {
            _ = try TurnkeyKeyFile.load(path, what: option)
        } catch {
            throw error.code == "internal_error" ? .invalid("invalid_key_file", "\(option): \(error.message)") : error
        }
    }
}

/// The Backup Service's `/health`, required before a tenant is pointed at it.
enum BackupServiceHealth {
    static func check(_ url: String) async throws(ConsoleError) {
        let client = try BackupServiceClient(baseURL: url, timeoutMillis: 10_000, attempts: 2)
        let health: BackupServiceWire.Health
        do throws(BackupServiceError) {
            health = try await client.health()
        } catch {
            throw error.consoleError.context("The Backup Service at \(url) failed its health check")
        }
        guard health.status == "ok" else {
            throw ConsoleError(
                .remote, code: "backup_service_unhealthy",
                "The Backup Service at \(url) answered /health with status \"\(health.status.prefix(32))\", not ok.")
        }
    }
}
