import BackupModel
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

    /// A line is kept out of history if it holds an operator or reset token, a signature, or
    /// anything shaped like a root or private key: a JSON key object, hex digits of a key or half
    /// of one however they are split, base64 of 32 bytes (``SecretShape``; a Backup Account ID's
    /// single run of 66 and a UUID stay), or hex digits alone (a piece of a key typed over
    /// several lines). Whatever follows `--root-key…`, `--token…` or `--signature` never reaches
    /// the file: the line goes.
    static func carriesSecret(_ line: String) -> Bool {
        let lower = line.lowercased()
        for flag in ["--token", "--root-key", "--signature", "bctl_"] where lower.contains(flag) { return true }
        if lower.contains("\"key\"") || lower.contains("private") || lower.contains("secret") { return true }
        // A line of hex digits alone is no command, but may be part of a key typed over several
        // lines (four 16-digit groups, a 24/24/16 paste): never kept.
        let words = line.split(whereSeparator: { $0.isWhitespace || $0.isPunctuation || $0.isSymbol })
        if !words.isEmpty, words.allSatisfy({ $0.allSatisfy(\.isHexDigit) }), words.joined().count >= 8 {
            return true
        }
        return SecretShape.appears(in: line)
    }
}
