import Access
import ArgumentParser
import BackupModel
import ConsoleStore
import Foundation
import Turnkey

struct TenantCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tenant", abstract: "Create and list tenants (deployments).",
        subcommands: [Create.self, List.self])

    struct Create: ConsoleCommand {
        static let configuration = CommandConfiguration(
            abstract: "Create a tenant: a sandbox, or a live deployment with its Turnkey parent org.")

        @Argument(help: "Tenant name: a-z, 0-9, '-', starting with a letter.") var name: String
        @Flag(help: "A sandbox tenant: in-process Turnkey sandbox, seedable.") var sandbox = false
        @Option(help: "Turnkey API base URL (live tenants).") var turnkeyUrl: String?
        @Option(help: "Turnkey parent organization id (live tenants).") var turnkeyOrg: String?
        @Option(help: "File with the tenant's Turnkey API key; mode 0600 or 0400.") var turnkeyApiKeyFile: String?
        @Option(help: "File with the deletion-only cleanup key; mode 0600 or 0400.") var cleanupKeyFile: String?

        func execute(_ ctx: CommandContext) async throws -> CommandOutput {
            let record = try TenantSpec(
                name: name, sandbox: sandbox, turnkeyURL: turnkeyUrl, turnkeyOrg: turnkeyOrg,
                apiKeyFile: turnkeyApiKeyFile, cleanupKeyFile: cleanupKeyFile
            ).record(createdAt: ctx.clock.seconds)
            try await ctx.access.createTenant(record, by: try ctx.currentOperator()) { tenant throws(ConsoleError) in
                // A live tenant is saved only once Turnkey accepts its URL, parent org and API key.
                guard !tenant.isSandbox, let url = tenant.turnkeyURL, let org = tenant.turnkeyOrgId,
                    let keyFile = tenant.turnkeyAPIKeyFile
                else { return }
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

    struct List: ConsoleCommand {
        static let configuration = CommandConfiguration(abstract: "List the tenants you hold a role in.")

        struct Row: Encodable {
            var name: String
            var sandbox: Bool
            var role: String
            var turnkeyOrg: String?
        }

        func execute(_ ctx: CommandContext) async throws -> CommandOutput {
            let rows = try ctx.access.tenants(visibleTo: try ctx.currentOperator()).map {
                Row(name: $0.0.name.rawValue, sandbox: $0.0.isSandbox, role: $0.1.name, turnkeyOrg: $0.0.turnkeyOrgId)
            }
            let current = ctx.tenantName
            return CommandOutput(json: ["tenants": rows]) { style in
                TextTable(
                    ["", "TENANT", "KIND", "ROLE", "TURNKEY ORG"],
                    rows.map {
                        [
                            $0.name == current ? "*" : "", $0.name, $0.sandbox ? "sandbox" : "live", $0.role,
                            $0.turnkeyOrg ?? "-",
                        ]
                    }
                ).render(style)
            }
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

    func record(createdAt: Int64) throws(ConsoleError) -> TenantRecord {
        let tenant = try TenantName(name)
        if sandbox {
            guard turnkeyURL == nil, turnkeyOrg == nil, apiKeyFile == nil else {
                throw .usage("A --sandbox tenant uses the in-process Turnkey sandbox; drop the --turnkey-* options.")
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
