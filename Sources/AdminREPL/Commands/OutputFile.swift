import BackupModel
import Foundation

/// A file a command will write its result to, opened before the command changes anything, so
/// that an unwritable path fails the command while nothing has been journaled or audited yet.
final class OutputFile {
    let path: String
    private var fd: Int32
    /// Whether opening created the file (then ``abandon()`` removes it again).
    private let created: Bool

    /// - Throws: `invalid_file` when the path cannot be opened for writing.
    init(opening path: String) throws(ConsoleError) {
        self.path = path
        var fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        var created = fd >= 0
        if fd < 0, errno == EEXIST {
            fd = open(path, O_WRONLY | O_CLOEXEC)
            created = false
        }
        guard fd >= 0 else {
            throw .invalid(
                "invalid_file", "Cannot open the file \(path) for writing (\(String(cString: strerror(errno)))).")
        }
        self.fd = fd
        self.created = created
    }

    deinit { if fd >= 0 { close(fd) } }

    /// Truncates the file and writes exactly `bytes`.
    func replaceContents(with bytes: [UInt8]) throws(ConsoleError) {
        guard ftruncate(fd, 0) == 0 else { throw failure() }
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { raw in
                write(fd, raw.baseAddress.map { $0 + offset }, bytes.count - offset)
            }
            if n < 0, errno == EINTR { continue }
            guard n > 0 else { throw failure() }
            offset += n
        }
        close(fd)
        fd = -1
    }

    /// The command failed before writing: close, and remove the file if opening created it.
    func abandon() {
        if fd >= 0 { close(fd) }
        fd = -1
        if created { unlink(path) }
    }

    private func failure() -> ConsoleError {
        .invalid("invalid_file", "Cannot write the file \(path) (\(String(cString: strerror(errno)))).")
    }
}
