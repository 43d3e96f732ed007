import Foundation

/// The REPL history file: `$XDG_STATE_HOME/backupctl/history`, mode 0600, and never a line
/// that carries a secret.
struct History {
    let path: String
    let limit = 2000

    init(environment: [String: String]) {
        path = GlobalSettings.stateHome(environment: environment) + "/backupctl/history"
    }

    /// Lines from earlier sessions, oldest first.
    func load() -> [String] {
        guard let data = FileManager.default.contents(atPath: path) else { return [] }
        return String(decoding: data, as: UTF8.self).split(separator: "\n").map(String.init).suffix(limit).map { $0 }
    }

    /// Appends a line unless it may carry a secret; the file is created 0600 and kept so.
    func append(_ line: String) {
        guard !Self.carriesSecret(line) else { return }
        let directory = (path as NSString).deletingLastPathComponent
        try? FileManager.default.createDirectory(
            atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let fd = open(path, O_WRONLY | O_APPEND | O_CREAT, 0o600)
        guard fd >= 0 else { return }
        defer { close(fd) }
        fchmod(fd, 0o600)
        let bytes = Array((line + "\n").utf8)
        _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
    }

    /// A line is kept out of history if it holds an operator or reset token, or anything shaped
    /// like a root or private key (a JSON key object, a run of exactly 64 hex digits — Backup
    /// Account IDs have 66 and stay).
    static func carriesSecret(_ line: String) -> Bool {
        let lower = line.lowercased()
        if lower.contains("--token") || lower.contains("bctl_") { return true }
        if lower.contains("\"key\"") || lower.contains("private") || lower.contains("secret") { return true }
        var run = 0
        for ch in lower.unicodeScalars {
            if ("0"..."9").contains(ch) || ("a"..."f").contains(ch) {
                run += 1
            } else {
                if run == 64 { return true }
                run = 0
            }
        }
        return run == 64
    }
}
