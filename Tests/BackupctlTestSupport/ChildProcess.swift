import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A child process of a test or benchmark: spawned with `posix_spawn` (never `Foundation.Process`,
/// whose `run()` crashes now and then on Linux), in a process group of its own, its output
/// gathered by one monitor thread, every wait bounded and asynchronous.
///
/// The child's group is killed when the child is stopped, when its leader exits (stragglers such
/// as a pager go with it), when the object is released, and — through ``ChildReaper`` — when the
/// test process itself dies, however it dies.
public final class ChildProcess: Sendable {
    /// What the child reads on its standard input.
    public enum Input: Sendable {
        /// `/dev/null`.
        case null
        /// These bytes, then end of file.
        case data(Data)
        /// A pipe left open: ``write(_:)`` feeds it, ``closeInput()`` ends it.
        case open
    }

    public let pid: pid_t
    /// The command line, for messages.
    public let command: String
    let id: Int
    let monitor: ChildMonitor

    init(pid: pid_t, command: String, id: Int, monitor: ChildMonitor) {
        self.pid = pid
        self.command = command
        self.id = id
        self.monitor = monitor
    }

    deinit { monitor.release(id) }

    // MARK: - Starting

    /// Starts `executable ARGUMENTS` with exactly `environment`, in a group of its own.
    /// - Parameters:
    ///   - executable: a path, or a name looked up in `environment["PATH"]` then this process's PATH.
    ///   - directory: the working directory (this process's when nil).
    ///   - terminal: a pseudo-terminal to run on (a new session; the terminal becomes its controlling
    ///     terminal, and stdin, stdout and stderr are all the terminal: ``stdout`` is the transcript).
    /// - Throws: ``ChildProcessError/spawnFailed(_:errno:)``.
    public static func start(
        _ executable: String, _ arguments: [String], environment: [String: String], input: Input = .null,
        directory: String? = nil, terminal: PseudoTerminal? = nil
    ) throws -> ChildProcess {
        let path = try resolve(executable, environment: environment)
        return try ChildMonitor.shared.spawn(
            path: path, arguments: arguments, environment: environment, input: input, directory: directory,
            terminal: terminal)
    }

    /// Runs `executable ARGUMENTS` to completion: its output (both pipes drained together) and how
    /// it ended.
    /// - Throws: ``ChildProcessError/timedOut(command:seconds:stdout:stderr:)`` after `seconds`
    ///   (the group is killed first), or a spawn failure.
    public static func run(
        _ executable: String, _ arguments: [String], environment: [String: String], input: Input = .null,
        directory: String? = nil, seconds: Double = 300
    ) async throws -> ChildResult {
        let child = try start(executable, arguments, environment: environment, input: input, directory: directory)
        return try await child.result(seconds: seconds)
    }

    // MARK: - Output and state

    /// Everything written to stdout so far (the whole transcript on a terminal).
    public var stdout: String { String(decoding: monitor.output(id).stdout, as: UTF8.self) }
    public var stderr: String { String(decoding: monitor.output(id).stderr, as: UTF8.self) }
    public var stdoutData: Data { monitor.output(id).stdout }
    /// Both streams and the end so far, read at one moment.
    public var output: ChildOutput { monitor.output(id) }
    public var isRunning: Bool { monitor.output(id).termination == nil }
    /// How the child ended, once it has.
    public var termination: ChildTermination? { monitor.output(id).termination }

    // MARK: - Waiting (every wait bounded)

    /// Waits until `condition` holds for the output so far; false when the deadline passes, the
    /// task is cancelled, or the child ended with all its output in and the condition still false.
    @discardableResult
    public func waitFor(seconds: Double = 60, _ condition: @escaping @Sendable (ChildOutput) -> Bool) async -> Bool {
        await monitor.wait(id, seconds: seconds) { output in
            if condition(output) { return true }
            return output.finished ? false : nil
        }
    }

    /// Waits until stdout contains `needle`.
    @discardableResult
    public func waitForStdout(_ needle: String, seconds: Double = 60) async -> Bool {
        await waitFor(seconds: seconds) { $0.stdoutText.contains(needle) }
    }

    /// Waits until stderr contains `needle`.
    @discardableResult
    public func waitForStderr(_ needle: String, seconds: Double = 60) async -> Bool {
        await waitFor(seconds: seconds) { $0.stderrText.contains(needle) }
    }

    /// Waits for the child to end and its output to be in; nil when it has not within `seconds`
    /// (it keeps running: follow with ``kill()`` or ``stop(seconds:)``).
    public func wait(seconds: Double = 60) async -> ChildTermination? {
        _ = await monitor.wait(id, seconds: seconds) { $0.finished ? true : nil }
        let output = monitor.output(id)
        return output.finished ? output.termination : nil
    }

    /// Waits for the end; the group is killed if it has not ended within `seconds`.
    /// - Throws: ``ChildProcessError/timedOut(command:seconds:stdout:stderr:)`` then.
    public func result(seconds: Double = 300) async throws -> ChildResult {
        if let termination = await wait(seconds: seconds) { return snapshot(termination) }
        let killed = await kill()
        throw ChildProcessError.timedOut(
            command: command, seconds: seconds, stdout: snapshot(killed).stdout, stderr: snapshot(killed).stderr)
    }

    /// The output so far with how the child ended.
    func snapshot(_ termination: ChildTermination) -> ChildResult {
        let output = monitor.output(id)
        return ChildResult(
            stdout: String(decoding: output.stdout, as: UTF8.self),
            stderr: String(decoding: output.stderr, as: UTF8.self), termination: termination)
    }

    // MARK: - Signals and input

    /// Sends `signal` to the child (its group leader) only.
    public func signal(_ signal: Int32) { monitor.signal(id, signal, group: false) }

    /// Sends `signal` to the child's whole process group.
    public func signalGroup(_ signal: Int32) { monitor.signal(id, signal, group: true) }

    /// SIGTERM, then the end; the group is killed when the child has not ended within `seconds`.
    @discardableResult
    public func stop(seconds: Double = 30) async -> ChildTermination {
        signal(SIGTERM)
        if let termination = await wait(seconds: seconds) { return termination }
        return await kill()
    }

    /// SIGKILLs the group and waits for the end (bounded: a killed group ends at once).
    @discardableResult
    public func kill() async -> ChildTermination {
        killNow()
        return await wait(seconds: 60) ?? .signaled(SIGKILL)
    }

    /// SIGKILLs the group without waiting (for a `defer`); the monitor reaps it.
    public func killNow() { monitor.signal(id, SIGKILL, group: true) }

    /// Writes `text` to the child's stdin pipe or terminal (in order, without blocking).
    public func write(_ text: String) { monitor.write(id, Array(text.utf8)) }

    /// Closes the stdin pipe once what was written has gone.
    public func closeInput() { monitor.closeInput(id) }

    // MARK: - Paths

    /// `executable` when it has a slash, else the first match in the child's PATH, then ours.
    public static func resolve(_ executable: String, environment: [String: String]) throws -> String {
        if executable.contains("/") { return executable }
        let paths =
            (environment["PATH"] ?? "").split(separator: ":")
            + (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":")
        for directory in paths {
            let candidate = "\(directory)/\(executable)"
            if access(candidate, X_OK) == 0 { return candidate }
        }
        throw ChildProcessError.spawnFailed(executable, errno: ENOENT)
    }
}

/// How a child ended.
public enum ChildTermination: Sendable, Equatable, CustomStringConvertible {
    case exited(Int32)
    case signaled(Int32)

    /// The shell's number: the exit code, or 128 + the signal.
    public var status: Int32 {
        switch self {
        case .exited(let code): code
        case .signaled(let signal): 128 + signal
        }
    }

    public var signaled: Bool {
        if case .signaled = self { return true }
        return false
    }

    public var description: String {
        switch self {
        case .exited(let code): "exit \(code)"
        case .signaled(let signal): "signal \(signal)"
        }
    }
}

/// A finished child's output and end: the one result shape of every test that runs a process.
public struct ChildResult: Sendable {
    public var stdout: String
    public var stderr: String
    public var termination: ChildTermination

    public init(stdout: String, stderr: String, termination: ChildTermination) {
        self.stdout = stdout
        self.stderr = stderr
        self.termination = termination
    }

    /// The exit code, or 128 + the signal.
    public var status: Int32 { termination.status }
    public var signaled: Bool { termination.signaled }
    /// stdout's non-empty lines.
    public var lines: [String] { stdout.split(separator: "\n").map(String.init) }
}

/// The output of a running child, as a wait condition sees it.
public struct ChildOutput: Sendable {
    public var stdout: Data
    public var stderr: Data
    public var termination: ChildTermination?
    /// The child has ended and both pipes are at end of file.
    public var finished: Bool

    public var stdoutText: String { String(decoding: stdout, as: UTF8.self) }
    public var stderrText: String { String(decoding: stderr, as: UTF8.self) }
}

public enum ChildProcessError: Error, CustomStringConvertible {
    case spawnFailed(String, errno: Int32)
    case timedOut(command: String, seconds: Double, stdout: String, stderr: String)

    public var description: String {
        switch self {
        case .spawnFailed(let executable, let code):
            "could not start \(executable): \(String(cString: strerror(code)))"
        case .timedOut(let command, let seconds, let stdout, let stderr):
            "\(command) did not finish within \(seconds) s (killed); stdout: \(stdout.suffix(2000)) stderr: \(stderr.suffix(2000))"
        }
    }
}
