import BackupModel
import ConsoleStore
import Foundation

/// Signed checkpoints kept outside the store, where whoever can rewrite the database cannot
/// reach them (Certificate Transparency's witnesses, CloudTrail's digest files in another
/// account): the signer's high-water mark beside its key, and witness files.
///
/// Both hold checkpoints as the JSON lines `audit export` writes, keys sorted:
/// `{"headHash":"…","prevCheckpointHash":"…","seq":N,"signature":"…","time":"2026-11-23T00:11:12.345Z","type":"checkpoint"}`.
/// A high-water mark file is one such line (the newest checkpoint this signer signed); a
/// witness file is one line per checkpoint, appended as each is made. Either, or an
/// `audit export` file, is what `audit verify --anchor FILE` reads.
public enum AuditAnchor {
    /// Lines of a larger file are refused: a witness grows by one line per checkpoint.
    static let maxFileBytes = 256 * 1024 * 1024

    /// One checkpoint as a line (no newline).
    public static func line(_ checkpoint: AuditCheckpoint) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        // The line holds only hex, digits and an RFC 3339 time: encoding cannot fail.
        let data = (try? encoder.encode(AuditExportLine.checkpoint(checkpoint))) ?? Data()
        return String(decoding: data, as: UTF8.self)
    }

    /// The checkpoints in a witness, high-water mark or `audit export` file, in file order;
    /// entry lines are skipped.
    /// - Throws: `invalid_anchor` naming the file and the first line that is not one.
    public static func checkpoints(inFile path: String) throws(ConsoleError) -> [AuditCheckpoint] {
        var info = stat()
        guard stat(path, &info) == 0, info.st_mode & S_IFMT == S_IFREG, info.st_size <= maxFileBytes,
            let data = FileManager.default.contents(atPath: path)
        else {
            throw .invalid(
                "invalid_anchor", "Cannot read the audit anchor file \(path) (a regular file, at most 256 MiB).")
        }
        return try checkpoints(in: data, name: path)
    }

    static func checkpoints(in data: Data, name: String) throws(ConsoleError) -> [AuditCheckpoint] {
        var found: [AuditCheckpoint] = []
        let lines = data.split(separator: UInt8(ascii: "\n"))
        // A last line without its newline is an append a crash cut short (``append(_:to:)``
        // writes line and newline together): it is not part of the file yet.
        let unterminated = data.last != UInt8(ascii: "\n") ? lines.count - 1 : -1
        for (index, line) in lines.enumerated() {
            guard !line.allSatisfy({ $0 == 0x20 || $0 == 0x0d || $0 == 0x09 }) else { continue }
            guard let decoded = try? JSONDecoder().decode(AuditExportLine.self, from: Data(line)) else {
                if index == unterminated { break }
                throw .invalid(
                    "invalid_anchor",
                    "Line \(index + 1) of the audit anchor file \(name) is not an audit export line.")
            }
            if case .checkpoint(let checkpoint) = decoded { found.append(checkpoint) }
        }
        return found
    }

    /// Appends `text` and a newline to `path` (created with mode 0600, never truncated) and
    /// fsyncs it before returning.
    static func append(_ text: String, to path: String) throws(ConsoleError) {
        let fd = open(path, O_RDWR | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            throw .invalid("invalid_anchor", "Cannot open \(path) to append (\(String(cString: strerror(errno)))).")
        }
        defer { close(fd) }
        // A last line a crash cut short (this writer's own, half written) is cut off first.
        dropUnterminatedTail(fd)
        guard writeAll(fd, Array((text + "\n").utf8)), fsync(fd) == 0 else {
            throw .invalid("invalid_anchor", "Cannot append to \(path) (\(String(cString: strerror(errno)))).")
        }
    }

    /// Truncates the file after its last newline when it does not end with one (looking back at
    /// most 64 KiB: a checkpoint line is a few hundred bytes).
    private static func dropUnterminatedTail(_ fd: Int32) {
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_size > 0 else { return }
        let size = Int(info.st_size)
        let window = min(size, 64 * 1024)
        var tail = [UInt8](repeating: 0, count: window)
        guard pread(fd, &tail, window, off_t(size - window)) == window, tail.last != 0x0a else { return }
        if let newline = tail.lastIndex(of: 0x0a) {
            _ = ftruncate(fd, off_t(size - window + newline + 1))
        } else if window == size {
            _ = ftruncate(fd, 0)
        }
    }

    /// Replaces `path` with `text` and a newline: a 0600 temporary file beside it, fsynced,
    /// renamed over it, and the directory fsynced, so a crash leaves the old or the new line.
    static func replace(_ path: String, with text: String) throws(ConsoleError) {
        let temporary = path + ".tmp"
        unlink(temporary)
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            throw .invalid("invalid_anchor", "Cannot write \(temporary) (\(String(cString: strerror(errno)))).")
        }
        let written = writeAll(fd, Array((text + "\n").utf8)) && fsync(fd) == 0
        close(fd)
        guard written, rename(temporary, path) == 0 else {
            unlink(temporary)
            throw .invalid("invalid_anchor", "Cannot write \(path) (\(String(cString: strerror(errno)))).")
        }
        let directory = open(
            (path as NSString).deletingLastPathComponent.isEmpty ? "." : (path as NSString).deletingLastPathComponent,
            O_RDONLY | O_CLOEXEC)
        if directory >= 0 {
            fsync(directory)
            close(directory)
        }
    }

    private static func writeAll(_ fd: Int32, _ bytes: [UInt8]) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { raw in write(fd, raw.baseAddress.map { $0 + offset }, bytes.count - offset)
            }
            if n < 0, errno == EINTR { continue }
            guard n > 0 else { return false }
            offset += n
        }
        return true
    }
}
