import Foundation

/// Where the real `backupctl` is for tests that run it as a process: next to the test bundle
/// (`swift build --build-tests` builds both into the same directory), `BACKUPCTL_BIN` overriding.
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
}
