import ArgumentParser

/// Tab completion over the command tree: command words, subcommands, `--flags`, tenant
/// names after `use` and `--tenant`, and backup ids of the tenant after `show`, `check` and co.
@MainActor
struct Completion {
    let tenants: () -> [String]
    /// Backup ids of the current tenant starting with the given id prefix (a few dozen at most).
    var backupIds: (String) -> [String] = { _ in [] }

    /// Commands whose first argument is a backup id.
    static let takesBackupId: Set<[String]> = [["show"], ["check"], ["reset", "begin"], ["lookup", "account"]]

    func candidates(before: [String], prefix: String) -> [String] {
        if let last = before.last, last == "--tenant" || (before.count == 1 && last == "use") {
            return tenants().filter { $0.hasPrefix(prefix) }.sorted()
        }
        if Self.takesBackupId.contains(before), !prefix.hasPrefix("-") {
            let full = prefix.hasPrefix("b") ? prefix : "backup_account_" + prefix
            return backupIds(full).filter { $0.hasPrefix(full) }
        }
        if before.first == "set" {
            let values: [String]
            switch before.count {
            case 1: values = SetCommand.names
            case 2 where before[1] == "format": values = OutputFormat.allCases.map(\.rawValue)
            case 2 where before[1] == "pager": values = ["on", "off"]
            case 2 where before[1] == "color": values = ColorMode.allCases.map(\.rawValue)
            default: values = []
            }
            return values.filter { $0.hasPrefix(prefix) }
        }
        let path = before.filter { !$0.hasPrefix("-") }
        guard let node = Self.resolve(path) else {
            // The first word: a command (or `help`).
            return path.isEmpty ? (Self.commandWords + ["help"]).filter { $0.hasPrefix(prefix) }.sorted() : []
        }
        if prefix.hasPrefix("-") {
            return Self.flags(of: node).filter { $0.hasPrefix(prefix) }
        }
        // A group offers its subcommands; a command's own words are values (ids, names), which
        // Tab cannot guess — offering `--help` there would only insert it.
        let subcommands = node.configuration.subcommands.map { Self.commandName($0) }
        return subcommands.filter { $0.hasPrefix(prefix) }.sorted()
    }

    /// The top-level command words.
    static var commandWords: [String] { ConsoleLine.configuration.subcommands.map { commandName($0) } }

    /// The deepest command named by `path`, or `nil` for the root.
    static func resolve(_ path: [String]) -> (any ParsableCommand.Type)? {
        var found: (any ParsableCommand.Type)?
        for word in path {
            guard let next = subcommand(of: found ?? ConsoleLine.self, named: word) else { break }
            found = next
        }
        return found
    }

    /// The subcommand of `parent` called `name` (the first, as ArgumentParser picks), from a
    /// table of the whole tree made once: every script line resolves its command, and reading
    /// each candidate's configuration (and `String(describing:)` of its type) per line was a
    /// twentieth of a lookup's cost.
    static func subcommand(of parent: any ParsableCommand.Type, named name: String) -> (any ParsableCommand.Type)? {
        guard let named = children[ObjectIdentifier(parent)] else {
            return parent.configuration.subcommands.first { commandName($0) == name }
        }
        return named[name]
    }

    private static let children: [ObjectIdentifier: [String: any ParsableCommand.Type]] = {
        var table: [ObjectIdentifier: [String: any ParsableCommand.Type]] = [:]
        var pending: [any ParsableCommand.Type] = [ConsoleLine.self]
        while let type = pending.popLast() {
            guard table[ObjectIdentifier(type)] == nil else { continue }
            let subcommands = type.configuration.subcommands
            table[ObjectIdentifier(type)] = Dictionary(
                subcommands.map { (commandName($0), $0) }, uniquingKeysWith: { first, _ in first })
            pending += subcommands
        }
        return table
    }()

    static func commandName(_ type: any ParsableCommand.Type) -> String {
        type.configuration.commandName ?? String(describing: type).lowercased()
    }

    /// `--long` names of a command's options and flags, read from the OPTIONS section of its
    /// generated help (not its prose, where `--execute;` may appear).
    static func flags(of command: any ParsableCommand.Type) -> [String] {
        flags(inHelp: ConsoleLine.helpMessage(for: command, columns: 1000))
    }

    /// The `--long` option names of one generated help text.
    static func flags(inHelp help: String) -> [String] {
        var out: Set<String> = ["--help"]
        guard let section = help.range(of: "OPTIONS:") else { return out.sorted() }
        for line in help[section.upperBound...].split(separator: "\n") {
            let trimmed = line.drop { $0 == " " }
            // Option lines start with the option; wrapped help text is indented further.
            guard trimmed.hasPrefix("-"), line.count - trimmed.count <= 4 else { continue }
            for token in trimmed.split(whereSeparator: { $0 == " " || $0 == "," }) {
                let name = token.prefix { $0 != "=" && $0 != "<" }
                if name.hasPrefix("--"), name.count > 2,
                    name.dropFirst(2).allSatisfy({ $0.isLowercase || $0.isNumber || $0 == "-" })
                {
                    out.insert(String(name))
                }
            }
        }
        return out.sorted()
    }
}
