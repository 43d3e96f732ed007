import BackupModel
import ConsoleService
import ConsoleStore
import Foundation

/// Decides how this process runs — one direct command, `-c`/`-f` batch, piped stdin, or the
/// REPL — and returns the exit status.
@MainActor
struct Launcher {
    let options: Backupctl
    let settings: GlobalSettings
    let environment: [String: String]

    func run() async -> Int32 {
        if options.words == ["--version"] || options.words == ["version"] {
            Terminal.writeOut(
                settings.format == .json ? JSONLine.encode(["version": Backupctl.version]) : Backupctl.version)
            return ExitStatus.ok
        }
        let hasBatch = !options.command.isEmpty || options.file != nil
        if hasBatch, !options.words.isEmpty {
            executorless(.usage("Give either a command or -c/-f, not both."))
            return ExitStatus.usage
        }
        let interactive = Terminal.stdinIsTerminal
        let hasREPL = options.words.isEmpty && !hasBatch && interactive
        if !hasREPL { Interrupts.holdForRun() }
        let ctx = CommandContext(settings: settings, environment: environment, interactive: interactive)
        let status = await run(Executor(ctx: ctx), interactive: interactive, hasBatch: hasBatch)
        // A PostgreSQL store's pool closes its connections before the process ends.
        if let local = ctx.openedConsole as? LocalConsole { await local.close() }
        return status
    }

    private func run(_ executor: Executor, interactive: Bool, hasBatch: Bool) async -> Int32 {
        let ctx = executor.ctx
        if !options.words.isEmpty {
            let words = options.words
            let status =
                interactive
                ? await executor.run(words: words) : await Interrupts.finishing { await executor.run(words: words) }
            if let stopped = Interrupts.exitStatus { return stopped }
            if status == 0, ctx.startREPLAfterCommand, interactive {
                Interrupts.releaseForREPL()
                return await REPL(ctx: ctx, executor: executor).run()
            }
            return status
        }
        if hasBatch {
            var lines: [BatchLine] = options.command.enumerated().map {
                BatchLine(file: "-c", line: $0.offset + 1, text: $0.element)
            }
            if let file = options.file {
                guard let script = readScript(file) else {
                    executor.report(.invalid("unreadable_script", "Cannot read the script \(file)."))
                    return ExitStatus.failed
                }
                lines += script
            }
            return await BatchRunner(executor: executor, continueOnError: settings.continueOnError).run(lines)
        }
        if interactive {
            return await REPL(ctx: ctx, executor: executor).run()
        }
        Terminal.stdinCarriesCommands = true
        // The whole of stdin is read (and every line parsed) before the first command runs.
        return await BatchRunner(executor: executor, continueOnError: settings.continueOnError)
            .run(Self.readStdinScript())
    }

    /// An error before there is an executor, in the same form as the executor's.
    private func executorless(_ error: ConsoleError) {
        Executor(ctx: CommandContext(settings: settings, environment: environment, interactive: false)).report(error)
    }

    /// `-f -`: the script is stdin, read to the end.
    static func readStdinScript() -> [BatchLine] {
        var lines: [BatchLine] = []
        while let line = Terminal.readLine() {
            lines.append(BatchLine(file: "stdin", line: lines.count + 1, text: line))
        }
        return lines
    }

    private func readScript(_ path: String) -> [BatchLine]? {
        if path == "-" {
            Terminal.stdinCarriesCommands = true
            return Self.readStdinScript()
        }
        guard let data = FileManager.default.contents(atPath: path) else { return nil }
        return String(decoding: data, as: UTF8.self)
            .split(separator: "\n", omittingEmptySubsequences: false)
            .enumerated()
            .map { BatchLine(file: path, line: $0.offset + 1, text: String($0.element)) }
    }
}

struct BatchLine {
    /// The script (`-c` for `-c` commands, `stdin`, or the `-f` path) and the 1-based line.
    var file: String
    var line: Int
    var text: String
}

