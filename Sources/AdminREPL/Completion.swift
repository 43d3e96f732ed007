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
        let path = before.filter { !$0.hasPrefix("-") }
        let node = Self.resolve(path)
        let subcommands = node.map { $0.configuration.subcommands } ?? ConsoleLine.configuration.subcommands
        var words = subcommands.map { Self.commandName($0) }
        if node == nil { words.append("help") }
        if prefix.hasPrefix("-") || words.isEmpty {
            words += node.map { Self.flags(of: $0) } ?? ["--help"]
        }
        return words.filter { $0.hasPrefix(prefix) }.sorted()
    }

    /// The deepest command named by `path`, or `nil` for the root.
    static func resolve(_ path: [String]) -> (any ParsableCommand.Type)? {
        var found: (any ParsableCommand.Type)?
        var candidates = ConsoleLine.configuration.subcommands
        for word in path {
            guard let next = candidates.first(where: { commandName($0) == word }) else { break }
            found = next
            candidates = next.configuration.subcommands
        }
        return found
    }

    static func commandName(_ type: any ParsableCommand.Type) -> String {
        type.configuration.commandName ?? String(describing: type).lowercased()
    }

    /// `--long` names of a command's options and flags, read from its generated help.
    static func flags(of command: any ParsableCommand.Type) -> [String] {
        let help = ConsoleLine.helpMessage(for: command)
        var out = Set<String>()
        for token in help.split(whereSeparator: { $0 == " " || $0 == "\n" || $0 == "," || $0 == "[" || $0 == "]" }) {
            if token.hasPrefix("--"), token.count > 2, token != "--help" {
                out.insert(String(token.prefix { $0 != "=" && $0 != "<" }))
            }
        }
        out.insert("--help")
        return out.sorted()
    }
}
