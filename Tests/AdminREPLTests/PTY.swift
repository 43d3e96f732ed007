import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// The real binary on a real pseudo-terminal, started as the session leader with the pty as
/// its controlling terminal (`setsid -c`), so ^C typed into the master becomes SIGINT.
final class PTY {
    let master: Int32
    /// The slave side's device (`/dev/pts/N`).
    let slavePath: String
    let process: Process
    private(set) var transcript = ""

    init(arguments: [String], environment: [String: String], columns: UInt16 = 100) throws {
        var master: Int32 = 0
        var slave: Int32 = 0
        var size = winsize(ws_row: 40, ws_col: columns, ws_xpixel: 0, ws_ypixel: 0)
        guard openpty(&master, &slave, nil, nil, &size) == 0 else { throw POSIXError(.EIO) }
        self.master = master
        slavePath = ttyname(slave).map { String(cString: $0) } ?? ""
        let flags = fcntl(master, F_GETFL)
        _ = fcntl(master, F_SETFL, flags | O_NONBLOCK)
        process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/setsid")
        process.arguments = ["-w", "-c", CLI.binary.path] + arguments
        process.environment = environment
        let handle = FileHandle(fileDescriptor: slave, closeOnDealloc: true)
        process.standardInput = handle
        process.standardOutput = handle
        process.standardError = handle
        try process.run()
    }

    deinit {
        if process.isRunning { process.terminate() }
        close(master)
    }

    func send(_ text: String) {
        let bytes = Array(text.utf8)
        _ = bytes.withUnsafeBytes { write(master, $0.baseAddress, $0.count) }
    }

    /// Reads until `needle` appears after the previous match (as `expect(1)` does), or
    /// `timeout` passes; a match moves the cursor past it. Output that arrived together with
    /// an earlier match is still searched, so two prompts printed at once are both found.
    @discardableResult
    func expect(_ needle: String, timeout: TimeInterval = 10) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            drain()
            let utf8 = transcript.utf8
            let from = utf8.index(utf8.startIndex, offsetBy: min(cursor, utf8.count))
            if let range = transcript.range(of: needle, range: from..<transcript.endIndex) {
                cursor = utf8.distance(from: utf8.startIndex, to: range.upperBound)
                return true
            }
            guard Date() < deadline else { return false }
            usleep(20_000)
        }
    }

    /// Whether the terminal echoes what is typed (read from the pseudo-terminal's slave side,
    /// whose modes the program sets).
    var echoes: Bool {
        let slave = open(slavePath, O_RDWR | O_NOCTTY)
        guard slave >= 0 else { return true }
        defer { close(slave) }
        var modes = termios()
        guard tcgetattr(slave, &modes) == 0 else { return true }
        return modes.c_lflag & tcflag_t(ECHO) != 0
    }

    /// The UTF-8 offset in the transcript just past the last match.
    private var cursor = 0

    /// Waits for the process to leave; false if it did not within `timeout`.
    func waitForExit(timeout: TimeInterval = 10) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while process.isRunning, Date() < deadline {
            drain()
            usleep(20_000)
        }
        drain()
        return !process.isRunning
    }

    func drain() {
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = read(master, &buffer, buffer.count)
            if n <= 0 { break }
            transcript += String(decoding: buffer[0..<n], as: UTF8.self)
        }
    }
}
