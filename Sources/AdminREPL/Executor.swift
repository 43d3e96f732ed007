import ArgumentParser
import BackupModel
import Foundation

/// Runs one command line: parse with the shared tree, execute, render, report errors.
///
/// The REPL, `-c`, `-f` and stdin all come through here, so grammar, output and exit codes
/// are the same everywhere.
@MainActor
struct Executor {
    let ctx: CommandContext

    /// Returns the exit status of the command.
    ///
    /// In a batch that groups read audits (``CommandContext/groupsReadAudits``), a lookup or
    /// `show` holds its audit entry and its output; they are released together — audit first —
    /// by ``releaseHeld()``, which runs before any other command and when the batch says so.
    func run(words: [String]) async -> Int32 {
        guard let first = words.first else { return ExitStatus.ok }
        let top = first == "help" ? nil : Completion.resolve([first])
        let parse = top.map { top in Result { () throws -> any ParsableCommand in try Self.parse(words, top: top) } }
        let grouped = ctx.groupsReadAudits && (try? parse?.get()) is any GroupsReadAudit
        if !grouped, let failed = releaseHeld() { return failed }
        if first == "help" { return help(Array(words.dropFirst())) }
        guard let top, let parse else {
            report(.usage("Unknown command '\(first)'; `help` lists the commands."))
            return ExitStatus.usage
        }
        let parsed: any ParsableCommand
        switch parse {
        case .success(let command): parsed = command
        case .failure(let error): return reportParseError(error, root: top)
        }
        guard let command = parsed as? any ConsoleCommand else {
            // A group without a subcommand ("tenant"): show its help.
            return help(words.filter { !$0.hasPrefix("-") })
        }
        if ctx.settings.format == .csv, !(command is any ListsRecords) {
            report(
                .usage("--format csv is for commands that list rows (\(ListsRecordsNames.all)); yaml and json fit all.")
            )
            return ExitStatus.usage
        }
        ctx.holdingReadAudits = grouped
        Terminal.holding = grouped
        defer {
            Terminal.holding = false
            ctx.holdingReadAudits = false
        }
        do {
            let output = try await command.execute(ctx)
            render(output)
            if let failure = output.failure {
                report(failure)
                return ExitStatus.code(for: failure.kind)
            }
            return ExitStatus.ok
        } catch let error as ConsoleError {
            report(error)
            return ExitStatus.code(for: error.kind)
        } catch {
            return reportParseError(error, root: top)
        }
    }

    /// Writes held read audits and then the output that waited for them; returns the exit
    /// status when the audit could not be written (the output is dropped and the error shown).
    func releaseHeld() -> Int32? {
        do {
            try ctx.releaseHeld()
            return nil
        } catch {
            report(error)
            return ExitStatus.code(for: error.kind)
        }
    }

    /// Parses with the same command types as the whole tree, but from the deepest command the
    /// words name: ArgumentParser then builds a one-node tree per line instead of the whole
    /// console's, which is most of a line's cost in a long script. Anything but a clean parse
    /// (an error, `--help`) is parsed again from the top-level command, so messages and help
    /// show the full command path.
    static func parse(_ words: [String], top: any ParsableCommand.Type) throws -> any ParsableCommand {
        var leaf = top
        var consumed = 1
        while consumed < words.count,
            let next = leaf.configuration.subcommands.first(where: { Completion.commandName($0) == words[consumed] })
        {
            leaf = next
            consumed += 1
        }
        let rest = Array(words.dropFirst(consumed))
        if let positional = leaf as? any PositionalParse.Type, let parsed = positional.parsePositional(rest) {
            return parsed
        }
        if leaf.configuration.subcommands.isEmpty, ObjectIdentifier(leaf) != ObjectIdentifier(top),
            let parsed = try? leaf.parseAsRoot(rest), parsed is any ConsoleCommand
        {
            return parsed
        }
        return try top.parseAsRoot(Array(words.dropFirst()))
    }

    func run(line: String) async -> Int32 {
        do {
            return await run(words: try LineSplitter.split(line))
        } catch {
            report(error)
            return ExitStatus.usage
        }
    }

    func render(_ output: CommandOutput) {
        if ctx.settings.format == .json {
            if let json = output.json { Terminal.writeOut(JSONLine.encode(json)) }
        } else if ctx.settings.format == .yaml {
            if let json = output.json { Terminal.writeOut(StructuredOutput.yaml(json)) }
        } else if ctx.settings.format == .csv {
            if let records = output.records { Terminal.writeOut(StructuredOutput.csv(records)) }
        } else {
            let style = ctx.style
            let text = SafeText.output(output.text(style), keepStyle: style.color)
            // Held output waits for its audit: a pager would show it at once.
            if !text.isEmpty { Terminal.holding ? Terminal.writeOut(text) : Pager.show(text, ctx: ctx) }
        }
    }

    func report(_ error: ConsoleError) {
        if ctx.settings.format == .json {
            Terminal.writeErr(
                JSONLine.encode(["error": ["code": error.code, "message": SecretShape.redact(error.message)]]))
        } else {
            let style = RenderStyle(
                color: ctx.settings.useColor(isTerminal: isatty(STDERR_FILENO) == 1, environment: ctx.environment),
                width: nil)
            Terminal.writeErr(style.red("error[\(error.code)]:") + " " + SafeText.message(error.message))
        }
    }

    /// ArgumentParser errors: help is output (exit 0); anything else is a one-line usage error.
    private func reportParseError(_ error: any Error, root: any ParsableCommand.Type) -> Int32 {
        let code = root.exitCode(for: error)
        if code == .success {
            let help = root.fullMessage(for: error)
            if ctx.settings.format == .json {
                Terminal.writeOut(JSONLine.encode(["help": help]))
            } else {
                Terminal.writeOut(help)
            }
            return ExitStatus.ok
        }
        let message =
            root.message(for: error)
            .split(separator: "\n").first.map(String.init) ?? "invalid command"
        report(.usage(message.hasPrefix("Error: ") ? String(message.dropFirst(7)) : message))
        return ExitStatus.usage
    }

    /// `help [COMMAND…]`: generated from the same tree the parser uses.
    func help(_ path: [String]) -> Int32 {
        let text: String
        if path.isEmpty {
            text = ConsoleLine.helpMessage()
        } else if let command = Completion.resolve(path), Completion.commandName(command) == path.last {
            text = ConsoleLine.helpMessage(for: command)
        } else {
            report(.usage("No help for '\(path.joined(separator: " "))'; `help` lists the commands."))
            return ExitStatus.usage
        }
        if ctx.settings.format == .json {
            Terminal.writeOut(JSONLine.encode(["help": text]))
        } else {
            Terminal.writeOut(text)
        }
        return ExitStatus.ok
    }
}
