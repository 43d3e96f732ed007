import BackupctlTestSupport
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// The real `backupctl` built by `swift build` (debug), run as a child process (through the
/// one runner, ``Backupctl``).
enum Binary {
    static var url: URL { BackupctlBinary.url }
    static var exists: Bool { BackupctlBinary.exists }

    typealias Run = ChildResult

    /// An environment made from scratch: nothing of the caller's (no token, db or tenant, and
    /// no `HOME` whose `~/.config/backupctl/config` a run without `--db` would read); a fresh
    /// home with its XDG directories under the temporary directory.
    static func cleanEnvironment(_ extra: [String: String] = [:]) -> [String: String] {
        let home = FileManager.default.temporaryDirectory.appendingPathComponent("home-\(UUID().uuidString)").path
        var env = [
            "PATH": "/usr/bin:/bin", "HOME": home, "XDG_CONFIG_HOME": home + "/config",
            "XDG_DATA_HOME": home + "/data", "XDG_STATE_HOME": home + "/state", "NO_COLOR": "1", "TERM": "dumb",
        ]
        for (k, v) in extra { env[k] = v }
        return env
    }

    /// Runs to completion, feeding `stdin` (empty when nil).
    static func run(_ args: [String], stdin: String? = nil, environment: [String: String] = cleanEnvironment())
        async throws -> Run
    {
        try await BackupctlBinary.run(args, environment: environment, stdin: stdin)
    }

    /// The `error.code` of a JSON-mode error line on stderr.
    static func errorCode(_ stderr: String) -> String? {
        guard let line = stderr.split(separator: "\n").last,
            let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
            let error = object["error"] as? [String: Any]
        else { return nil }
        return error["code"] as? String
    }
}
