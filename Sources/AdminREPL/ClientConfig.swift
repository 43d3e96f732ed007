import BackupModel
import ConsoleService
import Foundation

/// Named server contexts, as kubectl keeps them: `$XDG_CONFIG_HOME/backupctl/config`
/// (`~/.config/backupctl/config`), JSON, mode 0600. A context names a server, the file holding
/// the operator's token (the token itself stays in that file), an optional CA certificate to
/// trust and a default tenant.
struct ClientConfig: Codable, Equatable {
    struct Context: Codable, Equatable {
        var server: String
        var tokenFile: String?
        var caFile: String?
        var tenant: String?
    }

    var current: String?
    var contexts: [String: Context] = [:]

    static func path(environment: [String: String]) -> String {
        if let xdg = environment["XDG_CONFIG_HOME"], !xdg.isEmpty { return xdg + "/backupctl/config" }
        return (environment["HOME"] ?? NSHomeDirectory()) + "/.config/backupctl/config"
    }

    /// The saved contexts; none when the file does not exist.
    /// - Throws: `insecure_config` when others may read or write the file (it decides which
    ///   server gets the token), `invalid_config` when it is not this format.
    static func load(environment: [String: String]) throws(ConsoleError) -> ClientConfig {
        let path = path(environment: environment)
        var info = stat()
        guard lstat(path, &info) == 0 else { return ClientConfig() }
        // Whoever may write the directory may swap the file for one naming their server.
        let directory = (path as NSString).deletingLastPathComponent
        var directoryInfo = stat()
        if stat(directory, &directoryInfo) == 0, directoryInfo.st_mode & 0o077 != 0 {
            throw .configuration(
                "insecure_config",
                "\(directory) is open to others (mode \(String(directoryInfo.st_mode & 0o777, radix: 8))); run chmod 700 \(directory)."
            )
        }
        guard info.st_mode & S_IFMT == S_IFREG else {
            throw .invalid("invalid_config", "\(path) is not a regular file.")
        }
        guard info.st_mode & 0o077 == 0 else {
            throw .configuration(
                "insecure_config",
                "\(path) is readable or writable by others (mode \(String(info.st_mode & 0o777, radix: 8))); run chmod 600 \(path)."
            )
        }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw .invalid("invalid_config", "Cannot read \(path).")
        }
        do {
            return try JSONDecoder().decode(ClientConfig.self, from: data)
        } catch {
            throw .invalid("invalid_config", "\(path) is not a backupctl config (JSON with \"contexts\").")
        }
    }

    /// Writes the file atomically with mode 0600 (its directory 0700 when made here).
    func save(environment: [String: String]) throws(ConsoleError) {
        let path = Self.path(environment: environment)
        let directory = (path as NSString).deletingLastPathComponent
        do {
            try FileManager.default.createDirectory(
                atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
            let temporary = path + ".tmp-\(getpid())"
            let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW, 0o600)
            guard fd >= 0 else { throw ConsoleError.invalid("invalid_config", "Cannot write \(path).") }
            let handle = FileHandle(fileDescriptor: fd, closeOnDealloc: true)
            try handle.write(contentsOf: try encoder.encode(self) + Data("\n".utf8))
            try handle.close()
            guard rename(temporary, path) == 0 else {
                throw ConsoleError.invalid("invalid_config", "Cannot write \(path).")
            }
        } catch let error as ConsoleError {
            throw error
        } catch {
            throw .invalid("invalid_config", "Cannot write \(path): \(error.localizedDescription)")
        }
    }

    /// The CA file of a context whose server is `server` (trailing slashes ignored): the
    /// current context's first, else any other's.
    func caFile(forServer server: String) -> String? {
        func same(_ a: String, _ b: String) -> Bool {
            var a = a
            var b = b
            while a.hasSuffix("/") { a.removeLast() }
            while b.hasSuffix("/") { b.removeLast() }
            return a == b
        }
        if let current, let context = contexts[current], same(context.server, server) { return context.caFile }
        return contexts.keys.sorted().lazy.compactMap { self.contexts[$0] }.first { same($0.server, server) }?.caFile
    }

    /// The context a run uses: `--context`/`$BACKUPCTL_CONTEXT` when given, else the current
    /// one unless the run names a store of its own (`--db`, `$BACKUPCTL_DB`).
    func selected(named name: String?, hasOwnStore: Bool) throws(ConsoleError) -> (String, Context)? {
        if let name {
            guard let context = contexts[name] else {
                throw .invalid(
                    "unknown_context",
                    "No context named \(name)\(Suggest.didYouMean(name, among: Array(contexts.keys))); `context list` shows them."
                )
            }
            return (name, context)
        }
        guard !hasOwnStore, let current, let context = contexts[current] else { return nil }
        return (current, context)
    }
}
