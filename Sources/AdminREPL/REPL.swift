import ArgumentParser
import BackupModel
import ConsoleService
import Foundation

/// The interactive loop: prompt `operator@tenant> `, readline editing, history, completion.
@MainActor
struct REPL {
    let ctx: CommandContext
    let executor: Executor

    func run() async -> Int32 {
        LineEditor.setUp()
        ctx.inREPL = true
        let history = History(environment: ctx.environment)
        for line in history.load() { LineEditor.addHistory(line) }
        var completion = Completion(tenants: { [ctx] in Self.tenantNames(ctx) })
        completion.backupIds = { [ctx] prefix in
            (try? ctx.performBlocking(BackupIdsOperation(prefix: prefix, limit: 50)))?.backupIds ?? []
        }
        LineEditor.completer = { before, prefix in
            MainActor.assumeIsolated { completion.candidates(before: before, prefix: prefix) }
        }
        Terminal.writeErr("backupctl \(Backupctl.version) — `help` lists commands, Tab completes, Ctrl-D leaves.")
        while !ctx.quitRequested {
            guard let line = LineEditor.readLine(prompt: await prompt()) else {
                Terminal.writeOut("")
                break
            }
            guard let text = LineSplitter.scriptLine(line) else { continue }
            LineEditor.addHistory(History.carriesSecret(text) ? "" : text)
            history.append(text)
            // A failing command is reported and the session goes on; the REPL itself exits 0.
            _ = await executor.run(line: text)
        }
        return ExitStatus.ok
    }

    /// `operator@tenant> ` in-process, `operator@CONTEXT:tenant> ` on a server (its host and port
    /// without a context), with the tenant in colour on a terminal: which console a command
    /// reaches is always in front of it.
    func prompt() async -> String {
        let who = await ctx.identity()
        let op = who?.operator ?? "?"
        let tenant = ctx.tenantName ?? who?.tenant ?? "-"
        let style = ctx.style
        // \001 and \002 tell readline the colour codes take no columns.
        let coloured = style.color ? "\u{01}\u{1B}[36m\u{02}\(tenant)\u{01}\u{1B}[0m\u{02}" : tenant
        let place = ctx.settings.location.map { SafeText.cell($0) + ":" } ?? ""
        return "\(op)@\(place)\(coloured)> "
    }

    static func tenantNames(_ ctx: CommandContext) -> [String] {
        ((try? ctx.performBlocking(TenantListOperation()))?.tenants ?? []).map(\.name)
    }
}
