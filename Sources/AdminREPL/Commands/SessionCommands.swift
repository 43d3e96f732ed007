import Access
import ArgumentParser
import BackupModel
import ConsoleService
import ConsoleStore

struct InitCommand: ConsoleCommand {
    static let configuration = CommandConfiguration(
        commandName: "init", abstract: "Create the store and its first admin; prints the token once.")

    @Option(help: "Name of the first operator (becomes admin of the 'sandbox' tenant).")
    var admin: String

    struct Result: Encodable {
        var `operator`: String
        var token: String
    }

    func execute(_ ctx: CommandContext) async throws -> CommandOutput {
        let name = try OperatorName(admin)
        let access = AccessService(store: try await ctx.store(), clock: ctx.clock, random: ctx.random)
        let token = try await access.bootstrap(admin: name)
        let text = token.withUnsafeBytes { String(decoding: $0, as: UTF8.self) }
        let result = Result(operator: name.rawValue, token: text)
        return CommandOutput(json: result) { style in
            keyValueBlock([("operator", name.rawValue), ("token", text)], style) + "\n"
                + style.dim(
                    "The token is shown only now. Save it to a file only you can read (chmod 600) and pass --token-file."
                )
        }
    }
}

struct UseCommand: ConsoleCommand {
    static let configuration = CommandConfiguration(commandName: "use", abstract: "Switch to another tenant.")

    @Argument(help: "Tenant name.", completion: .shellCommand(CompletionRoot.tenantNames)) var tenant: String

    func execute(_ ctx: CommandContext) async throws -> CommandOutput {
        let chosen = try await ctx.perform(UseOperation(tenant: tenant))
        ctx.tenantName = chosen.tenant
        return .message("Using tenant \(chosen.tenant) as \(chosen.role).", json: chosen)
    }
}

struct WhoamiCommand: ConsoleCommand {
    static let configuration = CommandConfiguration(
        commandName: "whoami", abstract: "Show the operator, the current tenant and your roles.")

    /// The server's answer, and where it came from: `server` (its URL) and `context` (the saved
    /// context used), both absent in-process.
    struct Result: Encodable {
        var answer: WhoamiOperation.Output
        var server: String?
        var context: String?

        private enum Keys: String, CodingKey { case server, context }

        func encode(to encoder: any Encoder) throws {
            try answer.encode(to: encoder)
            var container = encoder.container(keyedBy: Keys.self)
            try container.encodeIfPresent(server, forKey: .server)
            try container.encodeIfPresent(context, forKey: .context)
        }
    }

    func execute(_ ctx: CommandContext) async throws -> CommandOutput {
        let result = try await ctx.perform(WhoamiOperation())
        let shown = Result(answer: result, server: ctx.settings.server, context: ctx.settings.contextName)
        return CommandOutput(json: shown) { style in
            var rows = [
                ("operator", result.operator),
                ("tenant", result.tenant.map { "\($0) (\(result.role ?? "?"))" } ?? "none selected"),
                ("roles", result.grants.map { "\($0["tenant"] ?? "")=\($0["role"] ?? "")" }.joined(separator: ", ")),
            ]
            if let server = shown.server {
                rows.append(("server", server + (shown.context.map { " (context \($0))" } ?? "")))
            }
            return keyValueBlock(rows, style)
        }
    }
}

struct QuitCommand: ConsoleCommand {
    static let configuration = CommandConfiguration(commandName: "quit", abstract: "Leave the console.")
    func execute(_ ctx: CommandContext) async throws -> CommandOutput {
        ctx.quitRequested = true
        return .empty
    }
}

struct ExitCommand: ConsoleCommand {
    static let configuration = CommandConfiguration(commandName: "exit", abstract: "Leave the console.")
    func execute(_ ctx: CommandContext) async throws -> CommandOutput {
        ctx.quitRequested = true
        return .empty
    }
}
