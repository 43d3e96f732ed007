import Access
import ArgumentParser
import BackupModel
import ConsoleStore
import Foundation

/// `backupctl demo`: a sandbox tenant with seeded data in a store of its own, so a newcomer
/// can try everything without touching a real store. The demo admin's token is kept in a
/// 0600 file beside the demo store; on a terminal the REPL opens straight away.
struct DemoCommand: ConsoleCommand {
    static let configuration = CommandConfiguration(
        commandName: "demo", abstract: "Open a seeded sandbox tenant in a demo store of its own (no token needed).")

    @Option(help: "Backups to seed the first time.") var backups: Int = 2000
    @Option(help: "Orphaned Turnkey sub-orgs to seed the first time.") var orphans: Int = 40
    @Flag(help: "Throw the demo store away and start again.") var fresh = false

    struct Result: Encodable {
        var db: String
        var tokenFile: String
        var tenant: String
        var seeded: SeedReport?
        var next: [String]
    }

    func execute(_ ctx: CommandContext) async throws -> CommandOutput {
        let directory = GlobalSettings.dataHome(environment: ctx.environment) + "/backupctl/demo"
        let db = directory + "/console.db"
        let tokenFile = directory + "/token"
        try await Self.confirmSwitch(ctx, to: db)
        if fresh { try? FileManager.default.removeItem(atPath: directory) }
        ctx.switchStore(to: db)
        var seeded: SeedReport?
        if !FileManager.default.fileExists(atPath: tokenFile) {
            try? FileManager.default.removeItem(atPath: directory)
            let store = try await ctx.store()
            let access = AccessService(store: store, clock: ctx.clock, random: ctx.random)
            let token = try await access.bootstrap(admin: try OperatorName("demo"))
            try Self.writePrivate(token, to: tokenFile)
            ctx.tokenOverride = token
            ctx.tenantName = AccessService.defaultTenant
            let session = try await ctx.session()
            let progress = Progress(label: "seeding the demo tenant", total: backups)
            defer { progress.finish() }
            seeded = try await DataAdminService(store: store, clock: ctx.clock).seed(
                backups: backups, orphans: orphans, seed: 42, session: session, progress: progress.update)
        } else {
            guard let bytes = try? InputFile.read(tokenFile, what: "The demo token", maxBytes: 4096, access: .ownerOnly)
            else {
                throw ConsoleError.internalError("Cannot read the demo token \(tokenFile); run `demo --fresh`.")
            }
            ctx.tokenOverride = try OperatorToken.parse(Array(bytes))
            ctx.tenantName = AccessService.defaultTenant
        }
        ctx.startREPLAfterCommand = ctx.interactive
        let connect = "backupctl --db \(db) --token-file \(tokenFile)"
        // The first drill is runbooks/support-session.md; its fixture export holds a backup
        // with known factors, so the newcomer's first lookup finds something real.
        let next = [
            connect,
            "first drill, runbooks/support-session.md (from the repository root): \(connect) import runbooks/fixtures/export",
            "then: \(connect) lookup passkey w6hZIQi3LVcwPvQekJSl_Q",
        ]
        let result = Result(
            db: db, tokenFile: tokenFile, tenant: AccessService.defaultTenant, seeded: seeded, next: next)
        return CommandOutput(json: result) { style in
            var pairs = [("demo store", db), ("token file", tokenFile), ("tenant", "sandbox (you are its admin)")]
            if let s = seeded {
                pairs.append(
                    (
                        "seeded",
                        "\(s.backups) backups, \(s.orphanSubOrgs) orphan sub-orgs, \(s.driftedBackups) with index drift"
                    ))
            }
            pairs.append(("connect again", next[0]))
            pairs.append(("first drill", "runbooks/support-session.md (run from the repository root)"))
            pairs.append(("first command", "import runbooks/fixtures/export"))
            pairs.append(("then", "lookup passkey w6hZIQi3LVcwPvQekJSl_Q · show … · check · help"))
            return keyValueBlock(pairs, style)
        }
    }

    /// Inside a REPL or a script already working on a store, `demo` would switch that session
    /// to the demo store and its `demo` operator: it says so and asks (REPL), or needs `--yes`
    /// (script). As the process's own command it has no session to take over.
    @MainActor
    static func confirmSwitch(_ ctx: CommandContext, to db: String) async throws(ConsoleError) {
        guard ctx.inREPL || ctx.batchLine != nil, ctx.settings.dbPath != db, !ctx.settings.yes else { return }
        let who = await (try? ctx.currentOperator()).map { "operator \($0.name)" } ?? "your operator"
        let what =
            "`demo` switches this session from the store \(ctx.settings.dbPath) (\(who)) to the demo store \(db) "
            + "as operator demo, tenant sandbox"
        guard ctx.inREPL, ctx.interactive else {
            throw ConsoleError.usage(
                "\(what). Run `backupctl demo` on its own, or pass --yes to switch this script.")
        }
        Terminal.writeErr("\(what); your store is not changed. Switch? [y/N]")
        FileHandle.standardError.write(Data("> ".utf8))
        let answer = Terminal.readLine()?.trimmingCharacters(in: .whitespaces).lowercased()
        guard answer == "y" || answer == "yes" else {
            throw ConsoleError(
                .conflict, code: "not_confirmed", "Not switched; this session stays on \(ctx.settings.dbPath).")
        }
    }

    /// Writes the token to a file only its owner can read.
    static func writePrivate(_ token: SecretBytes, to path: String) throws(ConsoleError) {
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        guard fd >= 0 else { throw ConsoleError.internalError("Cannot write the demo token file \(path).") }
        defer { close(fd) }
        fchmod(fd, 0o600)
        let written = token.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        guard written == token.count else {
            throw ConsoleError.internalError("Cannot write the demo token file \(path).")
        }
    }
}
