import Foundation

/// A running `backupctl` process: its output collected as it comes, signals, a bounded wait.
///
/// The binary is the one built next to the test bundle (`swift build --build-tests` builds both),
/// found by ``BackupctlBinary``.
public final class BackupctlProcess: @unchecked Sendable {
    public static var binary: URL { BackupctlBinary.url }

    public static var binaryExists: Bool { FileManager.default.isExecutableFile(atPath: binary.path) }

    private let process = Process()
    private let lock = NSLock()
    private var out = Data()
    private var err = Data()

    /// Starts `backupctl ARGUMENTS` with exactly `environment`.
    public init(_ arguments: [String], environment: [String: String]) throws {
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

    public var pid: Int32 { process.processIdentifier }
    public var isRunning: Bool { process.isRunning }
    public var stdout: String { lock.withLock { String(decoding: out, as: UTF8.self) } }
    public var stderr: String { lock.withLock { String(decoding: err, as: UTF8.self) } }

    public func signal(_ number: Int32) { kill(process.processIdentifier, number) }

    /// Polls `condition` every 20 ms for at most `seconds`; whether it became true.
    public static func waitUntil(seconds: Double, _ condition: () -> Bool) async -> Bool {
        let rounds = Int(seconds * 50)
        for _ in 0..<max(1, rounds) {
            if condition() { return true }
            try? await Task.sleep(nanoseconds: 20_000_000)
        }
        return condition()
    }

    /// The exit status, or `nil` (after a SIGKILL) when it has not exited within `seconds`.
    public func waitExit(seconds: Double) async -> Int32? {
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

    public var terminatedBySignal: Bool { process.terminationReason == .uncaughtSignal }

    /// Makes sure the process is gone (tests end with this in a `defer`).
    public func kill9() {
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }
}
