import Foundation

/// The real `backupctl` as a child process — the one way tests and benchmarks run it — found
/// next to the test bundle (`swift build --build-tests` builds both into the same directory),
/// `BACKUPCTL_BIN` overriding.
public enum BackupctlBinary {
    public static let url: URL = {
        if let explicit = ProcessInfo.processInfo.environment["BACKUPCTL_BIN"] {
            return URL(fileURLWithPath: explicit)
        }
        let testBinary = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
        var directory = testBinary.deletingLastPathComponent()
        for _ in 0..<4 {
            let candidate = directory.appendingPathComponent("backupctl")
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
            directory = directory.deletingLastPathComponent()
        }
        return URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent(".build/debug/backupctl")
    }()

    public static var exists: Bool { FileManager.default.isExecutableFile(atPath: url.path) }

    /// The binary's path.
    public static var path: String { url.path }

    /// Why a suite that needs the binary cannot run (for `.enabled(if:)` and `#require`).
    public static let missing = "build the backupctl binary first: swift build --build-tests"

    /// Runs `backupctl ARGUMENTS` to completion with exactly `environment`, feeding `stdin`.
    /// - Throws: ``ChildProcessError`` when it cannot start or outlives `seconds` (then killed).
    public static func run(
        _ arguments: [String], environment: [String: String], stdin: String? = nil, seconds: Double = 300
    ) async throws -> ChildResult {
        try await ChildProcess.run(
            path, arguments, environment: environment, input: stdin.map { .data(Data($0.utf8)) } ?? .null,
            seconds: seconds)
    }

    /// Starts `backupctl ARGUMENTS` (on `terminal` when given) and returns at once.
    public static func start(
        _ arguments: [String], environment: [String: String], input: ChildProcess.Input = .null,
        terminal: PseudoTerminal? = nil
    ) throws -> ChildProcess {
        try ChildProcess.start(path, arguments, environment: environment, input: input, terminal: terminal)
    }
}
