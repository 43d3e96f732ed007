import BackupModel
import ConsoleService
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
        let ctx = CommandContext(settings: settings, environment: environment, interactive: interactive)
        let status = await run(Executor(ctx: ctx), interactive: interactive, hasBatch: hasBatch)
        // A PostgreSQL store's pool closes its connections before the process ends.
        if let local = ctx.openedConsole as? LocalConsole { await local.close() }
        return status
    }

    private func run(_ executor: Executor, interactive: Bool, hasBatch: Bool) async -> Int32 {
        let ctx = executor.ctx
        if !options.words.isEmpty {
            let status = await executor.run(words: options.words)
            if status == 0, ctx.startREPLAfterCommand, interactive {
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
        return await BatchRunner(executor: executor, continueOnError: settings.continueOnError)
            .runStream(source: "stdin")
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
@MainActor
struct BatchRunner {
    let executor: Executor
    let continueOnError: Bool

    /// Runs a whole script (`-f`, `-c`), line by line.
    func run(_ lines: [BatchLine]) async -> Int32 {
        defer { executor.ctx.batchLine = nil }
        var firstFailure: Int32 = 0
        for line in lines {
            guard let text = LineSplitter.scriptLine(line.text) else { continue }
            executor.ctx.batchLine = (line.file, line.line)
            let status = await executor.run(line: text)
            if status != 0 {
                if firstFailure == 0 { firstFailure = status }
                if !continueOnError { return status }
            }
            if executor.ctx.quitRequested { break }
        }
        return firstFailure
    }

    /// Reads stdin a line at a time (so `recovery` prompts could still read after) and runs it.
    func runStream(source: String) async -> Int32 {
        var firstFailure: Int32 = 0
        var number = 0
        defer { executor.ctx.batchLine = nil }
        while let raw = Terminal.readLine() {
            number += 1
            guard let text = LineSplitter.scriptLine(raw) else { continue }
            executor.ctx.batchLine = (source, number)
            let status = await executor.run(line: text)
            if status != 0 {
                if firstFailure == 0 { firstFailure = status }
                if !continueOnError { return status }
            }
            if executor.ctx.quitRequested { break }
        }
        return firstFailure
    }
}