/// Runs script lines in order: comments and blanks skipped, stop at the first failure with its
/// exit code unless `--continue-on-error` (then the first failure's code is returned at the end).
///
/// Every line is parsed before the first runs: a line that would be refused (an unknown
/// command, a missing argument, a bad option) is reported as `FILE:N` and nothing runs. A
/// signal stops the batch after the command it is in, even with `--continue-on-error`, and the
/// batch exits 128 + the signal (``Interrupts``).
@MainActor
struct BatchRunner {
    let executor: Executor
    let continueOnError: Bool

    /// Held output is released after at most this many grouped reads…
    static let groupLines = 256
    /// …or this long after the group's first read (monotonic nanoseconds).
    static let groupNanos: UInt64 = 50_000_000

    /// Runs a whole script (`-f`, `-c`, stdin), line by line, once every line parsed.
    ///
    /// In-process, the audit entries of consecutive lookups and `show`s are committed behind
    /// them, many to a transaction (``CommandContext/auditDeferral``), and their output waits:
    /// it is written once its entries are committed — after at most ``groupLines`` reads or
    /// ``groupNanos``, before any other command runs, when a read fails, and at the end.
    func run(_ lines: [BatchLine]) async -> Int32 {
        let ctx = executor.ctx
        let grouping = !ctx.interactive && ctx.settings.server == nil
        if grouping { ctx.auditDeferral = AuditDeferral() }
        ctx.continuesOnError = continueOnError
        defer {
            ctx.batchLine = nil
            ctx.auditDeferral = nil
            ctx.continuesOnError = false
            ctx.heldBatchLines = []
            ctx.heldFailure = nil
        }
        let commands = lines.compactMap { line in LineSplitter.scriptLine(line.text).map { (line, $0) } }
        if let refused = check(commands) { return refused }
        var firstFailure: Int32 = 0
        var grouped = 0
        var groupStart: UInt64 = 0
        for (line, text) in commands {
            ctx.batchLine = (line.file, line.line)
            var status =
                ctx.interactive
                ? await executor.run(line: text) : await Interrupts.finishing { await executor.run(line: text) }
            if !ctx.heldBatchLines.isEmpty {
                let now = DispatchTime.now().uptimeNanoseconds
                if grouped == 0 { groupStart = now }
                grouped += 1
                // A failure stops the script (or may) and a signal stops it: what it printed shows now.
                if status != 0 || Interrupts.exitStatus != nil || grouped >= Self.groupLines
                    || now - groupStart >= Self.groupNanos
                {
                    if let failed = await executor.releaseHeld(), status == 0 { status = failed }
                    grouped = 0
                }
            } else {
                grouped = 0
            }
            if let held = ctx.heldFailure {
                // The reads before this line failed to be audited (it ran: --continue-on-error).
                ctx.heldFailure = nil
                if firstFailure == 0 { firstFailure = held }
            }
            if let stopped = Interrupts.exitStatus { return stopped }
            if status != 0 {
                if firstFailure == 0 { firstFailure = status }
                if !continueOnError { return status }
            }
            if ctx.quitRequested { break }
        }
        if let failed = await executor.releaseHeld(), firstFailure == 0 { firstFailure = failed }
        return firstFailure
    }

    /// Reports every line that would be refused (each saying that nothing ran); the exit
    /// status of the first, or `nil`.
    private func check(_ commands: [(BatchLine, String)]) -> Int32? {
        var first: Int32?
        var reported = 0
        for (line, text) in commands {
            guard let refusal = ScriptCheck.refusal(text, settings: executor.ctx.settings) else { continue }
            executor.ctx.batchLine = (line.file, line.line)
            if reported < 20 {
                executor.report(
                    ConsoleError(refusal.kind, code: refusal.code, refusal.message + " Nothing in the script was run."),
                    onStdout: false)
            }
            reported += 1
            if first == nil { first = ExitStatus.code(for: refusal) }
        }
        return first
    }
}
