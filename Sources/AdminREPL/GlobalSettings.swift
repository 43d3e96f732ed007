import ArgumentParser
import BackupModel
import Foundation

/// `--format`: ArgumentParser parses and lists the values; the REPL's per-line forms and the
/// environment go through ``parse(_:)``, so every path gives the same one-line error.
enum OutputFormat: String, CaseIterable, ExpressibleByArgument {
    case table, json, yaml, csv

    static func parse(_ text: String) throws(ConsoleError) -> OutputFormat {
        guard let format = OutputFormat(rawValue: text) else {
            throw .usage("--format must be table, json, yaml or csv, got \(SecretShape.excerpt(text, limit: 40)).")
        }
        return format
    }
}

/// `--color`.
enum ColorMode: String, CaseIterable, ExpressibleByArgument {
    case auto, always, never

    static func parse(_ text: String) throws(ConsoleError) -> ColorMode {
        guard let mode = ColorMode(rawValue: text) else {
            throw .usage("--color must be auto, always or never, got \(SecretShape.excerpt(text, limit: 40)).")
        }
        return mode
    }
}

/// The global options of DESIGN.md §2, resolved against the environment once per process.
struct GlobalSettings {
    var dbPath: String
    var tenant: String?
    var format: OutputFormat
    var tokenFile: String?
    var continueOnError: Bool
    var yes: Bool
    var color: ColorMode
    /// `--no-pager` (or `set pager off`): never start a pager.
    var noPager = false
    /// `--server URL` / `$BACKUPCTL_SERVER`: run every command on that `backupctl serve`.
    var server: String?
    /// A PEM CA certificate the client trusts for the server (`--ca-file`,
    /// `$BACKUPCTL_CA_FILE`, else the context's).
    var caFile: String?
    /// `--insecure-plain-http`: plain `http://` to a server that is not this machine.
    var insecurePlainHTTP = false
    /// The saved context this run uses, if any (the prompt and `whoami` name it).
    var contextName: String?

    /// Where commands run, for the prompt: the context's name, else the server's host and port,
    /// else nothing (the embedded store).
    var location: String? {
        if let contextName { return contextName }
        guard let server else { return nil }
        return server.split(separator: "/").dropFirst().first.map(String.init) ?? server
    }

    static func defaultDBPath(environment: [String: String]) -> String {
        if let db = environment["BACKUPCTL_DB"], !db.isEmpty { return db }
        return dataHome(environment: environment) + "/backupctl/console.db"
    }

    static func dataHome(environment: [String: String]) -> String {
        if let xdg = environment["XDG_DATA_HOME"], !xdg.isEmpty { return xdg }
        return (environment["HOME"] ?? NSHomeDirectory()) + "/.local/share"
    }

    static func stateHome(environment: [String: String]) -> String {
        if let xdg = environment["XDG_STATE_HOME"], !xdg.isEmpty { return xdg }
        return (environment["HOME"] ?? NSHomeDirectory()) + "/.local/state"
    }

    /// Colour on stdout: `--color always|never` wins; `auto` means a terminal without
    /// `NO_COLOR` and with a `TERM` other than `dumb`.
    func useColor(isTerminal: Bool, environment: [String: String]) -> Bool {
        switch color {
        case .always: return true
        case .never: return false
        case .auto:
            if environment["NO_COLOR"].map({ !$0.isEmpty }) == true { return false }
            if environment["TERM"] == "dumb" { return false }
            return isTerminal
        }
    }
}
