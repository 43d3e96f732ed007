import Access
import ArgumentParser
import BackupModel
import ConsoleStore

extension OperatorCommand {
    /// `operator remove NAME`: the operator and its grants go; its token stops working.
    struct Remove: ConsoleCommand {
        static let configuration = CommandConfiguration(
            abstract: "Remove an operator and all its roles; its token stops working (admin of all its tenants).")

        @Argument var name: String

        func execute(_ ctx: CommandContext) async throws -> CommandOutput {
            let name = try OperatorName(name)
            let session = try ctx.session()
            try ctx.confirmDestructive("Remove operator \(name) and all its roles", tenant: session.tenantName)
            try ctx.access.removeOperator(name, session: session)
            return .message("Removed operator \(name); its token no longer works.", json: ["operator": name.rawValue])
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
                let name = try OperatorName(name)
                let token = try ctx.access.rotateToken(name, session: try ctx.session())
                let text = token.withUnsafeBytes { String(decoding: $0, as: UTF8.self) }
                return CommandOutput(json: ["operator": name.rawValue, "token": text]) { style in
                    keyValueBlock([("operator", name.rawValue), ("token", text)], style) + "\n"
                        + style.dim(
                            "The old token no longer works. The new one is shown only now; store it with umask 077.")
                }
            }
        }
    }
}
