import ArgumentParser
import BackupModel
import ConsoleClient
import Foundation

/// `context add|use|list|remove`: named servers to work against, kept in the client config
/// (``ClientConfig``). Local commands: they read no store and call no server.
struct ContextCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "context", abstract: "Named `backupctl serve` servers to work against, like kubectl's contexts.",
        subcommands: [Add.self, Use.self, List.self, Remove.self])

    struct Entry: Encodable {
        var name: String
        var current: Bool
        var server: String
        var tokenFile: String?
        var caFile: String?
        var tenant: String?
    }

    struct Add: ConsoleCommand {
        static let configuration = CommandConfiguration(
            abstract: "Save a context: a server URL, the file holding your token, and optionally a CA and tenant.",
            discussion: "The token stays in its file (keep it mode 0600); the config records only the path.")

        @Argument(help: "The context's name, e.g. prod.") var name: String
        @Option(help: "The server, https://HOST:PORT (http only on loopback).") var server: String
        @Option(help: "The file holding your operator token.") var tokenFile: String?
        @Option(help: "A PEM CA certificate to trust for this server (a private CA or self-signed).")
        var caFile: String?
        @Option(help: "The tenant to use by default.") var tenant: String?

        func execute(_ ctx: CommandContext) async throws -> CommandOutput {
            guard !name.isEmpty, name.count <= 64,
                name.unicodeScalars.allSatisfy({
                    CharacterSet.alphanumerics.contains($0) || "-_.".unicodeScalars.contains($0)
                })
            else {
                throw ConsoleError.invalid(
                    "invalid_context", "A context name is 1 to 64 letters, digits, '-', '_' or '.'.")
            }
            // The URL's form only: plain HTTP beyond loopback is refused when it is used.
            _ = try RemoteConsole(server: server, allowPlainHTTP: true)
            let tokenFile = try tokenFile.map { (path) throws(ConsoleError) in try Self.existing(path, "--token-file") }
            let caFile = try caFile.map { (path) throws(ConsoleError) in try Self.existing(path, "--ca-file") }
            var config = try ClientConfig.load(environment: ctx.environment)
            config.contexts[name] = ClientConfig.Context(
                server: server, tokenFile: tokenFile, caFile: caFile, tenant: tenant)
            if config.current == nil { config.current = name }
            try config.save(environment: ctx.environment)
            let entry = Entry(
                name: name, current: config.current == name, server: server, tokenFile: tokenFile, caFile: caFile,
                tenant: tenant)
            return .message(
                "Saved context \(name) (\(server))\(entry.current ? "; it is the current context" : "").", json: entry)
        }

        /// The absolute path of a file that exists (the config outlives the working directory).
        static func existing(_ path: String, _ option: String) throws(ConsoleError) -> String {
            let absolute =
                path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path
            guard FileManager.default.isReadableFile(atPath: absolute) else {
                throw .invalid("unreadable_file", "\(option): cannot read \(path).")
            }
            return (absolute as NSString).standardizingPath
        }
    }

    struct Use: ConsoleCommand {
        static let configuration = CommandConfiguration(
            abstract: "Make a context the current one (`--context NAME` picks one for a single run).")
        @Argument(help: "The context's name.") var name: String

        func execute(_ ctx: CommandContext) async throws -> CommandOutput {
            var config = try ClientConfig.load(environment: ctx.environment)
            guard let (_, context) = try config.selected(named: name, hasOwnStore: false) else {
                throw ConsoleError.notFound("No context named \(name).")
            }
            config.current = name
            try config.save(environment: ctx.environment)
            return .message(
                "Current context: \(name) (\(context.server)). Runs without --db, --server or --context use it.",
                json: ["current": name, "server": context.server])
        }
    }

    struct List: ConsoleCommand, ListsRecords {
        static let configuration = CommandConfiguration(abstract: "The saved contexts; * marks the current one.")

        func execute(_ ctx: CommandContext) async throws -> CommandOutput {
            let config = try ClientConfig.load(environment: ctx.environment)
            let entries = config.contexts.keys.sorted().compactMap { name in
                config.contexts[name].map {
                    Entry(
                        name: name, current: config.current == name, server: $0.server, tokenFile: $0.tokenFile,
                        caFile: $0.caFile, tenant: $0.tenant)
                }
            }
            var output = CommandOutput(json: ["contexts": entries]) { style in
                guard !entries.isEmpty else {
                    return style.dim("No contexts; add one with `context add NAME --server URL --token-file FILE`.")
                }
                return TextTable(
                    ["", "NAME", "SERVER", "TENANT", "TOKEN FILE"],
                    entries.map {
                        [$0.current ? "*" : "", $0.name, $0.server, $0.tenant ?? "-", $0.tokenFile ?? "-"]
                    }
                ).render(style)
            }
            output.records = ListRecords(
                ["name", "current", "server", "tenant", "tokenFile", "caFile"],
                entries.map {
                    [
                        $0.name, $0.current ? "true" : "false", $0.server, $0.tenant ?? "", $0.tokenFile ?? "",
                        $0.caFile ?? "",
                    ]
                })
            return output
        }
    }

    struct Remove: ConsoleCommand {
        static let configuration = CommandConfiguration(abstract: "Forget a context (its token file is left alone).")
        @Argument(help: "The context's name.") var name: String

        func execute(_ ctx: CommandContext) async throws -> CommandOutput {
            var config = try ClientConfig.load(environment: ctx.environment)
            guard config.contexts.removeValue(forKey: name) != nil else {
                throw ConsoleError.notFound("No context named \(name).")
            }
            if config.current == name { config.current = nil }
            try config.save(environment: ctx.environment)
            return .message("Removed context \(name).", json: ["removed": name])
        }
    }
}
