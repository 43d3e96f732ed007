import Access
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
            @Option(help: "Write the new token to this new file (mode 0600) instead of printing it.")
            var tokenOut: String?

            struct Result: Encodable {
                var `operator`: String
                /// Absent when the token went to a file.
                var token: String?
                var tokenFile: String?
            }

            /// Rotating your own token also rewrites the token file this run signed in with (a
            /// context's, or `--token-file`), so the next command still works; without a file
            /// (`BACKUPCTL_TOKEN`) the session keeps the new token and the variable is stale.
            func execute(_ ctx: CommandContext) async throws -> CommandOutput {
                let out = try tokenOut.map { (path) throws(ConsoleError) in
                    try SecretFile.create(path, what: "--token-out")
                }
                let own = (try? await ctx.perform(WhoamiOperation()))?.operator == name
                let rotated: OperatorTokenRotateOperation.Output
                do {
                    rotated = try await ctx.perform(OperatorTokenRotateOperation(operatorName: name))
                } catch {
                    out?.discard()
                    throw error
                }
                let bytes = Array(rotated.token.utf8) + [0x0A]
                try out?.write(bytes)
                var note = "The old token no longer works."
                var file = out?.path
                if own, let path = ctx.settings.tokenFile {
                    try SecretFile.replace(path, with: bytes)
                    file = file ?? path
                    note += " Your token file \(path) now holds the new one."
                } else if own {
                    ctx.tokenOverride = try OperatorToken.parse(Array(rotated.token.utf8))
                    note += " This session uses the new one; BACKUPCTL_TOKEN still holds the old."
                }
                let result = Result(
                    operator: rotated.operator, token: file == nil ? rotated.token : nil, tokenFile: file)
                return CommandOutput(json: result) { style in
                    keyValueBlock(
                        [
                            ("operator", rotated.operator),
                            ("token", file.map { "written to \($0) (mode 0600)" } ?? rotated.token),
                        ],
                        style) + "\n"
                        + style.dim(
                            file == nil ? note + " The new one is shown only now; store it with umask 077." : note)
                }
            }
        }
    }
}
