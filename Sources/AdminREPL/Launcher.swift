import BackupModel
import ConsoleService
import ConsoleStore
import Foundation
import Synchronization

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
        return data.withUnsafeBytes { LineSplitter.lines(of: $0) }.enumerated().map {
            BatchLine(file: path, line: $0.offset + 1, text: $0.element)
        }
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
    /// ``groupNanos``, before any other command runs, when a read fails (unless
    /// `--continue-on-error`), and at the end; while one group's entries commit, the next
    /// group's lines run (``Executor/releaseHeld(behind:)``).
    ///
    /// The reads of such a run of lines are also performed ahead of them (``ReadAhead``): in
    /// order, in one call off the main actor, so a line costs no trip between the main actor
    /// and the service; and the next run's reads go on while this run's lines are rendered.
    func run(_ lines: [BatchLine]) async -> Int32 {
        let ctx = executor.ctx
        // A script at a terminal groups too: only the REPL (never a batch) shows each read as
        // its line is typed, and a grouped read never pages (its output is held).
        let grouping = ctx.settings.server == nil
        if grouping { ctx.auditDeferral = AuditDeferral() }
        ctx.continuesOnError = continueOnError
        defer {
            ctx.batchLine = nil
            ctx.auditDeferral = nil
            ctx.continuesOnError = false
            ctx.heldBatchLines = []
            ctx.releasing = nil
            ctx.heldFailure = nil
            ctx.readAhead = [:]
        }
        let commands = lines.compactMap { line in LineSplitter.scriptLine(line.text).map { (line, $0) } }
        let (refused, parsed) = check(commands)
        if let refused { return refused }
        var ahead: ReadAhead?
        var status = await run(commands, parsed: parsed, grouping: grouping, ahead: &ahead)
        if ctx.releasing != nil, let failed = await executor.releaseHeld(), status == 0 { status = failed }
        if let ahead {
            // The script stopped before these lines: the reads already made are audited all the
            // same (they were made), and nothing of theirs is shown.
            ahead.task.cancel()
            _ = await ahead.task.value
            try? await ctx.auditDeferral?.settle()
        }
        return status
    }

    private func run(
        _ commands: [(BatchLine, String)], parsed: [ParsedLine?], grouping: Bool, ahead: inout ReadAhead?
    ) async -> Int32 {
        let ctx = executor.ctx
        var firstFailure: Int32 = 0
        var grouped = 0
        var groupStart: UInt64 = 0
        for (index, (line, text)) in commands.enumerated() {
            ctx.batchLine = (line.file, line.line)
            if grouped == 0 { groupStart = DispatchTime.now().uptimeNanoseconds }
            if grouping, ctx.readAhead[line.line] == nil {
                var started: ReadAhead?
                if let pending = ahead {
                    ahead = nil
                    if pending.start == index {
                        started = pending
                    } else {
                        // Not this line's (it cannot happen: a run starts where the last one ended).
                        pending.task.cancel()
                        _ = await pending.task.value
                    }
                }
                if let reads = started
                    ?? ReadAhead(
                        commands, from: index, parsed: parsed, ctx: ctx, continueOnError: continueOnError,
                        until: groupStart + Self.groupNanos, limit: Self.groupLines - grouped)
                {
                    let answers = await reads.task.value
                    for (read, answer) in zip(reads.lines, answers) { ctx.readAhead[read] = answer }
                    // The next run of reads goes on while these lines are rendered, unless the
                    // script stops within these (a failure without --continue-on-error, a signal).
                    let failed = answers.contains { if case .failure = $0.result { true } else { false } }
                    if continueOnError || !failed, Interrupts.signal == nil {
                        ahead = ReadAhead(
                            commands, from: index + answers.count, parsed: parsed, ctx: ctx,
                            continueOnError: continueOnError,
                            until: DispatchTime.now().uptimeNanoseconds + Self.groupNanos, limit: Self.groupLines)
                    }
                }
            }
            var status = await runLine(text, parsed: parsed[index])
            if !ctx.heldBatchLines.isEmpty {
                let now = DispatchTime.now().uptimeNanoseconds
                grouped += 1
                // A failure stops the script (unless --continue-on-error: its error is held in
                // its place like any line) and a signal stops it: what it printed shows now.
                if (status != 0 && !continueOnError) || Interrupts.exitStatus != nil {
                    if let failed = await executor.releaseHeld(), status == 0 { status = failed }
                    grouped = 0
                } else if grouped >= Self.groupLines || now - groupStart >= Self.groupNanos {
                    // The group's entries commit while the next group renders; its output is
                    // written at the next release, after the commit.
                    if let failed = await executor.releaseHeld(behind: true), status == 0 { status = failed }
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

    private func runLine(_ text: String, parsed: ParsedLine?) async -> Int32 {
        let run = { () async -> Int32 in
            if let parsed { return await executor.run(words: parsed.words, preparsed: parsed.command) }
            return await executor.run(line: text)
        }
        return executor.ctx.interactive ? await run() : await Interrupts.finishing { await run() }
    }

    /// Reports every line that would be refused (each saying that nothing ran); the exit
    /// status of the first, or `nil`, and each line's parse for the run to reuse.
    private func check(_ commands: [(BatchLine, String)]) -> (refused: Int32?, parsed: [ParsedLine?]) {
        var first: Int32?
        var reported = 0
        var parsed: [ParsedLine?] = []
        parsed.reserveCapacity(commands.count)
        for (line, text) in commands {
            let checked = ScriptCheck.check(text, settings: executor.ctx.settings)
            parsed.append(checked.parsed)
            guard let refusal = checked.refusal else { continue }
            executor.ctx.batchLine = (line.file, line.line)
            if reported < 20 {
                executor.report(
                    ConsoleError(refusal.kind, code: refusal.code, refusal.message + " Nothing in the script was run."),
                    onStdout: false)
            }
            reported += 1
            // A script that does not parse is a usage error whatever its line's own code (a
            // bad option value is `invalid_duration`, exit 1, when run by itself).
            if first == nil { first = ExitStatus.usage }
        }
        return (first, parsed)
    }
}

/// The reads of a script's consecutive lookups and `show`s from one line on, performed ahead of
/// their lines in one task off the main actor (no hop between them), each answer kept for its
/// line (``CommandContext/readAhead``), their audit entries in the script's deferral as the
/// lines' own would be.
///
/// It covers up to `limit` lines, up to the first line that is not such a read, or until
/// `deadline`; without `--continue-on-error` it stops after a failed read (the script stops
/// there), and a signal or cancellation stops it before its next read. Only lines without
/// per-line options qualify, so all of them run as the same caller with the same settings.
@MainActor
struct ReadAhead {
    /// The index in the script's commands of the first line covered.
    let start: Int
    /// The script line of each read, in order.
    let lines: [Int]
    let task: Task<[ReadAheadAnswer], Never>

    /// `nil` when fewer than two lines qualify (one read runs as its line does), or without a
    /// console or caller (the line reports why).
    init?(
        _ commands: [(BatchLine, String)], from index: Int, parsed: [ParsedLine?], ctx: CommandContext,
        continueOnError: Bool, until deadline: UInt64, limit: Int
    ) {
        guard let deferral = ctx.auditDeferral, ctx.settings.format != .csv else { return nil }
        var lines: [Int] = []
        var operations: [any ConsoleOperation] = []
        var next = index
        while next < commands.count, lines.count < limit, let read = parsed[next]?.command as? any GroupsReadAudit {
            lines.append(commands[next].0.line)
            operations.append(read.readOperation)
            next += 1
        }
        guard lines.count > 1, let console = try? ctx.console, let caller = try? ctx.caller else { return nil }
        start = index
        self.lines = lines
        let checkpoint = ctx.readAheadCheckpoint
        task = Task.detached {
            await Self.perform(
                operations, console: console, caller: caller, deferral: deferral, stopAtFailure: !continueOnError,
                deadline: deadline, checkpoint: checkpoint)
        }
    }

    /// The reads with one access check around them (``ConsoleAPI/withOneAccessCheck(_:)``):
    /// their entries are kept aside and join the script's once the check holds. When tenants,
    /// operators, grants or tokens changed meanwhile, none of those answers is shown and none
    /// of their entries is committed; the reads are made again, each checked on its own, as
    /// lines run one by one are.
    nonisolated private static func perform(
        _ operations: [any ConsoleOperation], console: any ConsoleAPI, caller: Caller, deferral: AuditDeferral,
        stopAtFailure: Bool, deadline: UInt64, checkpoint: ReadAheadCheckpoint
    ) async -> [ReadAheadAnswer] {
        let aside = AuditDeferral()
        let (answers, unchanged) = await console.withOneAccessCheck(reading: operations) {
            await reads(
                operations, console: console, caller: caller, deferral: aside, stopAtFailure: stopAtFailure,
                deadline: deadline, checkpoint: checkpoint)
        }
        if unchanged {
            let base = deferral.adopt(aside)
            return answers.map {
                ReadAheadAnswer(result: $0.result, keptAfter: base + $0.keptAfter, keptThrough: base + $0.keptThrough)
            }
        }
        return await reads(
            operations, console: console, caller: caller, deferral: deferral, stopAtFailure: stopAtFailure,
            deadline: deadline, checkpoint: nil)
    }

    nonisolated private static func reads(
        _ operations: [any ConsoleOperation], console: any ConsoleAPI, caller: Caller, deferral: AuditDeferral,
        stopAtFailure: Bool, deadline: UInt64, checkpoint: ReadAheadCheckpoint?
    ) async -> [ReadAheadAnswer] {
        await AuditDeferral.$current.withValue(deferral) {
            var answers: [ReadAheadAnswer] = []
            for operation in operations {
                if Task.isCancelled || Interrupts.signal != nil { break }
                // The first read always runs (its line may be the one running now).
                if !answers.isEmpty, DispatchTime.now().uptimeNanoseconds >= deadline { break }
                let before = deferral.keptCount
                let result = await perform(operation, console: console, caller: caller)
                answers.append(ReadAheadAnswer(result: result, keptAfter: before, keptThrough: deferral.keptCount))
                checkpoint?.reached()
                if stopAtFailure, case .failure = result { break }
            }
            return answers
        }
    }

    nonisolated private static func perform<Op: ConsoleOperation>(
        _ operation: Op, console: any ConsoleAPI, caller: Caller
    ) async -> Result<any Sendable, ConsoleError> {
        do throws(ConsoleError) {
            return .success(try await console.perform(operation, as: caller, progress: nil))
        } catch {
            return .failure(error)
        }
    }
}

/// A read made ahead of its line: its answer, and which of the script's audit entries it kept
/// (``AuditDeferral/keptCount`` before and after it).
struct ReadAheadAnswer: Sendable {
    var result: Result<any Sendable, ConsoleError>
    var keptAfter: Int
    var keptThrough: Int
}

/// `BACKUPCTL_PAUSE_AT=read-ahead` (debug builds): after the first read a script makes ahead
/// of its lines, the console writes `{"paused":"read-ahead"}` on stderr and waits until the
/// file `BACKUPCTL_RESUME_FILE` exists, so a test changes grants at exactly that point (never
/// "after N ms"). Release builds ignore it.
final class ReadAheadCheckpoint: Sendable {
    private let resumeFile: Mutex<String?>

    init(environment: [String: String]) {
        #if DEBUG
            let armed = environment["BACKUPCTL_PAUSE_AT"] == "read-ahead"
            resumeFile = Mutex(armed ? environment["BACKUPCTL_RESUME_FILE"] ?? "" : nil)
        #else
            resumeFile = Mutex(nil)
        #endif
    }

    /// Pauses the first time only.
    func reached() {
        let armed = resumeFile.withLock { path in
            defer { path = nil }
            return path
        }
        guard let path = armed else { return }
        Terminal.writeErr(#"{"paused":"read-ahead"}"#)
        // Bounded: a test that never resumes does not hold the script for good.
        var waited = 0
        while access(path, F_OK) != 0, waited < 6000 {
            usleep(10_000)
            waited += 1
        }
    }
}
