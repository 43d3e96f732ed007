import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A server `backupctl` process a test started — `serve`, `sandbox turnkey` or `sandbox
/// backup-service` on 127.0.0.1 — the one server starter: ready once it announced its URL
/// (a bounded wait), stopped with SIGTERM (its group SIGKILLed after a bounded wait), and killed
/// with its group when released or when the test process dies.
public final class ServerProcess: Sendable {
    /// How the server says it is ready.
    public enum Announcement: Sendable {
        /// `serve`: its first stdout line is `{"listening":"URL"}`.
        case listeningLine
        /// The sandboxes: a stderr line naming `http://127.0.0.1:PORT`.
        case stderrURL
    }

    public struct DidNotStart: Error, CustomStringConvertible {
        public var command: String
        public var termination: ChildTermination?
        public var stderr: String

        public init(command: String, termination: ChildTermination?, stderr: String) {
            self.command = command
            self.termination = termination
            self.stderr = stderr
        }

        public var description: String {
            "\(command) did not announce its address (\(termination?.description ?? "still running, killed")): \(stderr)"
        }
    }

    public let child: ChildProcess
    /// `http://127.0.0.1:PORT` (https with TLS), from the announcement.
    public let url: String

    private init(child: ChildProcess, url: String) {
        self.child = child
        self.url = url
    }

    /// Starts `backupctl ARGUMENTS` and waits at most `seconds` for its announcement.
    /// - Throws: ``DidNotStart`` when it exits or stays silent (it is killed then).
    public static func start(
        _ arguments: [String], environment: [String: String], announcement: Announcement, seconds: Double = 60
    ) async throws -> ServerProcess {
        let child = try BackupctlBinary.start(arguments, environment: environment)
        let found: @Sendable (ChildOutput) -> String? = { output in
            switch announcement {
            case .listeningLine: listeningURL(output.stdoutText)
            case .stderrURL: stderrURL(output.stderrText)
            }
        }
        _ = await child.waitFor(seconds: seconds) { found($0) != nil }
        guard let url = found(child.output) else {
            let termination = child.isRunning ? nil : await child.wait(seconds: 5)
            await child.kill()
            throw DidNotStart(
                command: arguments.prefix(2).joined(separator: " "), termination: termination, stderr: child.stderr)
        }
        return ServerProcess(child: child, url: url)
    }

    /// `backupctl serve --listen LISTEN --db DB [ARGUMENTS…]`; a `postgres://` DB goes in
    /// `BACKUPCTL_DB` instead (it carries a password: never an argument).
    public static func serve(
        db: String, arguments: [String] = [], listen: String = "127.0.0.1:0", environment: [String: String],
        seconds: Double = 60
    ) async throws -> ServerProcess {
        let isURL = db.hasPrefix("postgres://") || db.hasPrefix("postgresql://")
        var environment = environment
        if isURL { environment["BACKUPCTL_DB"] = db }
        // Every answer the tests see is checked against the server's OpenAPI document.
        environment["BACKUPCTL_CHECK_ANSWERS"] = environment["BACKUPCTL_CHECK_ANSWERS"] ?? "1"
        return try await start(
            ["serve", "--listen", listen] + (isURL ? [] : ["--db", db]) + arguments, environment: environment,
            announcement: .listeningLine, seconds: seconds)
    }

    /// `backupctl sandbox turnkey --listen 127.0.0.1:0 [ARGUMENTS…]`.
    public static func turnkeySandbox(arguments: [String], environment: [String: String]) async throws -> ServerProcess
    {
        try await start(
            ["sandbox", "turnkey", "--listen", "127.0.0.1:0"] + arguments, environment: environment,
            announcement: .stderrURL)
    }

    /// The URL of the first stdout line, `{"listening":"…"}` (with `--probe-listen`, also `"probes"`).
    public static func listeningURL(_ stdout: String) -> String? { listeningLine(stdout)?["listening"] }

    /// The probe listener's URL from the first stdout line (`serve --probe-listen`).
    public var probesURL: String? { Self.listeningLine(child.stdout)?["probes"] }

    static func listeningLine(_ stdout: String) -> [String: String]? {
        guard stdout.contains("\n"),
            let line = stdout.split(separator: "\n", omittingEmptySubsequences: false).first,
            let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: String],
            object["listening"] != nil, Set(object.keys).isSubset(of: ["listening", "probes"])
        else { return nil }
        return object
    }

    static func stderrURL(_ stderr: String) -> String? {
        guard let range = stderr.range(of: #"http://127\.0\.0\.1:[0-9]+"#, options: .regularExpression) else {
            return nil
        }
        return String(stderr[range])
    }

    public var stdout: String { child.stdout }
    public var stderr: String { child.stderr }
    public var isRunning: Bool { child.isRunning }

    /// Waits until the server's log (stderr) contains `needle`; false after `seconds`.
    public func waitForStderr(_ needle: String, seconds: Double = 30) async -> Bool {
        await child.waitForStderr(needle, seconds: seconds)
    }

    /// SIGTERM, then how it ended; its group is SIGKILLed when it has not ended within `seconds`.
    @discardableResult
    public func stop(seconds: Double = 30) async -> ChildTermination { await child.stop(seconds: seconds) }

    /// SIGKILLs its group without waiting (for a `defer`).
    public func killNow() { child.killNow() }
}
