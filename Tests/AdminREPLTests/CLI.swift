import BackupctlTestSupport
import Foundation

/// Runs the real `backupctl` binary and returns what it printed and its exit status — the
/// end-to-end helper of swift-argument-parser's AssertExecuteCommand, for a whole process.
struct CLI {
    struct Result {
        var stdout: String
        var stderr: String
        var status: Int32

        var lines: [String] { stdout.split(separator: "\n").map(String.init) }
    }

    /// The binary built next to the test bundle (`swift build --build-tests` builds both).
    static var binary: URL { BackupctlBinary.url }

    /// A fresh store directory; the environment points everything (db, state, data) inside it.
    let directory: URL
    var environment: [String: String]

    init() {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("cli-\(UUID().uuidString)")
        try? FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        environment = [
            "PATH": "/usr/bin:/bin",
            "HOME": directory.path,
            "XDG_STATE_HOME": directory.appendingPathComponent("state").path,
            "XDG_DATA_HOME": directory.appendingPathComponent("data").path,
            "BACKUPCTL_DB": directory.appendingPathComponent("console.db").path,
            "TERM": "dumb",
        ]
    }

    func cleanUp() { try? FileManager.default.removeItem(at: directory) }

    @discardableResult
    func run(_ arguments: [String], stdin: String? = nil, extraEnvironment: [String: String] = [:]) throws -> Result {
        let process = Process()
        process.executableURL = Self.binary
        process.arguments = arguments
        process.environment = environment.merging(extraEnvironment) { $1 }
        let out = Pipe()
        let err = Pipe()
        let input = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = input
        try process.run()
        if let stdin { input.fileHandleForWriting.write(Data(stdin.utf8)) }
        try input.fileHandleForWriting.close()
        // Read both pipes concurrently so a chatty child never blocks on a full pipe.
        let group = DispatchGroup()
        nonisolated(unsafe) var errData = Data()
        group.enter()
        DispatchQueue.global().async {
            errData = err.fileHandleForReading.readDataToEndOfFile()
            group.leave()
        }
        let outData = out.fileHandleForReading.readDataToEndOfFile()
        group.wait()
        process.waitUntilExit()
        return Result(
            stdout: String(decoding: outData, as: UTF8.self), stderr: String(decoding: errData, as: UTF8.self),
            status: process.terminationStatus)
    }

    /// `init --admin root` and export the token the way an operator would.
    mutating func bootstrap(admin: String = "root") throws -> String {
        let result = try run(["--format", "json", "init", "--admin", admin])
        let object = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: String]
        let token = object?["token"] ?? ""
        environment["BACKUPCTL_TOKEN"] = token
        return token
    }

    static func json(_ line: String) -> [String: Any]? {
        (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any]
    }
}
