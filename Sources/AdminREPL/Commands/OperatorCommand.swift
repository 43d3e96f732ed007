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
        @Option(help: "Write the token to this new file (mode 0600) instead of printing it.") var tokenOut: String?

        struct Result: Encodable {
            var `operator`: String
            var tenant: String
            var role: String
            /// Absent when the token went to `--token-out`.
            var token: String?
            var tokenFile: String?
        }

        func execute(_ ctx: CommandContext) async throws -> CommandOutput {
            // An unusable --token-out is refused before the operator (and its token) exists.
            let out = try tokenOut.map { (path) throws(ConsoleError) in try SecretFile.create(path, what: "--token-out")
            }
            let added: OperatorAddOperation.Output
            do {
                added = try await ctx.perform(OperatorAddOperation(operatorName: name, tenant: tenant, role: role))
            } catch {
                out?.discard()
                throw error
            }
            try out?.write(Array(added.token.utf8) + [0x0A])
            let result = Result(
                operator: added.operator, tenant: added.tenant, role: added.role, token: out == nil ? added.token : nil,
                tokenFile: out?.path)
            return CommandOutput(json: result) { style in
                keyValueBlock(
                    [
                        ("operator", added.operator), ("tenant", added.tenant), ("role", added.role),
                        ("token", out.map { "written to \($0.path) (mode 0600)" } ?? added.token),
                    ],
                    style)
                    + "\n" + style.dim("The token is shown only now; hand it over through a secure channel.")
            }
        }
    }

    struct Grant: ConsoleCommand {
        static let configuration = CommandConfiguration(
            abstract: "Set an operator's role in a tenant, or give it the global right to create tenants.")

        @Argument var name: String
        @Option(help: "The tenant of the role.") var tenant: String?
        @Option(help: "viewer, support, cleaner or admin.") var role: Role?
        @Option(help: "A global right instead of a role: tenants:create (only its holders may grant it).")
        var right: String?

        func execute(_ ctx: CommandContext) async throws -> CommandOutput {
            if let right {
                guard tenant == nil, role == nil else {
                    throw ConsoleError.usage("--right is global: give it without --tenant and --role.")
                }
                let granted = try await ctx.perform(
                    OperatorRightOperation(operatorName: name, right: right, allowed: true))
                return .message("\(granted.operator) now holds \(right).", json: granted)
            }
            guard let tenant, let role else {
                throw ConsoleError.usage("operator grant NAME --tenant T --role R (or --right tenants:create).")
            }
            let granted = try await ctx.perform(OperatorGrantOperation(operatorName: name, tenant: tenant, role: role))
            return .message("\(granted.operator) is now \(role) in \(tenant).", json: granted)
        }
    }

    struct Revoke: ConsoleCommand {
        static let configuration = CommandConfiguration(abstract: "Remove an operator's role in a tenant.")

        @Argument var name: String
        @Option(help: "The tenant of the role.") var tenant: String?
        @Option(help: "Ignored; accepted for symmetry with grant.") var role: String?
        @Option(help: "Take a global right instead: tenants:create (its last holder keeps it).") var right: String?

        func execute(_ ctx: CommandContext) async throws -> CommandOutput {
            if let right {
                guard tenant == nil else { throw ConsoleError.usage("--right is global: give it without --tenant.") }
                let revoked = try await ctx.perform(
                    OperatorRightOperation(operatorName: name, right: right, allowed: false))
                return .message("\(revoked.operator) no longer holds \(right).", json: revoked)
            }
            guard let tenant else {
                throw ConsoleError.usage("operator revoke NAME --tenant T (or --right tenants:create).")
            }
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
