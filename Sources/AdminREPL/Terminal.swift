import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Facts about the process's terminal and plain line I/O on the standard streams.
enum Terminal {
    static var stdinIsTerminal: Bool { isatty(STDIN_FILENO) == 1 }

    /// Set once at launch when commands are read from stdin (piped or `-f -`): then stdin
    /// cannot also carry a secret.
    nonisolated(unsafe) static var stdinCarriesCommands = false
    static var stdoutIsTerminal: Bool { isatty(STDOUT_FILENO) == 1 }

    /// Columns of the terminal on stdout, or `nil` when it is not one.
    static var width: Int? {
        guard stdoutIsTerminal else { return nil }
        var size = winsize()
        if ioctl(STDOUT_FILENO, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 0 { return Int(size.ws_col) }
        return 80
    }

    static func writeOut(_ text: String) {
        emit(text, fd: STDOUT_FILENO)
    }

    static func writeErr(_ text: String) {
        emit(text, fd: STDERR_FILENO)
    }

    /// While set, output lines wait in `held`, in order, until ``releaseHeld()`` writes them or
    /// ``discardHeld()`` drops them: a script's lookups and `show`s print only once their audit
    /// entries committed (``BatchRunner``).
    nonisolated(unsafe) static var holding = false
    nonisolated(unsafe) private static var held: [HeldLine] = []

    /// An output line waiting for its reads' audit entries, and the stream it is for.
    typealias HeldLine = (fd: Int32, bytes: [UInt8])

    private static func emit(_ text: String, fd: Int32) {
        var bytes = Array(text.utf8)
        bytes.append(0x0A)
        if holding {
            held.append((fd, bytes))
        } else {
            writeAll(bytes, fd: fd)
        }
    }

    /// Writes the waiting lines, in order, to the streams they were meant for: consecutive
    /// lines of one stream in one write (a script's run of lookups is one write, not hundreds).
    static func releaseHeld() { writeHeld(takeHeld()) }

    /// The waiting lines, no longer waiting: ``writeHeld(_:)`` writes them later, in order.
    static func takeHeld() -> [HeldLine] {
        defer { held = [] }
        return held
    }

    /// Writes lines taken from ``takeHeld()``, consecutive lines of one stream in one write.
    static func writeHeld(_ lines: [HeldLine]) {
        var run: [UInt8] = []
        var runFd: Int32 = -1
        for line in lines {
            if line.fd != runFd, !run.isEmpty {
                writeAll(run, fd: runFd)
                run.removeAll(keepingCapacity: true)
            }
            runFd = line.fd
            run += line.bytes
        }
        if !run.isEmpty { writeAll(run, fd: runFd) }
    }

    /// Drops the waiting lines (their reads could not be audited).
    static func discardHeld() { held = [] }

    private static func writeAll(_ bytes: [UInt8], fd: Int32) {
        bytes.withUnsafeBytes { raw in
            guard let base = raw.baseAddress else { return }
            var offset = 0
            while offset < raw.count {
                let n = write(fd, base + offset, raw.count - offset)
                if n < 0, errno == EINTR { continue }
                if n <= 0 { return }
                offset += n
            }
        }
    }

    /// Reads one line from a file descriptor without buffering past the newline, so a later
    /// reader (a hidden prompt, the next command) sees the rest.
    static func readLine(fd: Int32 = STDIN_FILENO) -> String? {
        var bytes: [UInt8] = []
        var byte: UInt8 = 0
        while true {
            let n = read(fd, &byte, 1)
            if n <= 0 { return bytes.isEmpty ? nil : String(decoding: bytes, as: UTF8.self) }
            if byte == 0x0a { return String(decoding: bytes, as: UTF8.self) }
            bytes.append(byte)
        }
    }

    /// Reads a secret with echo off when stdin is a terminal; the bytes are wiped by the caller.
    static func readSecret(prompt: String) -> [UInt8]? {
        let fd = STDIN_FILENO
        guard isatty(fd) == 1 else { return readAllOrLine(fd: fd) }
        var old = termios()
        tcgetattr(fd, &old)
        var noEcho = old
        noEcho.c_lflag &= ~tcflag_t(ECHO)
        // Echo goes off before the prompt shows, and what was typed before it is dropped (as
        // getpass does): whatever the user types once they see the prompt is neither echoed
        // nor lost. Setting the mode after the prompt lost a key typed quickly, and could
        // echo it.
        tcsetattr(fd, TCSAFLUSH, &noEcho)
        FileHandle.standardError.write(Data(prompt.utf8))
        defer {
            // TCSANOW keeps what the user typed after the secret (the next answer).
            tcsetattr(fd, TCSANOW, &old)
            FileHandle.standardError.write(Data("\n".utf8))
        }
        var bytes: [UInt8] = []
        var byte: UInt8 = 0
        while read(fd, &byte, 1) == 1, byte != 0x0a { bytes.append(byte) }
        return bytes
    }

    /// Secrets piped on stdin: everything up to EOF.
    static func readAllOrLine(fd: Int32) -> [UInt8]? {
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = read(fd, &buffer, buffer.count)
            if n <= 0 { break }
            bytes += buffer[0..<n]
        }
        for i in buffer.indices { buffer[i] = 0 }
        return bytes
    }
}
