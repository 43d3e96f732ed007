import BackupModel

/// Global options written after the command words (`cleanup run --execute --yes`,
/// `lookup account X --format json`), taken out of the words before the command is parsed.
///
/// A word is taken only when it is exactly a global option (`--yes`, `--format json`,
/// `--format=json`) that the command itself does not declare (`operator add … --tenant T` keeps
/// its own `--tenant`), and only before a `--`. Credential ids that start with `-` are never a
/// global option's exact name, so they stay values (see ``PositionalParse``).
struct TrailingOptions: Equatable {
    var db: String?
    var tenant: String?
    var format: String?
    var tokenFile: String?
    var color: String?
    var server: String?
    var context: String?
    var caFile: String?
    var yes = false
    var continueOnError = false
    var noPager = false
    var insecurePlainHTTP = false

    static let valued = [
        "--db", "--tenant", "--format", "--token-file", "--color", "--server", "--context", "--ca-file",
    ]
    static let flags = ["--yes", "--continue-on-error", "--no-pager", "--insecure-plain-http"]

    var isEmpty: Bool { self == TrailingOptions() }

    /// Splits `words` into the command's words and the global options among them.
    /// - Throws: `usage` when a valued option has no value.
    @MainActor
    static func extract(_ words: [String]) throws(ConsoleError) -> (words: [String], options: TrailingOptions) {
        // Fast path (a long script of lookups): no word is a global option's name.
        let candidates = words.dropFirst().prefix { $0 != "--" }.contains { word in
            word.hasPrefix("--") && (flags.contains(word) || valued.contains(String(word.prefix { $0 != "=" })))
        }
        guard candidates else { return (words, TrailingOptions()) }
        let path = Array(words.prefix { !$0.hasPrefix("-") })
        let own = Set(Completion.resolve(path).map { Completion.flags(of: $0) } ?? [])
        var kept: [String] = []
        var options = TrailingOptions()
        var index = 0
        while index < words.count {
            let word = words[index]
            index += 1
            if word == "--" {
                kept += words[(index - 1)...]
                break
            }
            let name = String(word.prefix { $0 != "=" })
            guard word.hasPrefix("--"), kept.count >= 1, !own.contains(name),
                valued.contains(name) || (flags.contains(word))
            else {
                kept.append(word)
                continue
            }
            if flags.contains(word) {
                switch word {
                case "--yes": options.yes = true
                case "--continue-on-error": options.continueOnError = true
                case "--insecure-plain-http": options.insecurePlainHTTP = true
                default: options.noPager = true
                }
                continue
            }
            let value: String
            if name.count < word.count {
                value = String(word.dropFirst(name.count + 1))
            } else {
                guard index < words.count else { throw .usage("\(name) needs a value.") }
                value = words[index]
                index += 1
            }
            switch name {
            case "--db": options.db = value
            case "--tenant": options.tenant = value
            case "--format": options.format = value
            case "--token-file": options.tokenFile = value
            case "--server": options.server = value
            case "--context": options.context = value
            case "--ca-file": options.caFile = value
            default: options.color = value
            }
        }
        return (kept, options)
    }

    /// Applies the options that may change per command line (REPL, scripts): format, colour,
    /// pager and `--yes`. The store, operator and tenant belong to the whole run.
    /// - Throws: `usage` for a bad value or for an option that only the whole run may set.
    func applyPerLine(to settings: inout GlobalSettings) throws(ConsoleError) {
        if db != nil || tokenFile != nil || tenant != nil || server != nil || context != nil || continueOnError {
            throw .usage(
                "--db, --server, --context, --token-file, --tenant and --continue-on-error apply to the whole run: give them when "
                    + "starting backupctl (inside the console, `use TENANT` switches tenants).")
        }
        if let format { settings.format = try OutputFormat.parse(format) }
        if let color { settings.color = try ColorMode.parse(color) }
        if yes { settings.yes = true }
        if noPager { settings.noPager = true }
    }
}
