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
        var words: [String]
        do {
            words =
                line.hasPrefix("\\")
                ? ["set"] + (try LineSplitter.split(String(line.dropFirst()))) : try LineSplitter.split(line)
            let (kept, trailing) = try TrailingOptions.extract(words)
            var lineSettings = settings
            if !trailing.isEmpty {
                try trailing.applyPerLine(to: &lineSettings)
                words = kept
            }
            guard let first = words.first, first != "help", first != "--help", first != "-h" else { return nil }
            guard let top = Completion.resolve([first]) else {
                return .usage(
                    "Unknown command '\(first)'\(Suggest.didYouMean(first, among: Completion.commandWords)); `help` lists the commands."
                )
            }
            _ = ArgumentFailure.take()
            let parsed: any ParsableCommand
            do {
                parsed = try Executor.parse(words, top: top)
            } catch {
                return Executor.parseFailure(error, root: top, words: words)
            }
            if lineSettings.format == .csv, parsed is any ConsoleCommand, !(parsed is any ListsRecords) {
                return .usage(
                    "--format csv is for commands that list rows (\(ListsRecordsNames.all)); yaml and json fit all.")
            }
            return (parsed as? any ReadsStdin)?.stdinRefusal
        } catch {
            return error
        }
    }
}

/// A command that may read stdin itself (a Root Key): refused before a script that arrives on
/// stdin runs, since stdin then carries the commands.
protocol ReadsStdin {
    var stdinRefusal: ConsoleError? { get }
}
