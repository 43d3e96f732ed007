import ArgumentParser
import BackupModel
import ConsoleService

struct OperatorCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "operator", abstract: "Manage operators and their roles (admin).",
        subcommands: [Add.self, Grant.self, Revoke.self, List.self, Remove.self, Token.self])

    struct Add: ConsoleCommand {
        static let configuration = CommandConfiguration(
            abstract: "Add an operator with a role in a tenant; prints its token once.")

        @Argument var name: String
        @Option(help: "Tenant the role applies to.") var tenant: String
        @Option(help: "viewer, support, cleaner or admin.") var role: Role

        func execute(_ ctx: CommandContext) async throws -> CommandOutput {
            let added = try await ctx.perform(OperatorAddOperation(operatorName: name, tenant: tenant, role: role))
            return CommandOutput(json: added) { style in
                keyValueBlock(
                    [
                        ("operator", added.operator), ("tenant", added.tenant), ("role", added.role),
                        ("token", added.token),
                    ],
                    style)
                    + "\n" + style.dim("The token is shown only now; hand it over through a secure channel.")
            }
        }
    }

    struct Grant: ConsoleCommand {
        static let configuration = CommandConfiguration(abstract: "Set an operator's role in a tenant.")

        @Argument var name: String
        @Option var tenant: String
        @Option(help: "viewer, support, cleaner or admin.") var role: Role

        func execute(_ ctx: CommandContext) async throws -> CommandOutput {
            let granted = try await ctx.perform(OperatorGrantOperation(operatorName: name, tenant: tenant, role: role))
            return .message("\(granted.operator) is now \(role) in \(tenant).", json: granted)
        }
    }

    struct Revoke: ConsoleCommand {
        static let configuration = CommandConfiguration(abstract: "Remove an operator's role in a tenant.")

        @Argument var name: String
        @Option var tenant: String
        @Option(help: "Ignored; accepted for symmetry with grant.") var role: String?

        func execute(_ ctx: CommandContext) async throws -> CommandOutput {
            let revoked = try await ctx.perform(OperatorGrantOperation(operatorName: name, tenant: tenant, role: nil))
            return .message(
                "\(revoked.operator) no longer has a role in \(tenant).",
                json: ["operator": revoked.operator, "tenant": tenant])
        }
    }

    struct List: ConsoleCommand, ListsRecords {
        static let configuration = CommandConfiguration(abstract: "List operators with a role in the current tenant.")

        func execute(_ ctx: CommandContext) async throws -> CommandOutput {
            let result = try await ctx.perform(OperatorListOperation())
            let rows = result.operators.map { [$0["operator"] ?? "", $0["role"] ?? ""] }
            var output = CommandOutput(json: result) { style in
                TextTable(["OPERATOR", "ROLE"], rows).render(style)
            }
            output.records = ListRecords(["operator", "role"], rows)
            return output
        }
    }
}
