import ArgumentParser

/// A command whose common form is nothing but positional words, parsed without
/// swift-argument-parser's reflection.
///
/// ArgumentParser rebuilds its argument sets by reflection on every parse, twice: about a
/// third of a line's cost in a long `-f` script of lookups. The commands such a script is made
/// of fill their properties directly from plain words instead. Anything else — an option,
/// `--help`, the wrong number of words — returns `nil`, and the executor parses it with
/// ArgumentParser as usual, so messages and help are unchanged.
///
/// One difference is deliberate: a value that starts with a single `-` and is longer than a
/// short option (`-5iGFbL3U…`, a base64url credential id) is a value here, where ArgumentParser
/// would call it an unknown option unless the operator typed `--` first. `PositionalParseTests`
/// checks every such command against ArgumentParser on the same words (with that `--`).
protocol PositionalParse: ParsableCommand {
    /// The parsed command, or `nil` when `words` is not the plain positional form.
    static func parsePositional(_ words: [String]) -> Self?
}

extension PositionalParse {
    /// The words, when there are `count` of them and all are values.
    static func plain(_ words: [String], count: Int) -> [String]? {
        guard words.count == count, words.allSatisfy(isValue) else { return nil }
        return words
    }

    /// A command of one positional argument from exactly one value. `set` assigns it (a key
    /// path would read the unparsed property first, which ArgumentParser traps on).
    static func single(_ words: [String], _ set: (inout Self, String) -> Void) -> Self? {
        guard let words = plain(words, count: 1) else { return nil }
        var command = Self()
        set(&command, words[0])
        return command
    }

    /// Not an option: no leading `-`; or one `-` followed by more than one character (no
    /// command here has a short option besides `-h`, and none takes grouped flags); or `--`
    /// followed by something no long option looks like (`--61iK7O…`, a credential id), as long
    /// options are lowercase words joined by `-`.
    static func isValue(_ word: String) -> Bool {
        guard word.hasPrefix("-") else { return true }
        guard word.hasPrefix("--") else { return word.utf8.count > 2 }
        let name = word.dropFirst(2).prefix { $0 != "=" }
        guard !name.isEmpty else { return false }
        let looksLikeOption =
            name.first.map { ("a"..."z").contains($0) } == true
            && name.allSatisfy { ("a"..."z").contains($0) || $0 == "-" }
        return !looksLikeOption && name.count == word.count - 2
    }
}

extension LookupCommand.Passkey: PositionalParse {
    static func parsePositional(_ words: [String]) -> Self? { single(words) { $0.credentialId = $1 } }
}

extension LookupCommand.Oidc: PositionalParse {
    static func parsePositional(_ words: [String]) -> Self? {
        guard let words = plain(words, count: 2) else { return nil }
        var command = Self()
        command.provider = words[0]
        command.sub = words[1]
        return command
    }
}

extension LookupCommand.Keypair: PositionalParse {
    static func parsePositional(_ words: [String]) -> Self? {
        var rest = words
        let sync = rest.contains("--sync")
        rest.removeAll { $0 == "--sync" }
        guard words.count - rest.count <= 1, let rest = plain(rest, count: 1) else { return nil }
        var command = Self()
        command.publicKey = rest[0]
        command.sync = sync
        return command
    }
}

extension LookupCommand.Account: PositionalParse {
    static func parsePositional(_ words: [String]) -> Self? { single(words) { $0.backupAccountId = $1 } }
}

extension ShowCommand: PositionalParse {
    static func parsePositional(_ words: [String]) -> Self? { single(words) { $0.backupId = $1 } }
}
