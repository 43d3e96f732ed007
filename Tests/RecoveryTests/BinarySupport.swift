import BackupctlTestSupport
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// The real `backupctl` built by `swift build` (debug), run as a child process.
enum Binary {
    static var url: URL { BackupctlBinary.url }
    static var exists: Bool { BackupctlBinary.exists }

    struct Run {
        var status: Int32
        var stdout: String
        var stderr: String
        /// Whether the process ended by a signal rather than exit().
        var signaled: Bool
    }

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
        throws -> Run
    {
        let process = try start(args, stdin: stdin, environment: environment)
        return finish(process)
    }

    struct Started {
        var process: Process
        var out: Pipe
        var err: Pipe
    }

    static func start(_ args: [String], stdin: String?, environment: [String: String]) throws -> Started {
        let process = Process()
        process.executableURL = url
        process.arguments = args
        process.environment = environment
        let input = Pipe()
        let out = Pipe()
        let err = Pipe()
        process.standardInput = input
        process.standardOutput = out
        process.standardError = err
        try process.run()
        if let stdin { input.fileHandleForWriting.write(Data(stdin.utf8)) }
        try? input.fileHandleForWriting.close()
        return Started(process: process, out: out, err: err)
    }

    static func finish(_ started: Started) -> Run {
        let stdout = started.out.fileHandleForReading.readDataToEndOfFile()
        let stderr = started.err.fileHandleForReading.readDataToEndOfFile()
        started.process.waitUntilExit()
        return Run(
            status: started.process.terminationStatus, stdout: String(decoding: stdout, as: UTF8.self),
            stderr: String(decoding: stderr, as: UTF8.self),
            signaled: started.process.terminationReason == .uncaughtSignal)
    }

    /// Starts the command, SIGKILLs it after `delayMicros`, and waits for it.
    static func runAndKill(_ args: [String], after delayMicros: UInt32, environment: [String: String]) throws -> Run {
        let started = try start(args, stdin: nil, environment: environment)
        usleep(delayMicros)
        kill(started.process.processIdentifier, SIGKILL)
        return finish(started)
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
