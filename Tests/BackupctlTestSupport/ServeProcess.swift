import Foundation

/// A `backupctl serve` started for a test: `serve --listen 127.0.0.1:0 --db PATH [ARGS…]` (a
/// `postgres://` URL goes in `BACKUPCTL_DB` instead), its
/// `{"listening":URL}` line read within a bounded wait, stopped with SIGTERM (SIGKILL after a
/// bounded wait). Tests end with ``stop(seconds:)`` or, in a `defer`, ``kill9()``.
public final class ServeProcess: @unchecked Sendable {
    public enum Failure: Error, CustomStringConvertible {
        case didNotListen(status: Int32?, stderr: String)

        public var description: String {
            switch self {
            case .didNotListen(let status, let stderr):
                "backupctl serve did not print its listening line (exit \(status.map(String.init) ?? "none")): \(stderr)"
            }
        }
    }

    public let process: BackupctlProcess
    /// `http://127.0.0.1:PORT` (https with TLS), from the listening line.
    public let url: String

    /// Starts the server and waits (at most `startupSeconds`) for its listening line.
    /// - Throws: ``Failure/didNotListen(status:stderr:)`` when it exits or stays silent.
    public init(
        db: String, arguments: [String] = [], listen: String = "127.0.0.1:0", environment: [String: String],
        startupSeconds: Double = 60
    ) async throws {
        // A database URL carries a password: it goes in the environment, never in an argument.
        let isURL = db.hasPrefix("postgres://") || db.hasPrefix("postgresql://")
        var environment = environment
        if isURL { environment["BACKUPCTL_DB"] = db }
        let process = try BackupctlProcess(
            ["serve", "--listen", listen] + (isURL ? [] : ["--db", db]) + arguments, environment: environment)
        let listened = await BackupctlProcess.waitUntil(seconds: startupSeconds) {
            process.stdout.contains("\n") || !process.isRunning
        }
        guard listened, let url = Self.listeningURL(process.stdout) else {
            let status = process.isRunning ? nil : await process.waitExit(seconds: 5)
            process.kill9()
            throw Failure.didNotListen(status: status, stderr: process.stderr)
        }
        self.process = process
        self.url = url
    }

    /// The URL of the first stdout line, `{"listening":"…"}`.
    public static func listeningURL(_ stdout: String) -> String? {
        guard let line = stdout.split(separator: "\n", omittingEmptySubsequences: false).first,
            let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: String],
            object.count == 1
        else { return nil }
        return object["listening"]
    }

    public var stdout: String { process.stdout }
    public var stderr: String { process.stderr }
    public var isRunning: Bool { process.isRunning }

    /// SIGTERM, then the exit status; `nil` when it had to be killed after `seconds`.
    public func stop(seconds: Double = 30) async -> Int32? {
        process.signal(SIGTERM)
        return await process.waitExit(seconds: seconds)
    }

    public func kill9() { process.kill9() }
}
