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
            await runCommand(text)
        }
        return ExitStatus.ok
    }

    /// Runs one command of the session. Ctrl-C cancels a job (it stops after the call it is in);
    /// a command still waiting a second later (on a server or database that does not answer) is
    /// told so, and a second Ctrl-C stops waiting for it: the session goes on, and the command's
    /// outcome is unknown (it may still finish, and print, later).
    func runCommand(_ text: String) async {
        let start = SignalFlag.presses
        let (events, ended) = AsyncStream<Bool>.makeStream()
        let executor = executor
        let abandoned = Terminal.Abandonment()
        _ = Task { @MainActor in
            await Terminal.$abandonment.withValue(abandoned) { _ = await executor.run(line: text) }
            ended.yield(true)
        }
        let watcher = Task.detached {
            var firstSeen: ContinuousClock.Instant?
            // The presses counted when the hint was shown: only a Ctrl-C after it abandons.
            var hintedAt: sig_atomic_t?
            // Bounded by the command: cancelled once it ends.
            while !Task.isCancelled {
                let presses = SignalFlag.presses &- start
                if let hintedAt, presses > hintedAt {
                    ended.yield(false)
                    return
                }
                if presses >= 1, firstSeen == nil { firstSeen = .now }
                if let firstSeen, hintedAt == nil, ContinuousClock.now - firstSeen > .seconds(1) {
                    hintedAt = presses
                    Terminal.writeErr(
                        "(still waiting for the command; Ctrl-C again stops waiting, its outcome then unknown)")
                }
                try? await Task.sleep(for: .milliseconds(50))
            }
        }
        var iterator = events.makeAsyncIterator()
        let finished = await iterator.next() ?? true
        watcher.cancel()
        guard !finished else { return }
        // Not cancelled (a job was already told to stop by the first Ctrl-C): it is left to end
        // on its own, and whatever it would still print, its progress included, is dropped.
        abandoned.set()
        SignalFlag.drain()
        Terminal.writeErr(
            SafeText.message(
                "error[interrupted]: stopped waiting for `\(text.prefix(60))`; it may still finish, so its outcome is unknown (check with a read before repeating a change)."
            ))
    }

    /// `operator@tenant> ` in-process, `operator@CONTEXT:tenant> ` on a server (its host and port
    /// without a context), with the tenant in colour on a terminal: which console a command
    /// reaches is always in front of it.
    func prompt() async -> String {
        // A server that does not answer must not hold the prompt: 5 s, or Ctrl-C, then `?`.
        let who = await Self.bounded(seconds: 5) { [ctx] in await ctx.identity() }
        let op = who?.operator ?? "?"
        let tenant = ctx.tenantName ?? who?.tenant ?? "-"
        let style = ctx.style
        // \001 and \002 tell readline the colour codes take no columns.
        let coloured = style.color ? "\u{01}\u{1B}[36m\u{02}\(tenant)\u{01}\u{1B}[0m\u{02}" : tenant
        let place = ctx.settings.location.map { SafeText.cell($0) + ":" } ?? ""
        return "\(op)@\(place)\(coloured)> "
    }

    /// `body`'s value, or `nil` once `seconds` passed or Ctrl-C was pressed (`body` is left to
    /// finish on its own).
    static func bounded<T: Sendable>(seconds: Double, _ body: @escaping @MainActor () async -> T?) async -> T? {
        let start = SignalFlag.presses
        let (events, answer) = AsyncStream<T?>.makeStream()
        let work = Task { @MainActor in answer.yield(await body()) }
        let timer = Task.detached {
            let deadline = ContinuousClock.now + .seconds(seconds)
            while ContinuousClock.now < deadline, SignalFlag.presses == start, !Task.isCancelled {
                try? await Task.sleep(for: .milliseconds(50))
            }
            answer.yield(nil)
        }
        var iterator = events.makeAsyncIterator()
        let value = await iterator.next() ?? nil
        timer.cancel()
        _ = work
        if SignalFlag.presses != start { SignalFlag.drain() }
        return value
    }

    static func tenantNames(_ ctx: CommandContext) -> [String] {
        ((try? ctx.performBlocking(TenantListOperation()))?.tenants ?? []).map(\.name)
    }
}
