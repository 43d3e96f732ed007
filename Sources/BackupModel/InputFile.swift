#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Reads a file named by an option (a key, a certificate, a token, a body) the one safe way:
/// opened without blocking and checked on the descriptor itself to be a regular file of a
/// bounded size, so a FIFO never hangs the console or the server, a device such as
/// `/dev/zero` is never read without end, and a huge (or sparse) file is refused before a
/// byte of it is held.
public enum InputFile {
    /// Who may have access to the file besides its owner.
    public enum Access: Sendable {
        /// Any mode.
        case any
        /// No group or other permission bits (`chmod 600` or 400): keys and tokens.
        case ownerOnly
    }

    /// The file's bytes.
    /// - Parameters:
    ///   - path: the file.
    ///   - what: what it is, as the error names it ("the CA file given to --ca-file").
    ///   - maxBytes: larger files are refused unread.
    ///   - access: ``Access/ownerOnly`` refuses a file others may read or write.
    ///   - code: the error code of a file that cannot be used (`invalid_key_file`, …).
    ///   - insecureCode: the code of a file others may read (`insecure_key_file`, …).
    ///   - kind: the kind of those errors (``ConsoleError/Kind/configuration`` for TLS files).
    /// - Throws: one line naming `what` and `path`, never the content.
    public static func read(
        _ path: String, what: String, maxBytes: Int = 1 << 20, access: Access = .any, code: String = "invalid_file",
        insecureCode: String = "insecure_file", kind: ConsoleError.Kind = .invalidInput
    ) throws(ConsoleError) -> [UInt8] {
        let fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY)
        guard fd >= 0 else {
            let reason = errno == ENOENT ? "does not exist" : "cannot be opened (\(String(cString: strerror(errno))))"
            throw ConsoleError(kind, code: code, "\(what) \(path) \(reason).")
        }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else {
            throw ConsoleError(kind, code: code, "\(what) \(path) cannot be examined.")
        }
        guard info.st_mode & S_IFMT == S_IFREG else {
            throw ConsoleError(kind, code: code, "\(what) \(path) is a \(describe(info.st_mode)), not a regular file.")
        }
        let mode = info.st_mode & 0o777
        if access == .ownerOnly, mode & 0o077 != 0 {
            throw ConsoleError(
                kind, code: insecureCode,
                "\(what) \(path) has mode \(String(mode, radix: 8)); it must be readable by its owner only (chmod 600)."
            )
        }
        guard info.st_size >= 0, info.st_size <= Int64(maxBytes) else {
            throw ConsoleError(
                kind, code: code, "\(what) \(path) has \(info.st_size) bytes; at most \(maxBytes) are read.")
        }
        let size = Int(info.st_size)
        var bytes = [UInt8](repeating: 0, count: size)
        var offset = 0
        let complete = bytes.withUnsafeMutableBytes { raw -> Bool in
            guard let base = raw.baseAddress else { return size == 0 }
            while offset < size {
                let n = Glibc.read(fd, base + offset, size - offset)
                if n < 0, errno == EINTR { continue }
                if n <= 0 { return false }
                offset += n
            }
            return true
        }
        guard complete else {
            throw ConsoleError(kind, code: code, "\(what) \(path) cannot be read to its end.")
        }
        return bytes
    }

    /// Refuses what ``read(_:what:maxBytes:access:code:insecureCode:kind:)`` would, without
    /// reading: for files another library opens by path (after this check).
    public static func check(
        _ path: String, what: String, maxBytes: Int = 1 << 20, access: Access = .any, code: String = "invalid_file",
        insecureCode: String = "insecure_file", kind: ConsoleError.Kind = .invalidInput
    ) throws(ConsoleError) {
        var bytes = try read(
            path, what: what, maxBytes: maxBytes, access: access, code: code, insecureCode: insecureCode, kind: kind)
        for i in bytes.indices { bytes[i] = 0 }
    }

    /// "FIFO", "directory", … for a mode that is not a regular file's.
    public static func describe(_ mode: mode_t) -> String {
        switch mode & S_IFMT {
        case S_IFLNK: "symbolic link"
        case S_IFDIR: "directory"
        case S_IFIFO: "FIFO"
        case S_IFSOCK: "socket"
        case S_IFCHR, S_IFBLK: "device"
        default: "special file"
        }
    }
}
