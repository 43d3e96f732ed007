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

    /// Environment with nothing of the caller's console settings (no token, no db, no tenant).
    static func cleanEnvironment(_ extra: [String: String] = [:]) -> [String: String] {
        var env = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("BACKUPCTL_") }
        env["NO_COLOR"] = "1"
        env["XDG_DATA_HOME"] =
            FileManager.default.temporaryDirectory.appendingPathComponent("xdg-\(UUID().uuidString)").path
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
