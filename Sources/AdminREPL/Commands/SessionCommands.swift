import Access
import ArgumentParser
import BackupModel
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
        let access = AccessService(store: try ctx.store(), clock: ctx.clock, random: ctx.random)
        let token = try access.bootstrap(admin: name)
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
        let name = try TenantName(tenant)
        let session = try ctx.session(operator: try ctx.currentOperator(), tenant: name)
        ctx.tenantName = name.rawValue
        return .message(
            "Using tenant \(name) as \(session.role).",
            json: ["tenant": name.rawValue, "role": session.role.name])
    }
}

struct WhoamiCommand: ConsoleCommand {
    static let configuration = CommandConfiguration(
        commandName: "whoami", abstract: "Show the operator, the current tenant and your roles.")

    struct Result: Encodable {
        var `operator`: String
        var tenant: String?
        var role: String?
        var canCreateTenants: Bool
        var grants: [[String: String]]
    }

    func execute(_ ctx: CommandContext) async throws -> CommandOutput {
        let op = try ctx.currentOperator()
        let visible = try ctx.access.tenants(visibleTo: op)
        // A tenant asked for (--tenant, use, $BACKUPCTL_TENANT) must be one the operator holds;
        // without one, whoami still answers for an operator with several tenants.
        let current = ctx.tenantName != nil ? try ctx.session() : try? ctx.session()
        let result = Result(
            operator: op.name.rawValue, tenant: current?.tenantName.rawValue, role: current?.role.name,
            canCreateTenants: op.canCreateTenants,
            grants: visible.map { ["tenant": $0.0.name.rawValue, "role": $0.1.name] })
        return CommandOutput(json: result) { style in
            var pairs = [("operator", op.name.rawValue)]
            pairs.append(("tenant", current.map { "\($0.tenantName) (\($0.role))" } ?? "none selected"))
            pairs.append(("roles", visible.map { "\($0.0.name)=\($0.1)" }.joined(separator: ", ")))
            return keyValueBlock(pairs, style)
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
