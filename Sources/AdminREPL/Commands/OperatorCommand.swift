import Access
import ArgumentParser
import BackupModel
import ConsoleStore

struct OperatorCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "operator", abstract: "Manage operators and their roles (admin).",
        subcommands: [Add.self, Grant.self, Revoke.self, List.self, Remove.self, Token.self])

    struct Add: ConsoleCommand {
        static let configuration = CommandConfiguration(
            abstract: "Add an operator with a role in a tenant; prints its token once.")

        @Argument var name: String
        @Option(help: "Tenant the role applies to.") var tenant: String
        @Option(help: "viewer, support, cleaner or admin.") var role: String

        func execute(_ ctx: CommandContext) async throws -> CommandOutput {
            let name = try OperatorName(name)
            let role = try Role(name: role)
            let session = try ctx.access.session(operator: try ctx.currentOperator(), tenant: try TenantName(tenant))
            let token = try ctx.access.addOperator(name, role: role, session: session)
            let text = token.withUnsafeBytes { String(decoding: $0, as: UTF8.self) }
            return CommandOutput(json: ["operator": name.rawValue, "tenant": tenant, "role": role.name, "token": text])
            {
                style in
                keyValueBlock(
                    [("operator", name.rawValue), ("tenant", tenant), ("role", role.name), ("token", text)], style)
                    + "\n" + style.dim("The token is shown only now; hand it over through a secure channel.")
            }
        }
    }

    struct Grant: ConsoleCommand {
        static let configuration = CommandConfiguration(abstract: "Set an operator's role in a tenant.")

        @Argument var name: String
        @Option var tenant: String
        @Option(help: "viewer, support, cleaner or admin.") var role: String

        func execute(_ ctx: CommandContext) async throws -> CommandOutput {
            let name = try OperatorName(name)
            let role = try Role(name: role)
            let session = try ctx.access.session(operator: try ctx.currentOperator(), tenant: try TenantName(tenant))
            try ctx.access.grant(name, role: role, session: session)
            return .message(
                "\(name) is now \(role) in \(tenant).",
                json: ["operator": name.rawValue, "tenant": tenant, "role": role.name])
        }
    }

    struct Revoke: ConsoleCommand {
        static let configuration = CommandConfiguration(abstract: "Remove an operator's role in a tenant.")

        @Argument var name: String
        @Option var tenant: String
        @Option(help: "Ignored; accepted for symmetry with grant.") var role: String?

        func execute(_ ctx: CommandContext) async throws -> CommandOutput {
            let name = try OperatorName(name)
            let session = try ctx.access.session(operator: try ctx.currentOperator(), tenant: try TenantName(tenant))
            try ctx.access.revoke(name, session: session)
            return .message(
                "\(name) no longer has a role in \(tenant).", json: ["operator": name.rawValue, "tenant": tenant])
        }
    }

    struct List: ConsoleCommand, ListsRecords {
        static let configuration = CommandConfiguration(abstract: "List operators with a role in the current tenant.")

        func execute(_ ctx: CommandContext) async throws -> CommandOutput {
            let session = try ctx.session()
            let grants = try ctx.access.operators(session: session)
            struct Result: Encodable {
                var tenant: String
                var operators: [[String: String]]
            }
            let result = Result(
                tenant: session.tenantName.rawValue,
                operators: grants.map { ["operator": $0.operatorName.rawValue, "role": $0.role.name] })
            var output = CommandOutput(json: result) { style in
                TextTable(["OPERATOR", "ROLE"], grants.map { [$0.operatorName.rawValue, $0.role.name] }).render(style)
            }
            output.records = ListRecords(
                ["operator", "role"], grants.map { [$0.operatorName.rawValue, $0.role.name] })
            return output
        }
    }
}
