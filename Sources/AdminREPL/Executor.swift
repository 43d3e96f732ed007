import ArgumentParser
import BackupModel
import ConsoleService
import ConsoleStore
import Foundation

/// Runs one command line: parse with the shared tree, execute, render, report errors.
///
/// The REPL, `-c`, `-f` and stdin all come through here, so grammar, output and exit codes
/// are the same everywhere.
@MainActor
struct Executor {
    let ctx: CommandContext

    /// Returns the exit status of the command. A read's output is rendered only after its
    /// audit entry is committed: ``ConsoleAPI/perform(_:as:progress:)`` returns after it, or —
    /// for a script's lookups and `show`s (``CommandContext/auditDeferral``) — the output is
    /// held until ``releaseHeld()`` has seen the entries committed. Any other command first
    /// releases what is held.
    /// - Parameter preparsed: the command `words` make, when a script's check parsed them
    ///   already (no per-line options: ``ParsedLine``).
    func run(words given: [String], preparsed: (any ParsableCommand)? = nil) async -> Int32 {
        var words = given
        if words.first == "--help" || words.first == "-h" { words[0] = "help" }
        // Global options after the command words apply to this line only.
        let saved = ctx.settings
        defer {
            let kept = ctx.sessionSettings ?? saved
            ctx.sessionSettings = nil
            ctx.settings.format = kept.format
            ctx.settings.color = kept.color
            ctx.settings.yes = kept.yes
            ctx.settings.noPager = kept.noPager
        }
        if preparsed == nil {
            do {
                let (kept, trailing) = try TrailingOptions.extract(words)
                if !trailing.isEmpty {
                    try trailing.applyPerLine(to: &ctx.settings)
                    words = kept
                }
            } catch {
                report(error)
                return ExitStatus.usage
            }
        }
        guard let first = words.first else { return ExitStatus.ok }
        _ = ArgumentFailure.take()
        let top = first == "help" ? nil : Completion.resolve([first])
        let parse = top.map { top in
            preparsed.map { .success($0) }
                ?? Result { () throws -> any ParsableCommand in try Self.parse(words, top: top) }
        }
        let deferral = (try? parse?.get()) is any GroupsReadAudit ? ctx.auditDeferral : nil
        if deferral == nil, let failed = await releaseHeld() {
            ctx.heldFailure = failed
            if !ctx.continuesOnError {
                // This command did not run: it still gets its line (JSON batch).
                notRun()
                return failed
            }
        }
        if first == "help" { return help(Array(words.dropFirst())) }
        guard let top, let parse else {
            report(
                .usage(
                    "Unknown command '\(first)'\(Suggest.didYouMean(first, among: Completion.commandWords)); `help` lists the commands."
                ))
            return ExitStatus.usage
        }
        let parsed: any ParsableCommand
        switch parse {
        case .success(let command): parsed = command
        case .failure(let error): return reportParseError(error, root: top, words: words)
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
        if deferral != nil, let location = ctx.batchLine { ctx.heldBatchLines.append(location.line) }
        Terminal.holding = deferral != nil
        defer { Terminal.holding = false }
        ctx.interruption = nil
        do {
            var output = try await AuditDeferral.$current.withValue(deferral) { try await command.execute(ctx) }
            if let interruption = ctx.interruption {
                // A job that returned what it did before it stopped (cleanup run): the line says so.
                if let json = output.json { output.json = interruption.merged(into: json) }
                output.failure = interruption.error
            }
            render(output)
            if let failure = output.failure {
                // The document already took this command's stdout line.
                report(failure, onStdout: false)
                return ExitStatus.code(for: failure)
            }
            return ExitStatus.ok
        } catch let error as ConsoleError {
            report(error)
            return ExitStatus.code(for: error)
        } catch {
            return reportParseError(error, root: top, words: words)
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
            let next = Completion.subcommand(of: leaf, named: words[consumed])
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
            // psql-style backslash commands: `\format json` is `set format json`.
            if line.hasPrefix("\\") {
                return await run(words: ["set"] + (try LineSplitter.split(String(line.dropFirst()))))
            }
            return await run(words: try LineSplitter.split(line))
        } catch {
            report(error)
            return ExitStatus.usage
        }
    }

    /// Waits for the held reads' audit entries, then writes the output that waited for them;
    /// when an entry could not be written, that output is dropped (no one may see a read the
    /// log does not record) and the error says so. Returns the exit status of such a failure.
    ///
    /// With `behind`, the entries' commit is started and their output set aside
    /// (``CommandContext/releasing``), and it returns at once: the script renders its next
    /// lines while the entries commit. The next release, whichever kind, first waits for that
    /// commit and writes what was set aside. When that commit failed, the output rendered
    /// since is dropped too: a read kept ahead of its line may have had its entry in it, and
    /// that line was rendered before the failure was known.
    func releaseHeld(behind: Bool = false) async -> Int32? {
        var held = ctx.heldBatchLines
        ctx.heldBatchLines = []
        let releasing = ctx.releasing
        ctx.releasing = nil
        do throws(ConsoleError) {
            if let releasing {
                held = releasing.lines + held
                try await releasing.settling.wait()
                Terminal.writeHeld(releasing.output)
                held.removeFirst(releasing.lines.count)
            }
            guard let deferral = ctx.auditDeferral else {
                Terminal.releaseHeld()
                return nil
            }
            let settling = deferral.startSettle()
            if behind {
                ctx.releasing = HeldRelease(settling: settling, output: Terminal.takeHeld(), lines: held)
                return nil
            }
            try await settling.wait()
            Terminal.releaseHeld()
            return nil
        } catch {
            Terminal.discardHeld()
            let failure = ConsoleError(
                error.kind, code: error.code,
                "\(error.message) The output of the lookups and shows since the last one printed was withheld: "
                    + "they could not be audited.")
            if ctx.settings.format == .json, ctx.batchLine != nil {
                // Each withheld command keeps its stdout line: the error, in its place.
                let body = BatchError.Body(code: failure.code, message: SecretShape.redact(failure.message))
                for line in held { Terminal.writeOut(JSONLine.encode(BatchError(error: body, line: line))) }
            }
            report(failure, onStdout: false)
            return ExitStatus.code(for: failure)
        }
    }

    /// In a JSON batch, the stdout line of a command that was not run because the audit of the
    /// reads before it failed.
    private func notRun() {
        guard ctx.settings.format == .json, let location = ctx.batchLine else { return }
        let body = BatchError.Body(
            code: "not_run", message: "Not run: the audit entries of the reads before it could not be written.")
        Terminal.writeOut(JSONLine.encode(BatchError(error: body, line: location.line)))
    }

    func render(_ output: CommandOutput) {
        if ctx.settings.format == .json {
            if let json = output.json {
                Terminal.writeOut(JSONLine.encode(json))
            } else if ctx.batchLine != nil {
                // A batch in JSON mode gives every command exactly one stdout line.
                Terminal.writeOut("{}")
            }
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

    /// One error: `error[code]: message` (table) or `{"error": {…}}` (JSON) on stderr. In a batch
    /// the stderr line names the script and line (`FILE:N: error[code]: …`), and in JSON mode the
    /// error also takes the command's stdout line (`{"error": {…}, "line": N}`) so that line N of
    /// the output is always command N.
    func report(_ error: ConsoleError, onStdout: Bool = true) {
        let json = ctx.settings.format == .json
        let body = BatchError.Body(code: error.code, message: SecretShape.redact(error.message))
        // A job stopped by a signal still gives its line: what was done and what is left.
        let stopped = error.code == "interrupted" ? ctx.interruption?.fields : nil
        if json, onStdout, let stopped, ctx.batchLine == nil {
            Terminal.writeOut(JSONLine.encode(BatchError(error: body, stopped: stopped)))
        }
        if let location = ctx.batchLine {
            if json {
                if onStdout {
                    Terminal.writeOut(JSONLine.encode(BatchError(error: body, line: location.line, stopped: stopped)))
                }
                Terminal.writeErr(JSONLine.encode(BatchError(error: body, line: location.line, file: location.file)))
            } else {
                Terminal.writeErr("\(location.file):\(location.line): " + errorLine(error))
            }
            return
        }
        if json {
            Terminal.writeErr(JSONLine.encode(BatchError(error: body)))
        } else {
            Terminal.writeErr(errorLine(error))
        }
    }

    private func errorLine(_ error: ConsoleError) -> String {
        let style = RenderStyle(
            color: ctx.settings.useColor(isTerminal: isatty(STDERR_FILENO) == 1, environment: ctx.environment),
            width: nil)
        return style.red("error[\(error.code)]:") + " " + SafeText.message(error.message)
    }

    /// ArgumentParser errors: help is output (exit 0); anything else is a one-line usage error.
    private func reportParseError(_ error: any Error, root: any ParsableCommand.Type, words: [String]) -> Int32 {
        guard let refusal = Self.parseFailure(error, root: root, words: words) else {
            // `COMMAND --help`: the same text as `help COMMAND`, examples included.
            let path = words.filter { !$0.hasPrefix("-") }
            if let command = Completion.resolve(path), Completion.commandName(command) == path.last {
                return help(path)
            }
            showHelp(root.fullMessage(for: error))
            return ExitStatus.ok
        }
        report(refusal)
        return ExitStatus.code(for: refusal)
    }

    /// The one-line error a parse failure stands for, or `nil` when it asked for help. An
    /// argument type that said why it refused a value gives its own code and exit status.
    static func parseFailure(_ error: any Error, root: any ParsableCommand.Type, words: [String]) -> ConsoleError? {
        if root.exitCode(for: error) == .success { return nil }
        if let refused = ArgumentFailure.take() { return refused }
        if let unknown = unknownSubcommand(words) { return .usage(unknown) }
        let message =
            root.message(for: error)
            .split(separator: "\n").first.map(String.init) ?? "invalid command"
        let sentence = message.hasPrefix("Error: ") ? String(message.dropFirst(7)) : message
        return .usage(negativeValue(sentence, words: words) ?? sentence)
    }

    /// "Missing value for '--limit <limit>'" when the value given was `-1`: the parser takes a
    /// word that begins with `-` for an option, so a negative number reads as no value at all.
    /// Says what was given instead (no count, duration or size of the console is negative).
    nonisolated static func negativeValue(_ message: String, words: [String]) -> String? {
        let prefix = "Missing value for '"
        guard message.hasPrefix(prefix), let end = message.dropFirst(prefix.count).firstIndex(of: "'") else {
            return nil
        }
        let shown = message[message.index(message.startIndex, offsetBy: prefix.count)..<end]
        let option = shown.split(separator: " ").first.map(String.init) ?? ""
        guard let at = words.firstIndex(of: option), at + 1 < words.count else { return nil }
        let value = words[at + 1]
        guard value.hasPrefix("-"), value.dropFirst().first?.isNumber == true,
            value.dropFirst().allSatisfy({ $0.isNumber || $0 == "." })
        else { return nil }
        return "Invalid value '\(SecretShape.excerpt(value, limit: 24))' for '\(shown)': it cannot be negative."
    }

    /// "Unknown subcommand 'scna' of 'cleanup' (did you mean 'scan'?)" when the words stop
    /// matching the tree inside a command group.
    static func unknownSubcommand(_ words: [String]) -> String? {
        var node: (any ParsableCommand.Type)?
        var index = 0
        var candidates = ConsoleLine.configuration.subcommands
        while index < words.count, let next = candidates.first(where: { Completion.commandName($0) == words[index] }) {
            node = next
            candidates = next.configuration.subcommands
            index += 1
        }
        guard node != nil, !candidates.isEmpty, index < words.count, !words[index].hasPrefix("-") else { return nil }
        let path = words[..<index].joined(separator: " ")
        let names = candidates.map { Completion.commandName($0) }
        return "Unknown subcommand '\(words[index])' of '\(path)'\(Suggest.didYouMean(words[index], among: names)); "
            + "`help \(path)` lists them."
    }

    /// `help [COMMAND…]`: generated from the same tree the parser uses, with examples.
    func help(_ path: [String]) -> Int32 {
        let text: String
        if path.isEmpty {
            text = HelpText.overview()
        } else if let command = Completion.resolve(path), Completion.commandName(command) == path.last {
            text = HelpText.command(command, path: path)
        } else {
            let word = path.last ?? ""
            let known =
                Completion.resolve(Array(path.dropLast())).map {
                    $0.configuration.subcommands.map(Completion.commandName)
                }
                ?? Completion.commandWords
            report(
                .usage(
                    "No help for '\(path.joined(separator: " "))'\(Suggest.didYouMean(word, among: known)); `help` lists the commands."
                ))
            return ExitStatus.usage
        }
        showHelp(text)
        return ExitStatus.ok
    }

    private func showHelp(_ text: String) {
        if ctx.settings.format == .json {
            Terminal.writeOut(JSONLine.encode(["help": text]))
        } else {
            Pager.show(text, ctx: ctx)
        }
    }
}

/// An error as one JSON line: `{"error": {"code", "message"}}`, plus where it happened in a batch.
struct BatchError: Encodable {
    struct Body: Encodable {
        var code: String
        var message: String
    }
    var error: Body
    var line: Int?
    var file: String?
    /// An interrupted job's `interrupted`, `done`, `total` and `left`, beside the error.
    var stopped: JobInterruption.Fields?

    enum CodingKeys: CodingKey { case error, line, file }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(error, forKey: .error)
        try container.encodeIfPresent(line, forKey: .line)
        try container.encodeIfPresent(file, forKey: .file)
        try stopped?.encode(to: encoder)
    }
}
