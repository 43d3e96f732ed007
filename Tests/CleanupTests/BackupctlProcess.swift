import Foundation

/// (A copy of Tests/TurnkeySandboxTests/BackupctlProcess.swift: test targets share no sources.)
/// A running `backupctl` process: its output collected as it comes, signals, a bounded wait.
///
/// The binary is the one built next to the test bundle (`swift build --build-tests` builds both),
/// found as `Tests/AdminREPLTests/CLI.swift` finds it; `BACKUPCTL_BIN` overrides.
final class BackupctlProcess: @unchecked Sendable {
    static let binary: URL = {
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

    static var binaryExists: Bool { FileManager.default.isExecutableFile(atPath: binary.path) }

    private let process = Process()
    private let lock = NSLock()
    private var out = Data()
    private var err = Data()

    /// Starts `backupctl ARGUMENTS` with exactly `environment`.
    init(_ arguments: [String], environment: [String: String]) throws {
        process.executableURL = Self.binary
        process.arguments = arguments
        process.environment = environment
        let outPipe = Pipe()
        let errPipe = Pipe()
        process.standardOutput = outPipe
        process.standardError = errPipe
        process.standardInput = FileHandle.nullDevice
        outPipe.fileHandleForReading.readabilityHandler = { [weak self] handle in
            let data = handle.availableData
            guard let self, !data.isEmpty else { return }
            self.lock.withLock { self.out.append(data) }
        }
        errPipe.fileHandleForReading.readabilityHandler = { [weak self] handle in
            let data = handle.availableData
            guard let self, !data.isEmpty else { return }
            self.lock.withLock { self.err.append(data) }
        }
        try process.run()
    }

    var pid: Int32 { process.processIdentifier }
    var isRunning: Bool { process.isRunning }
    var stdout: String { lock.withLock { String(decoding: out, as: UTF8.self) } }
    var stderr: String { lock.withLock { String(decoding: err, as: UTF8.self) } }

    func signal(_ number: Int32) { kill(process.processIdentifier, number) }

    /// Polls `condition` every 20 ms for at most `seconds`; whether it became true.
    static func waitUntil(seconds: Double, _ condition: () -> Bool) async -> Bool {
        let rounds = Int(seconds * 50)
        for _ in 0..<max(1, rounds) {
            if condition() { return true }
            try? await Task.sleep(nanoseconds: 20_000_000)
        }
        return condition()
    }

    /// The exit status, or `nil` (after a SIGKILL) when it has not exited within `seconds`.
    func waitExit(seconds: Double) async -> Int32? {
        let process = process
        guard await Self.waitUntil(seconds: seconds, { !process.isRunning }) else {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            return nil
        }
        process.waitUntilExit()
        // Let the readability handlers drain what is left in the pipes.
        try? await Task.sleep(nanoseconds: 50_000_000)
        return process.terminationStatus
    }

    var terminatedBySignal: Bool { process.terminationReason == .uncaughtSignal }

    /// Makes sure the process is gone (tests end with this in a `defer`).
    func kill9() {
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }
}

struct HarnessError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
