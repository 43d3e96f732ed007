import ArgumentParser

/// The text of `backupctl --help`, `help` and `help COMMAND`: generated from the same command
/// tree the parser uses, with the global options and examples for every command.
@MainActor
enum HelpText {
    /// Top-level help: usage, the global options, and every command with one example.
    static func overview() -> String {
        var out = """
            backupctl — admin and disaster-recovery console for the end-to-end encrypted backup system.

            USAGE: backupctl [OPTIONS] [COMMAND …]
                   backupctl [OPTIONS] -c COMMAND [-c COMMAND …] | -f FILE
              With no command, -c or -f: a REPL when stdin is a terminal, otherwise commands are read
              from stdin, one a line. Global options may also follow the command words
              (`backupctl cleanup run --execute --yes`); inside the REPL, `set format json`
              (or `\\format json`) switches the output format.

            """
        out += "\nGLOBAL " + globalOptions() + "\n\nCOMMANDS (the role a command needs is in parentheses):\n"
        var rows: [(String, String, String)] = []
        for (path, command) in leaves() {
            rows.append((path, command.configuration.abstract, Examples.first(path) ?? path))
        }
        let width = min(rows.map(\.0.count).max() ?? 0, 26)
        for (path, abstract, example) in rows {
            out +=
                "  " + path.padding(toLength: max(width, path.count), withPad: " ", startingAt: 0) + "  " + abstract
                + "\n  " + String(repeating: " ", count: max(width, path.count)) + "  e.g. " + example + "\n"
        }
        out += "\nEXIT CODES (a batch stops at the first failure and exits with its code):\n" + ExitStatus.text + "\n"
        out += "\n`help COMMAND …` (or `COMMAND --help`) shows a command's options and examples."
        return out
    }

    /// Help for one command: ArgumentParser's text, then examples.
    static func command(_ command: any ParsableCommand.Type, path: [String]) -> String {
        var text = ConsoleLine.helpMessage(for: command)
        let key = path.joined(separator: " ")
        let examples =
            Examples.table[key]
            ?? leaves().filter { $0.path.hasPrefix(key + " ") }.compactMap {
                Examples.first($0.path)
            }
        if !examples.isEmpty {
            text += "\n\nEXAMPLES:\n" + examples.map { "  " + $0 }.joined(separator: "\n")
        }
        return text
    }

    /// The OPTIONS section of the process's own help (`--db`, `--format`, `-c`, …).
    static func globalOptions() -> String {
        let full = Backupctl.helpMessage(columns: 100)
        guard let start = full.range(of: "OPTIONS:") else { return "OPTIONS: see README" }
        return String(full[start.lowerBound...]).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Every runnable command of the tree with its full path, in tree order.
    static func leaves() -> [(path: String, command: any ParsableCommand.Type)] {
        var out: [(String, any ParsableCommand.Type)] = []
        func walk(_ prefix: String, _ nodes: [any ParsableCommand.Type]) {
            for node in nodes {
                let path = prefix.isEmpty ? Completion.commandName(node) : prefix + " " + Completion.commandName(node)
                if node.configuration.subcommands.isEmpty {
                    out.append((path, node))
                } else {
                    walk(path, node.configuration.subcommands)
                }
            }
        }
        walk("", ConsoleLine.configuration.subcommands)
        return out
    }
}
