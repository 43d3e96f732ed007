import ArgumentParser
import BackupModel
import ConsoleService

extension OperatorCommand {
    /// `operator remove NAME`: the operator and its grants go; its token stops working.
    struct Remove: ConsoleCommand {
        static let configuration = CommandConfiguration(
            abstract: "Remove an operator and all its roles; its token stops working (admin of all its tenants).")

        @Argument var name: String

        func execute(_ ctx: CommandContext) async throws -> CommandOutput {
            let checked = try await ctx.perform(OperatorRemoveOperation(operatorName: name, checkOnly: true))
            try ctx.confirmDestructive(
                "Remove operator \(checked.operator) and all its roles", tenant: try TenantName(checked.tenant))
            let removed = try await ctx.perform(OperatorRemoveOperation(operatorName: name, checkOnly: false))
            return .message(
                "Removed operator \(removed.operator); its token no longer works.", json: ["operator": removed.operator]
            )
        }
    }

    /// `operator token rotate NAME`.
    struct Token: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Operator tokens.", subcommands: [Rotate.self])

        struct Rotate: ConsoleCommand {
            static let configuration = CommandConfiguration(
                abstract:
                    "Issue a new token for an operator (yourself, or as admin); the old one stops working at once.")

            @Argument var name: String

            func execute(_ ctx: CommandContext) async throws -> CommandOutput {
                let rotated = try await ctx.perform(OperatorTokenRotateOperation(operatorName: name))
                return CommandOutput(json: rotated) { style in
                    keyValueBlock([("operator", rotated.operator), ("token", rotated.token)], style) + "\n"
                        + style.dim(
                            "The old token no longer works. The new one is shown only now; store it with umask 077.")
                }
            }
        }
    }
}
