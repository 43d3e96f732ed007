import ArgumentParser
import BackupModel
import ConsoleService

/// Parses a script line the way ``Executor/run(words:)`` would, without running anything: a
/// batch checks every line first, so a mistake on its last line stops it before its first
/// command (which may be destructive) runs.
@MainActor
enum ScriptCheck {
    /// The error the line would fail with before doing anything, or `nil` when it parses.
    static func refusal(_ line: String, settings: GlobalSettings) -> ConsoleError? {
        check(line, settings: settings).refusal
    }

    /// The line's refusal, or — when it parses to a command without per-line options — its
    /// words and command, which the run then uses instead of splitting and parsing it again.
    static func check(_ line: String, settings: GlobalSettings) -> (refusal: ConsoleError?, parsed: ParsedLine?) {
        var words: [String]
        do {
            words =
                line.hasPrefix("\\")
                ? ["set"] + (try LineSplitter.split(String(line.dropFirst()))) : try LineSplitter.split(line)
            let (kept, trailing) = try TrailingOptions.extract(words)
            var lineSettings = settings
            let trailingFree = trailing.isEmpty
            if !trailing.isEmpty {
                try trailing.applyPerLine(to: &lineSettings)
                words = kept
            }
            guard let first = words.first, first != "help", first != "--help", first != "-h" else { return (nil, nil) }
            guard let top = Completion.resolve([first]) else {
                return (
                    .usage(
                        "Unknown command '\(first)'\(Suggest.didYouMean(first, among: Completion.commandWords)); `help` lists the commands."
                    ), nil
                )
            }
            _ = ArgumentFailure.take()
            let parsed: any ParsableCommand
            do {
                parsed = try Executor.parse(words, top: top)
            } catch {
                return (Executor.parseFailure(error, root: top, words: words), nil)
            }
            if lineSettings.format == .csv, parsed is any ConsoleCommand, !(parsed is any ListsRecords) {
                return (
                    .usage(
                        "--format csv is for commands that list rows (\(ListsRecordsNames.all)); yaml and json fit all."
                    ),
                    nil
                )
            }
            if let refusal = (parsed as? any ReadsStdin)?.stdinRefusal { return (refusal, nil) }
            let plain = !line.hasPrefix("\\") && trailingFree && parsed is any ConsoleCommand
            return (nil, plain ? ParsedLine(words: words, command: parsed) : nil)
        } catch {
            return (error, nil)
        }
    }
}

/// A script line as its check parsed it: its words and the command they make.
struct ParsedLine {
    var words: [String]
    var command: any ParsableCommand
}

/// A command that may read stdin itself (a Root Key): refused before a script that arrives on
/// stdin runs, since stdin then carries the commands.
protocol ReadsStdin {
    var stdinRefusal: ConsoleError? { get }
}
